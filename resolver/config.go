package resolver

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"time"

	"github.com/kudurru/kudurru/resolver/cache"
	"github.com/kudurru/kudurru/resolver/upstream"
)

// Config configures a Server. The koanf tags are the configuration keys; see
// docs/DNS.md.
type Config struct {
	// Addr is the host:port to serve UDP and TCP on. Port 0 asks the
	// kernel for a free port (tests); Server.UDPAddrs and TCPAddr tell it.
	Addr string `koanf:"addr"`
	// UDPSockets is the number of UDP sockets bound to Addr with
	// SO_REUSEPORT; the kernel spreads clients over them by flow hash.
	UDPSockets int `koanf:"udp_sockets"`
	// UDPMaxInflight bounds the queries of one UDP socket being answered
	// at once; past it the socket is not read and the kernel queues, then
	// drops, packets.
	UDPMaxInflight int `koanf:"udp_max_inflight"`
	// TCPMaxConns bounds open TCP connections; past it new connections
	// wait in the listen backlog.
	TCPMaxConns int `koanf:"tcp_max_conns"`
	// TCPMaxQueries is the number of queries served on one TCP connection
	// before it is closed; -1 means no limit.
	TCPMaxQueries int `koanf:"tcp_max_queries"`
	// TCPIdleTimeout closes a TCP connection idle for that long (RFC 7766
	// §6.2.3).
	TCPIdleTimeout time.Duration `koanf:"tcp_idle_timeout"`
	// ReadTimeout bounds reading the first query of a TCP connection;
	// WriteTimeout bounds writing a reply.
	ReadTimeout  time.Duration `koanf:"read_timeout"`
	WriteTimeout time.Duration `koanf:"write_timeout"`
	// EDNSUDPSize is the UDP payload size this server advertises and the
	// largest UDP reply it sends (RFC 6891; 1232 avoids IP fragmentation,
	// DNS Flag Day 2020).
	EDNSUDPSize int `koanf:"edns_udp_size"`
	// Chaos answers the CHAOS-class names version.bind, version.server,
	// id.server and hostname.bind; when false they get REFUSED.
	Chaos bool `koanf:"chaos"`
	// Version is the TXT of version.bind and version.server.
	Version string `koanf:"version"`
	// ServerID is the TXT of id.server and hostname.bind, and the node
	// named by the health name when no Status is given. Empty means the
	// node ID from Status, else the host name.
	ServerID string `koanf:"server_id"`
	// ShutdownTimeout bounds how long Close waits for queries in flight.
	ShutdownTimeout time.Duration `koanf:"shutdown_timeout"`

	// Forwarding of names outside the served zones (forward_config.go,
	// docs/FORWARDING.md). With no Forward entries the forwarding stage is
	// absent and such names get REFUSED.
	Forward   []ForwardZone   `koanf:"forward"`
	Upstream  upstream.Config `koanf:"upstream"` // its Forward map is filled from Forward
	Cache     cache.Config    `koanf:"cache"`
	Recursion RecursionConfig `koanf:"recursion"`
}

// HealthName is the name answered locally with a TXT record describing the
// node (class IN, any type; TXT carries the data).
const HealthName = "health.kudurru.internal."

// DefaultConfig returns the defaults documented in docs/DNS.md.
func DefaultConfig() Config {
	c := Config{
		Addr:            "127.0.0.1:53",
		UDPSockets:      defaultUDPSockets(),
		UDPMaxInflight:  512,
		TCPMaxConns:     256,
		TCPMaxQueries:   128,
		TCPIdleTimeout:  10 * time.Second,
		ReadTimeout:     2 * time.Second,
		WriteTimeout:    2 * time.Second,
		EDNSUDPSize:     1232,
		Chaos:           false,
		Version:         "kudurru",
		ShutdownTimeout: 5 * time.Second,
	}
	defaultForwardConfig(&c)
	return c
}

// defaultUDPSockets is one socket per CPU the process may use, where
// SO_REUSEPORT exists, and one elsewhere. See DESIGN.md.
func defaultUDPSockets() int {
	if !reusePortSupported {
		return 1
	}
	return runtime.GOMAXPROCS(0)
}

// Validate checks every field and the fields against each other.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		bad("addr %q: %v", c.Addr, err)
	} else {
		if host != "" && net.ParseIP(host) == nil {
			bad("addr %q: host must be an IP address", c.Addr)
		}
		if p, err := strconv.ParseUint(port, 10, 16); err != nil {
			bad("addr %q: bad port %q", c.Addr, port)
		} else if p == 0 && c.UDPSockets > 1 && host == "" {
			bad("addr %q: port 0 with udp_sockets %d needs an explicit host", c.Addr, c.UDPSockets)
		}
	}
	const maxSockets = 1024
	switch {
	case c.UDPSockets < 1 || c.UDPSockets > maxSockets:
		bad("udp_sockets %d: must be between 1 and %d", c.UDPSockets, maxSockets)
	case c.UDPSockets > 1 && !reusePortSupported:
		bad("udp_sockets %d: SO_REUSEPORT is not supported on %s, use 1", c.UDPSockets, runtime.GOOS)
	}
	if c.UDPMaxInflight < 1 || c.UDPMaxInflight > 1<<20 {
		bad("udp_max_inflight %d: must be between 1 and %d", c.UDPMaxInflight, 1<<20)
	}
	if c.TCPMaxConns < 1 || c.TCPMaxConns > 1<<20 {
		bad("tcp_max_conns %d: must be between 1 and %d", c.TCPMaxConns, 1<<20)
	}
	if c.TCPMaxQueries == 0 || c.TCPMaxQueries < -1 {
		bad("tcp_max_queries %d: must be positive, or -1 for no limit", c.TCPMaxQueries)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"tcp_idle_timeout", c.TCPIdleTimeout}, {"read_timeout", c.ReadTimeout}, {"write_timeout", c.WriteTimeout}, {"shutdown_timeout", c.ShutdownTimeout}} {
		if d.v <= 0 {
			bad("%s %s: must be positive", d.name, d.v)
		}
	}
	if c.EDNSUDPSize < 512 || c.EDNSUDPSize > 65535 {
		bad("edns_udp_size %d: must be between 512 and 65535", c.EDNSUDPSize)
	}
	if len(c.Version) > 255 {
		bad("version %q: longer than one TXT string (255 bytes)", c.Version)
	}
	if len(c.ServerID) > 255 {
		bad("server_id %q: longer than one TXT string (255 bytes)", c.ServerID)
	}
	errs = append(errs, c.validateForwarding()...)
	return errors.Join(errs...)
}
