package resolver

import (
	"fmt"
	"strings"

	"github.com/kudurru/kudurru/resolver/cache"
	"github.com/kudurru/kudurru/resolver/upstream"
	"github.com/miekg/dns"
)

// ForwardZone sends the names in Zone to Upstreams. It is one element of
// the dns.forward list. A list of objects rather than a map keyed by zone:
// koanf splits keys on dots, and every zone name holds some.
type ForwardZone struct {
	// Zone is the zone whose names go to these upstreams; "." is the
	// default. The longest zone containing a query name wins.
	Zone string `koanf:"zone"`
	// Upstreams are addresses as resolver/upstream parses them:
	// udp://IP[:port], tcp://…, tls://name[:port][?ip=IP], https://….
	Upstreams []string `koanf:"upstreams"`
}

// RecursionConfig says who may have names outside the served zones
// resolved: the forwarding stage answers only these clients and refuses
// the rest. Authoritative answers are for everyone.
type RecursionConfig struct {
	// Allow lists client prefixes (CIDR) or single addresses.
	Allow []string `koanf:"allow"`
}

// defaultRecursionAllow is loopback and the private ranges: RFC 1918, RFC
// 4193 unique local addresses. Not 100.64.0.0/10 (RFC 6598 shared space):
// behind a carrier-grade NAT it holds other customers of the ISP.
var defaultRecursionAllow = []string{
	"127.0.0.0/8", "::1/128",
	"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16",
	"fc00::/7",
}

// defaultForwardConfig sets the forwarding part of DefaultConfig: no
// upstreams (the stage is absent), the packages' own defaults otherwise.
func defaultForwardConfig(c *Config) {
	c.Forward = nil
	c.Upstream = upstream.DefaultConfig()
	c.Upstream.Forward = nil
	c.Cache = cache.DefaultConfig()
	c.Recursion = RecursionConfig{Allow: append([]string(nil), defaultRecursionAllow...)}
}

// forwarding reports whether the forwarding stage is configured.
func (c Config) forwarding() bool { return len(c.Forward) > 0 }

// upstreamConfig returns the upstream package's configuration with the zones
// of Forward filled in.
func (c Config) upstreamConfig() upstream.Config {
	u := c.Upstream
	u.Forward = make(map[string][]string, len(c.Forward))
	for _, f := range c.Forward {
		u.Forward[f.Zone] = f.Upstreams
	}
	return u
}

// validateForwarding checks forward, upstream, cache and recursion. Each
// error names the key and the value.
func (c Config) validateForwarding() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	seen := map[string]int{}
	for i, f := range c.Forward {
		key := fmt.Sprintf("forward[%d]", i)
		if _, ok := dns.IsDomainName(f.Zone); !ok || f.Zone == "" {
			bad("%s.zone %q: not a domain name", key, f.Zone)
			continue
		}
		canon := dns.CanonicalName(f.Zone)
		if j, dup := seen[canon]; dup {
			bad("%s.zone %q: the same zone as forward[%d]", key, f.Zone, j)
		}
		seen[canon] = i
		if len(f.Upstreams) == 0 {
			bad("%s.upstreams: empty; zone %q needs at least one upstream", key, f.Zone)
		}
		for j, a := range f.Upstreams {
			if _, err := upstream.ParseAddr(a); err != nil {
				bad("%s.upstreams[%d]: %v", key, j, err)
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if err := c.upstreamConfig().Validate(); err != nil {
		bad("upstream: %v", strings.TrimPrefix(err.Error(), "upstream config: "))
	}
	if err := c.Cache.Validate(); err != nil {
		bad("cache: %v", strings.TrimPrefix(err.Error(), "cache config: "))
	}
	if _, err := parseACL(c.Recursion.Allow); err != nil {
		bad("recursion.%v", err)
	}
	return errs
}
