package resolver_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kudurru/kudurru/resolver"
	"github.com/kudurru/kudurru/resolver/resolvertest"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

func TestConfigValidate(t *testing.T) {
	if err := resolver.DefaultConfig().Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	for _, c := range []struct {
		name string
		edit func(*resolver.Config)
		want string
	}{
		{"bad addr", func(c *resolver.Config) { c.Addr = "localhost" }, `addr "localhost"`},
		{"host name", func(c *resolver.Config) { c.Addr = "dns.example:53" }, "host must be an IP address"},
		{"bad port", func(c *resolver.Config) { c.Addr = "127.0.0.1:99999" }, `bad port "99999"`},
		{"no sockets", func(c *resolver.Config) { c.UDPSockets = 0 }, "udp_sockets 0"},
		{"inflight", func(c *resolver.Config) { c.UDPMaxInflight = 0 }, "udp_max_inflight 0"},
		{"tcp conns", func(c *resolver.Config) { c.TCPMaxConns = -5 }, "tcp_max_conns -5"},
		{"tcp queries", func(c *resolver.Config) { c.TCPMaxQueries = 0 }, "tcp_max_queries 0"},
		{"idle", func(c *resolver.Config) { c.TCPIdleTimeout = 0 }, "tcp_idle_timeout 0s"},
		{"edns small", func(c *resolver.Config) { c.EDNSUDPSize = 100 }, "edns_udp_size 100"},
		{"edns large", func(c *resolver.Config) { c.EDNSUDPSize = 70000 }, "edns_udp_size 70000"},
		{"version", func(c *resolver.Config) { c.Version = strings.Repeat("v", 300) }, "version"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := resolver.DefaultConfig()
			c.edit(&cfg)
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Validate() = %v, want an error with %q", err, c.want)
			}
		})
	}
}

func TestLifecycle(t *testing.T) {
	zs := resolvertest.NewZones(testView(t))
	if _, err := resolver.New(resolver.DefaultConfig(), resolver.Deps{}); err == nil {
		t.Error("New without Zones succeeded")
	}
	cfg := resolver.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.UDPSockets = 3
	reg := prometheus.NewRegistry()
	s, err := resolver.New(cfg, resolver.Deps{Zones: zs, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := resolver.New(cfg, resolver.Deps{Zones: zs, Registry: reg}); err == nil {
		t.Error("a second server registered on the same registry")
	}
	if s.Addr() != "" {
		t.Errorf("Addr before Start = %q", s.Addr())
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err == nil {
		t.Error("second Start succeeded")
	}
	udp := s.UDPAddrs()
	if len(udp) != 3 || udp[0].String() != s.Addr() || udp[2].String() != s.Addr() {
		t.Errorf("UDP addrs %v, TCP %s: want 3 sockets on one address", udp, s.Addr())
	}
	// Queries from many source ports are answered whichever socket the
	// kernel hands them to.
	for range 20 {
		r := resolvertest.Exchange(t, "udp", s.Addr(), query("www.example.test.", dns.TypeA))
		if len(r.Answer) != 1 {
			t.Fatalf("reply %v", r)
		}
	}
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := s.Start(); !errors.Is(err, resolver.ErrClosed) {
		t.Errorf("Start after Close = %v, want ErrClosed", err)
	}
}

func TestCloseBeforeStart(t *testing.T) {
	s, err := resolver.New(resolver.DefaultConfig(), resolver.Deps{Zones: resolvertest.NewZones(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); !errors.Is(err, resolver.ErrClosed) {
		t.Errorf("Start after Close = %v", err)
	}
}

func TestNilViewRefuses(t *testing.T) {
	srv := resolvertest.Start(t, resolvertest.NewZones(nil), resolvertest.Options{})
	c := resolvertest.Case{Qname: "www.example.test.", Qtype: dns.TypeA, Rcode: dns.RcodeRefused, NoAA: true}
	c.Check(t, resolvertest.Exchange(t, "udp", srv.Addr(), c.Msg()))
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	srv := resolvertest.Start(t, resolvertest.NewZones(testView(t)), resolvertest.Options{Registry: reg})
	resolvertest.Exchange(t, "udp", srv.Addr(), query("www.example.test.", dns.TypeA))
	resolvertest.Exchange(t, "tcp", srv.Addr(), query("nope.example.test.", dns.TypeAAAA))
	resolvertest.Exchange(t, "udp", srv.Addr(), query("www.outside.invalid.", 65280))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	want := map[string]float64{
		`kudurru_dns_requests_total{family="1",proto="udp",type="A"}`:     1,
		`kudurru_dns_requests_total{family="1",proto="tcp",type="AAAA"}`:  1,
		`kudurru_dns_requests_total{family="1",proto="udp",type="other"}`: 1,
		`kudurru_dns_responses_total{rcode="NOERROR"}`:                    1,
		`kudurru_dns_responses_total{rcode="NXDOMAIN"}`:                   1,
		`kudurru_dns_responses_total{rcode="REFUSED"}`:                    1,
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.Metric {
			if m.Counter == nil {
				continue
			}
			var labels []string
			for _, l := range m.Label {
				labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
			}
			got[mf.GetName()+"{"+strings.Join(labels, ",")+"}"] = m.Counter.GetValue()
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}
