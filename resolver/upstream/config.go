package upstream

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// Policy orders a zone's upstreams for each query.
type Policy string

// Policies.
const (
	// Random tries healthy upstreams in a random order.
	Random Policy = "random"
	// RoundRobin starts each query at the next upstream in turn.
	RoundRobin Policy = "round_robin"
	// Sequential always tries upstreams in configured order.
	Sequential Policy = "sequential"
	// LowestLatency tries upstreams by their smoothed (EWMA) response time,
	// fastest first; an upstream not yet measured comes first.
	LowestLatency Policy = "lowest_latency"
)

// Config is the forwarder's configuration. Start from DefaultConfig. The
// koanf tags are the configuration keys; see docs/FORWARDING.md.
type Config struct {
	// Forward maps a zone to the upstream addresses (see ParseAddr) that
	// serve names in it; the longest matching zone wins and "." is the
	// default. An empty map forwards nothing (Exchange returns
	// ErrNoUpstream). It is not a configuration key of its own: zone names
	// hold dots, which koanf reads as key separators, so kudurru's
	// configuration spells it as the list dns.forward and fills this map.
	Forward map[string][]string `koanf:"-"`
	// Policy orders the upstreams of a zone.
	Policy Policy `koanf:"policy"`

	// QueryTimeout bounds one Exchange when its context has no deadline.
	QueryTimeout time.Duration `koanf:"query_timeout"`
	// AttemptTimeout bounds one attempt at one upstream.
	AttemptTimeout time.Duration `koanf:"attempt_timeout"`
	// MaxAttempts is how many upstreams one query may try.
	MaxAttempts int `koanf:"max_attempts"`
	// MaxInflight caps concurrent queries per upstream; beyond it the next
	// upstream is tried and, if none has room, the query fails at once.
	MaxInflight int `koanf:"max_inflight"`

	// HealthCheckInterval is the probe period of a healthy upstream; 0
	// disables health checks (no upstream is ever marked down).
	HealthCheckInterval time.Duration `koanf:"health_check_interval"`
	// HealthCheckMaxInterval caps the exponential backoff between probes of
	// a failing upstream.
	HealthCheckMaxInterval time.Duration `koanf:"health_check_max_interval"`
	// HealthCheckTimeout bounds one probe.
	HealthCheckTimeout time.Duration `koanf:"health_check_timeout"`
	// HealthCheckName and HealthCheckType make the probe query.
	HealthCheckName string `koanf:"health_check_name"`
	HealthCheckType string `koanf:"health_check_type"`
	// MaxFails is how many consecutive failures, of probes or queries, mark
	// an upstream down.
	MaxFails int `koanf:"max_fails"`

	// CAFile, if set, is a PEM bundle that replaces the system roots for
	// verifying tls and https upstreams.
	CAFile string `koanf:"ca_file"`
	// DoHMethod is "POST" or "GET" (RFC 8484 §4.1).
	DoHMethod string `koanf:"doh_method"`
	// IdleTimeout closes TCP, TLS and HTTPS connections unused for this long.
	IdleTimeout time.Duration `koanf:"idle_timeout"`
}

// DefaultConfig returns the defaults documented in docs/FORWARDING.md.
func DefaultConfig() Config {
	return Config{
		Forward:                map[string][]string{},
		Policy:                 Random,
		QueryTimeout:           5 * time.Second,
		AttemptTimeout:         2 * time.Second,
		MaxAttempts:            3,
		MaxInflight:            1000,
		HealthCheckInterval:    2 * time.Second,
		HealthCheckMaxInterval: 30 * time.Second,
		HealthCheckTimeout:     time.Second,
		HealthCheckName:        ".",
		HealthCheckType:        "NS",
		MaxFails:               2,
		DoHMethod:              "POST",
		IdleTimeout:            10 * time.Second,
	}
}

