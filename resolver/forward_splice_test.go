package resolver_test

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kudurru/kudurru/resolver"
	"github.com/kudurru/kudurru/resolver/resolvertest"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// startHandlerUpstream serves h on a kernel-chosen 127.0.0.1 UDP port
// until the test ends and returns its dns.forward address.
func startHandlerUpstream(t *testing.T, h dns.HandlerFunc) string {
	t.Helper()
	started := make(chan struct{})
	srv := &dns.Server{Addr: "127.0.0.1:0", Net: "udp", Handler: h, NotifyStartedFunc: func() { close(started) }}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	select {
	case <-started:
	case err := <-errc:
		t.Fatalf("upstream: %v", err)
	}
	t.Cleanup(func() { srv.Shutdown(); <-errc })
	return "udp://" + srv.PacketConn.LocalAddr().String()
}

// chainForwarder starts an upstream that answers each name in answers with
// those records as they are (zone-file syntax; CNAME chains included) and
// everything else NXDOMAIN, and a forwarder in front of it serving zs. It
// returns the forwarder, its metrics and the upstream's query count.
func chainForwarder(t *testing.T, zs resolver.Zones, answers map[string][]string) (*resolver.Server, *prometheus.Registry, *atomic.Int64) {
	t.Helper()
	queries := new(atomic.Int64)
	url := startHandlerUpstream(t, func(w dns.ResponseWriter, r *dns.Msg) {
		queries.Add(1)
		m := new(dns.Msg).SetReply(r)
		m.RecursionAvailable = true
		rrs, ok := answers[strings.ToLower(r.Question[0].Name)]
		if !ok {
			m.Rcode = dns.RcodeNameError
		}
		for _, rr := range rrs {
			m.Answer = append(m.Answer, resolvertest.RR(t, rr))
		}
		w.WriteMsg(m)
	})
	reg := prometheus.NewRegistry()
	srv := resolvertest.Start(t, zs, resolvertest.Options{Registry: reg, Config: func(c *resolver.Config) {
		c.Forward = []resolver.ForwardZone{{Zone: ".", Upstreams: []string{url}}}
		c.Upstream.HealthCheckInterval = 0
	}})
	return srv, reg, queries
}

const spliceZone = `
$TTL 3600
@     IN SOA ns1 hostmaster 1 7200 3600 1209600 300
@     IN NS  ns1
ns1   IN A   192.0.2.53
www   IN A   192.0.2.80
`

// TestUpstreamChainIntoZoneIsSpliced: an upstream answer whose CNAME chain
// enters a served zone carries the upstream's copy of our name; kudurru
// answers that part from its zones, never caches the reply, and a zone
// change shows at once.
func TestUpstreamChainIntoZoneIsSpliced(t *testing.T) {
	zs := resolvertest.NewZones(readyView(resolvertest.ParseZone(t, "example.test.", spliceZone)))
	srv, reg, queries := chainForwarder(t, zs, map[string][]string{
		"alias.ext.test.": {"alias.ext.test. 3600 IN CNAME www.example.test.", "www.example.test. 3600 IN A 203.0.113.66"},
		"gone.ext.test.":  {"gone.ext.test. 3600 IN CNAME nothing.example.test.", "nothing.example.test. 3600 IN A 203.0.113.67"},
	})

	want := resolvertest.Case{NoAA: true, Answer: []string{
		"alias.ext.test. 3600 IN CNAME www.example.test.",
		"www.example.test. 3600 IN A 192.0.2.80",
	}}
	for range 2 {
		want.Check(t, ask(t, srv.Addr(), "alias.ext.test.", dns.TypeA, 1232))
	}
	if n := queries.Load(); n != 2 {
		t.Errorf("upstream got %d queries, want 2: a spliced reply must not be cached", n)
	}
	zs.Set(readyView(resolvertest.ParseZone(t, "example.test.", strings.Replace(spliceZone, "192.0.2.80", "192.0.2.81", 1))))
	resolvertest.Case{NoAA: true, Answer: []string{
		"alias.ext.test. 3600 IN CNAME www.example.test.",
		"www.example.test. 3600 IN A 192.0.2.81",
	}}.Check(t, ask(t, srv.Addr(), "alias.ext.test.", dns.TypeA, 1232))

	// A target our zone does not have: NXDOMAIN with our SOA, whatever
	// the upstream claimed.
	resolvertest.Case{Rcode: dns.RcodeNameError, NoAA: true,
		Answer: []string{"gone.ext.test. 3600 IN CNAME nothing.example.test."},
		Ns:     []string{"example.test. 300 IN SOA ns1.example.test. hostmaster.example.test. 1 7200 3600 1209600 300"},
	}.Check(t, ask(t, srv.Addr(), "gone.ext.test.", dns.TypeA, 1232))
	if got := counterValue(t, reg, "kudurru_dns_zone_splices_total", nil); got != 4 {
		t.Errorf("kudurru_dns_zone_splices_total = %v, want 4", got)
	}
}

