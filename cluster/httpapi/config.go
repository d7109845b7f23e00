package httpapi

import (
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Config configures a Server.
type Config struct {
	// Addr is the listen address, host:port. Port 0 picks a free port; read
	// it back with Server.Addr.
	Addr string

	// Listener, when set, is used instead of listening on Addr. The caller
	// binds early when it must know the bound address before Start (serve
	// advertises it to the cluster before the API starts). Start takes
	// ownership: Close closes it.
	Listener net.Listener
	// Token is the bearer token every request but /health, /ready (and
	// /metrics unless MetricsAuth) must carry. Empty turns auth off, which
	// Validate allows only on a loopback address. Every node of a cluster
	// must use the same token: a node forwards writes with its own.
	Token string
	// MetricsAuth makes /metrics require the token too.
	MetricsAuth bool
	// MaxBodyBytes bounds a request body (a zone file for import, JSON
	// elsewhere). Larger bodies get 413.
	MaxBodyBytes int64
	// LeaderWait bounds how long a write waits for a leader to be known
	// before it fails with 503 no_quorum.
	LeaderWait time.Duration
	// ProposeTimeout bounds one proposal on the leader; past it the outcome
	// is unknown (504).
	ProposeTimeout time.Duration
	// ForwardTimeout bounds one forwarded request, reply included. It must
	// exceed ProposeTimeout so the leader answers before the forwarder
	// gives up.
	ForwardTimeout time.Duration
	// ShutdownTimeout bounds how long Close waits for requests in flight.
	ShutdownTimeout time.Duration
	// Logger receives the server's logs. Nil discards them.
	Logger *slog.Logger
	// Registry receives the server's metrics and is what /metrics serves.
	// Nil disables both.
	Registry *prometheus.Registry
}

// DefaultConfig returns a Config that listens on the loopback interface
// without a token.
func DefaultConfig() Config {
	return Config{
		Addr:            "127.0.0.1:8053",
		MaxBodyBytes:    256 << 20,
		LeaderWait:      3 * time.Second,
		ProposeTimeout:  5 * time.Second,
		ForwardTimeout:  10 * time.Second,
		ShutdownTimeout: 5 * time.Second,
	}
}

// Validate checks the config as a whole. It refuses an API on a
// non-loopback address without a token. Messages name the fields by their
// configuration keys (api.addr for Addr); ProposeTimeout is raft.apply_timeout.
func (c Config) Validate() error {
	host, _, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return fmt.Errorf("api.addr %q: %w", c.Addr, err)
	}
	if c.Token == "" && !IsLoopback(host) {
		return fmt.Errorf("api.addr %q is not a loopback address and api.token is empty: set a token, or listen on 127.0.0.1", c.Addr)
	}
	if c.MaxBodyBytes <= 0 {
		return fmt.Errorf("api.max_body_bytes %d: must be positive", c.MaxBodyBytes)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"api.leader_wait", c.LeaderWait},
		{"raft.apply_timeout", c.ProposeTimeout},
		{"api.forward_timeout", c.ForwardTimeout},
		{"api.shutdown_timeout", c.ShutdownTimeout},
	} {
		if d.v <= 0 {
			return fmt.Errorf("%s %s: must be positive", d.name, d.v)
		}
	}
	if c.ForwardTimeout <= c.ProposeTimeout {
		return fmt.Errorf("api.forward_timeout %s must exceed raft.apply_timeout %s, or a follower gives up before the leader answers", c.ForwardTimeout, c.ProposeTimeout)
	}
	return nil
}

// IsLoopback reports whether host (an IP literal or "localhost") names only
// the loopback interface. The empty host means every interface.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