// Validate checks every field and the relations between them; the error
// names the field and its value.
func (c Config) Validate() error {
	zones := make([]string, 0, len(c.Forward))
	for z := range c.Forward {
		zones = append(zones, z)
	}
	sort.Strings(zones)
	seen := make(map[string]string, len(zones))
	for _, z := range zones {
		canon, err := canonicalZone(z)
		if err != nil {
			return fmt.Errorf("upstream config: forward zone %q: %w", z, err)
		}
		if prev, dup := seen[canon]; dup {
			return fmt.Errorf("upstream config: forward zones %q and %q are the same zone", prev, z)
		}
		seen[canon] = z
		addrs := c.Forward[z]
		if len(addrs) == 0 {
			return fmt.Errorf("upstream config: forward zone %q has no upstreams", z)
		}
		for _, a := range addrs {
			if _, err := ParseAddr(a); err != nil {
				return fmt.Errorf("upstream config: forward zone %q: %w", z, err)
			}
		}
	}
	switch c.Policy {
	case Random, RoundRobin, Sequential, LowestLatency:
	default:
		return fmt.Errorf("upstream config: policy %q is not random, round_robin, sequential or lowest_latency", c.Policy)
	}
	switch {
	case c.QueryTimeout <= 0:
		return fmt.Errorf("upstream config: query_timeout %s must be positive", c.QueryTimeout)
	case c.AttemptTimeout <= 0 || c.AttemptTimeout > c.QueryTimeout:
		return fmt.Errorf("upstream config: attempt_timeout %s must be positive and at most query_timeout %s", c.AttemptTimeout, c.QueryTimeout)
	case c.MaxAttempts < 1 || c.MaxAttempts > 16:
		return fmt.Errorf("upstream config: max_attempts %d must be between 1 and 16", c.MaxAttempts)
	case c.MaxInflight < 1:
		return fmt.Errorf("upstream config: max_inflight %d must be at least 1", c.MaxInflight)
	case c.HealthCheckInterval < 0:
		return fmt.Errorf("upstream config: health_check_interval %s must not be negative", c.HealthCheckInterval)
	case c.IdleTimeout <= 0:
		return fmt.Errorf("upstream config: idle_timeout %s must be positive", c.IdleTimeout)
	}
	if c.HealthCheckInterval > 0 {
		switch {
		case c.HealthCheckMaxInterval < c.HealthCheckInterval:
			return fmt.Errorf("upstream config: health_check_max_interval %s must be at least health_check_interval %s",
				c.HealthCheckMaxInterval, c.HealthCheckInterval)
		case c.HealthCheckTimeout <= 0:
			return fmt.Errorf("upstream config: health_check_timeout %s must be positive", c.HealthCheckTimeout)
		case c.MaxFails < 1:
			return fmt.Errorf("upstream config: max_fails %d must be at least 1", c.MaxFails)
		}
		if _, ok := dns.IsDomainName(c.HealthCheckName); !ok || c.HealthCheckName == "" {
			return fmt.Errorf("upstream config: health_check_name %q is not a domain name", c.HealthCheckName)
		}
		if _, ok := dns.StringToType[strings.ToUpper(c.HealthCheckType)]; !ok {
			return fmt.Errorf("upstream config: health_check_type %q is not a DNS type", c.HealthCheckType)
		}
	}
	switch strings.ToUpper(c.DoHMethod) {
	case "POST", "GET":
	default:
		return fmt.Errorf("upstream config: doh_method %q is not POST or GET", c.DoHMethod)
	}
	if c.CAFile != "" {
		// Read it now, so that a bad file stops the start with the key
		// named rather than failing New.
		if _, err := baseTLS(c.CAFile); err != nil {
			return fmt.Errorf("upstream config: %w", err)
		}
	}
	return nil
}

// canonicalZone returns a zone name lower-cased and fully qualified.
func canonicalZone(z string) (string, error) {
	if z == "" {
		return "", fmt.Errorf("empty zone name")
	}
	if _, ok := dns.IsDomainName(z); !ok {
		return "", fmt.Errorf("not a domain name")
	}
	return dns.CanonicalName(z), nil
}