// TestOverloadNotCachedAsServfail: when the only upstream is at its
// in-flight cap no upstream is asked; the client gets SERVFAIL, and the
// name is not remembered as failing once the load is gone.
func TestOverloadNotCachedAsServfail(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	var forB atomic.Int64
	url := startHandlerUpstream(t, func(w dns.ResponseWriter, r *dns.Msg) {
		name := strings.ToLower(r.Question[0].Name)
		switch name {
		case "slow.test.":
			close(arrived)
			<-release
		case "b.test.":
			forB.Add(1)
		}
		m := new(dns.Msg).SetReply(r)
		m.RecursionAvailable = true
		m.Answer = []dns.RR{resolvertest.RR(t, name+" 300 IN A 192.0.2.1")}
		w.WriteMsg(m)
	})
	srv := resolvertest.Start(t, resolvertest.NewZones(readyView()), resolvertest.Options{Config: func(c *resolver.Config) {
		c.Forward = []resolver.ForwardZone{{Zone: ".", Upstreams: []string{url}}}
		c.Upstream.HealthCheckInterval = 0
		c.Upstream.MaxInflight = 1
	}})
	done := make(chan struct{})
	go func() {
		defer close(done)
		ask(t, srv.Addr(), "slow.test.", dns.TypeA, 1232)
	}()
	<-arrived // the one in-flight slot is taken
	if r := ask(t, srv.Addr(), "b.test.", dns.TypeA, 1232); r.Rcode != dns.RcodeServerFailure {
		t.Fatalf("during the overload: %s, want SERVFAIL", dns.RcodeToString[r.Rcode])
	}
	close(release)
	<-done
	if r := ask(t, srv.Addr(), "b.test.", dns.TypeA, 1232); firstA(r) != "192.0.2.1" {
		t.Fatalf("after the overload: %v", r)
	}
	if n := forB.Load(); n != 1 {
		t.Errorf("upstream got %d queries for b.test., want 1", n)
	}
}

// TestServfailCounted: a SERVFAIL sent because every upstream failed is
// counted as servfail, whether just learned or remembered.
func TestServfailCounted(t *testing.T) {
	up := startUpstream(t)
	up.mode.Store(upServfail)
	reg := prometheus.NewRegistry()
	srv := startForwarder(t, fwdOptions{reg: reg}, up)
	for range 2 {
		if r := ask(t, srv.Addr(), "dead.upstream.test.", dns.TypeA, 1232); r.Rcode != dns.RcodeServerFailure {
			t.Fatalf("rcode %s, want SERVFAIL", dns.RcodeToString[r.Rcode])
		}
	}
	for res, want := range map[string]float64{"servfail": 2, "stale": 0, "cache": 0} {
		if got := counterValue(t, reg, "kudurru_dns_forward_replies_total", map[string]string{"result": res}); got != want {
			t.Errorf("forward_replies_total{result=%q} = %v, want %v", res, got, want)
		}
	}
}

// TestCachedChainIntoNewZone: an answer cached while its CNAME target was
// outside every zone is spliced once a zone for the target is created:
// the new zone wins over the cached copy at once, with no upstream query.
func TestCachedChainIntoNewZone(t *testing.T) {
	zs := resolvertest.NewZones(readyView())
	srv, reg, queries := chainForwarder(t, zs, map[string][]string{
		"alias.ext.test.": {"alias.ext.test. 3600 IN CNAME www.new.test.", "www.new.test. 3600 IN A 203.0.113.66"},
	})
	upstreamCopy := resolvertest.Case{NoAA: true, Answer: []string{
		"alias.ext.test. 3600 IN CNAME www.new.test.",
		"www.new.test. 3600 IN A 203.0.113.66",
	}}
	for range 2 {
		upstreamCopy.Check(t, ask(t, srv.Addr(), "alias.ext.test.", dns.TypeA, 1232))
	}
	zs.Set(readyView(resolvertest.ParseZone(t, "new.test.", newTestZone)))
	r := ask(t, srv.Addr(), "alias.ext.test.", dns.TypeA, 1232)
	if len(r.Answer) != 2 || firstA(r) != "198.51.100.1" {
		t.Fatalf("after the zone was created: %v", r.Answer)
	}
	if n := queries.Load(); n != 1 {
		t.Errorf("upstream got %d queries, want 1 (the rest from the cache)", n)
	}
	if got := counterValue(t, reg, "kudurru_dns_zone_splices_total", nil); got != 1 {
		t.Errorf("kudurru_dns_zone_splices_total = %v, want 1", got)
	}
}
