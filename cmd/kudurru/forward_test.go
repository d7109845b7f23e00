package main

import (
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kudurru/kudurru/resolver"
	"github.com/miekg/dns"
)

// TestConfigForwarding reads the forwarding keys from a file and the
// environment: dns.forward as a list of objects (zone names hold dots, so
// they are values, not keys), nested keys with "__" in the environment.
func TestConfigForwarding(t *testing.T) {
	const file = `dns:
  forward:
    - zone: corp.example.
      upstreams: [udp://10.0.0.53, "tls://dns.corp.example?ip=10.0.0.54"]
    - zone: .
      upstreams: [udp://192.0.2.53]
  upstream:
    policy: lowest_latency
  cache:
    max_ttl: 1h
`
	cfg, err := load(t, file, []string{
		"KUDURRU_DNS_CACHE__MAX_BYTES=1048576",
		"KUDURRU_DNS_UPSTREAM__ATTEMPT_TIMEOUT=500ms",
		"KUDURRU_DNS_RECURSION__ALLOW=10.0.0.0/8,192.0.2.1",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []resolver.ForwardZone{
		{Zone: "corp.example.", Upstreams: []string{"udp://10.0.0.53", "tls://dns.corp.example?ip=10.0.0.54"}},
		{Zone: ".", Upstreams: []string{"udp://192.0.2.53"}},
	}
	d := cfg.DNS
	switch {
	case !slices.EqualFunc(d.Forward, want, func(a, b resolver.ForwardZone) bool {
		return a.Zone == b.Zone && slices.Equal(a.Upstreams, b.Upstreams)
	}):
		t.Errorf("dns.forward = %+v", d.Forward)
	case d.Upstream.Policy != "lowest_latency" || d.Upstream.AttemptTimeout.String() != "500ms":
		t.Errorf("dns.upstream = %+v", d.Upstream)
	case d.Cache.MaxTTL.String() != "1h0m0s" || d.Cache.MaxBytes != 1<<20 || d.Cache.PersistInterval.String() != "5m0s":
		t.Errorf("dns.cache = %+v", d.Cache)
	case !slices.Equal(d.Recursion.Allow, []string{"10.0.0.0/8", "192.0.2.1"}):
		t.Errorf("dns.recursion.allow = %q", d.Recursion.Allow)
	}
	if err := d.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}

	for _, bad := range []struct {
		name, yaml string
		env        []string
		want       string
	}{
		{"zone as a map key", "dns:\n  forward:\n    corp.example.: [udp://10.0.0.53]\n", nil, "dns.forward"},
		{"typo in an element", "dns:\n  forward:\n    - zone: .\n      upstream: [udp://10.0.0.53]\n", nil, "upstream"},
		{"nested key with one underscore", "", []string{"KUDURRU_DNS_CACHE_MAX_BYTES=1"}, "KUDURRU_DNS_CACHE_MAX_BYTES"},
	} {
		t.Run(bad.name, func(t *testing.T) {
			if _, err := load(t, bad.yaml, bad.env); err == nil || !strings.Contains(err.Error(), bad.want) {
				t.Errorf("load = %v, want an error naming %q", err, bad.want)
			}
		})
	}
}

// TestServeCachePersists runs the real wiring twice on one data dir: the
// cache dump goes into the node's local.db at shutdown and comes back at the
// next start, which answers a cached name without asking the upstream.
func TestServeCachePersists(t *testing.T) {
	var queries atomic.Int64
	up := &dns.Server{Addr: "127.0.0.1:0", Net: "udp", Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		queries.Add(1)
		m := new(dns.Msg).SetReply(r)
		m.RecursionAvailable = true
		a, _ := dns.NewRR(r.Question[0].Name + " 300 IN A 192.0.2.99")
		m.Answer = []dns.RR{a}
		w.WriteMsg(m)
	})}
	started := make(chan struct{})
	up.NotifyStartedFunc = func() { close(started) }
	served := make(chan error, 1)
	go func() { served <- up.ListenAndServe() }()
	<-started
	defer func() { up.Shutdown(); <-served }()

	dir := t.TempDir()
	cfg := e2eConfig(t, "f1", dir)
	cfg.Raft.Bootstrap = true
	cfg.DNS.Forward = []resolver.ForwardZone{{Zone: ".", Upstreams: []string{"udp://" + up.PacketConn.LocalAddr().String()}}}
	cfg.DNS.Upstream.HealthCheckInterval = 0

	n := startE2ENode(t, cfg)
	waitState(t, n)
	if r := queryDNS(t, n.s.DNSAddr, "www.upstream.test.", dns.TypeA); len(r.Answer) != 1 {
		t.Fatalf("forwarded: %v", r)
	}
	n.shutdown(t)
	if queries.Load() != 1 {
		t.Fatalf("upstream got %d queries, want 1", queries.Load())
	}

	n = startE2ENode(t, cfg)
	waitState(t, n) // from local.db at once: it was written at shutdown
	r := queryDNS(t, n.s.DNSAddr, "www.upstream.test.", dns.TypeA)
	if len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "192.0.2.99" {
		t.Fatalf("after restart: %v", r)
	}
	if queries.Load() != 1 {
		t.Errorf("upstream got %d queries, want 1: the restarted node must answer from the restored cache", queries.Load())
	}
	n.shutdown(t)
}

// waitState waits until the node serves a View with state (applied index
// above 0): before that it forwards nothing. The health name tells.
func waitState(t *testing.T, n *e2eNode) {
	t.Helper()
	waitFor(t, "a View with state", 10*time.Second, func() bool {
		r := queryDNS(t, n.s.DNSAddr, resolver.HealthName, dns.TypeTXT)
		if len(r.Answer) != 1 {
			return false
		}
		for _, s := range r.Answer[0].(*dns.TXT).Txt {
			if strings.HasPrefix(s, "view=") {
				return s != "view=0"
			}
		}
		return false
	})
}
