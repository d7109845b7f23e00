package resolver_test

import (
	"strings"
	"testing"
	"time"

	"github.com/kudurru/kudurru/fsm/zone"
	"github.com/kudurru/kudurru/resolver"
	"github.com/kudurru/kudurru/resolver/resolvertest"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

const upSOA = "upstream.test. 300 IN SOA ns.upstream.test. host.upstream.test. 1 3600 600 86400 60"

func TestForwardAndCache(t *testing.T) {
	up := startUpstream(t, "www.upstream.test. 300 IN A 192.0.2.1")
	reg := prometheus.NewRegistry()
	srv := startForwarder(t, fwdOptions{reg: reg}, up)

	r := ask(t, srv.Addr(), "www.upstream.test.", dns.TypeA, 1232)
	if r.Rcode != dns.RcodeSuccess || firstA(r) != "192.0.2.1" || r.Authoritative || !r.RecursionAvailable {
		t.Fatalf("forwarded reply: %v", r)
	}
	if o := r.IsEdns0(); o == nil || o.UDPSize() != 1232 {
		t.Errorf("reply OPT %v, want ours with size 1232", o)
	}
	if n := up.queries.Load(); n != 1 {
		t.Fatalf("upstream got %d queries, want 1", n)
	}

	cases := []struct {
		name  string
		net   string
		qname string
		edns  bool
	}{
		{"udp with EDNS", "udp", "www.upstream.test.", true},
		{"udp without EDNS", "udp", "www.upstream.test.", false},
		{"tcp", "tcp", "www.upstream.test.", true},
		{"letter case", "udp", "WwW.UpStReAm.TeSt.", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := new(dns.Msg)
			m.SetQuestion(tc.qname, dns.TypeA)
			m.Id = 0xbeef
			if tc.edns {
				m.SetEdns0(1232, false)
			}
			r := resolvertest.Exchange(t, tc.net, srv.Addr(), m)
			if r.Id != 0xbeef || r.Rcode != dns.RcodeSuccess || firstA(r) != "192.0.2.1" || r.Authoritative {
				t.Fatalf("cached reply: %v", r)
			}
			if r.Question[0].Name != tc.qname || r.Answer[0].Header().Name != tc.qname {
				t.Errorf("names %q / %q, want the query's %q", r.Question[0].Name, r.Answer[0].Header().Name, tc.qname)
			}
			if o := r.IsEdns0(); (o != nil) != tc.edns {
				t.Errorf("OPT in reply: %v, want %v", o != nil, tc.edns)
			}
		})
	}
	if n := up.queries.Load(); n != 1 {
		t.Errorf("upstream got %d queries, want 1: cache hits must not reach it", n)
	}
	if got := counterValue(t, reg, "kudurru_dns_forward_replies_total", map[string]string{"result": "cache"}); got != 4 {
		t.Errorf("forward_replies_total{result=cache} = %v, want 4", got)
	}

	// TTL decay: the cached TTL goes down with the entry's age. Time must
	// pass for that; poll until it has (at most about a second).
	deadline := time.Now().Add(3 * time.Second)
	for {
		r := ask(t, srv.Addr(), "www.upstream.test.", dns.TypeA, 1232)
		if ttl := r.Answer[0].Header().Ttl; ttl < 300 {
			if ttl < 297 {
				t.Errorf("TTL %d after about a second, want 299 or 298", ttl)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("TTL never decreased")
		}
		time.Sleep(50 * time.Millisecond) // waiting for the clock, not for an event
	}
	if n := up.queries.Load(); n != 1 {
		t.Errorf("upstream got %d queries, want 1", n)
	}

	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if p.Metric != "kudurru_cache_entries" { // a count of entries has no unit
			t.Errorf("promlint: %s: %s", p.Metric, p.Text)
		}
	}
}

func TestForwardNegativeAndServfail(t *testing.T) {
	up := startUpstream(t, "www.upstream.test. 300 IN A 192.0.2.1")
	srv := startForwarder(t, fwdOptions{}, up)

	// The first reply is the upstream's; the cached one has the SOA's TTL
	// cut to its MINIMUM (RFC 2308 §5).
	r := ask(t, srv.Addr(), "nope.upstream.test.", dns.TypeA, 1232)
	resolvertest.Case{Rcode: dns.RcodeNameError, NoAA: true, Ns: []string{upSOA}}.Check(t, r)
	r = ask(t, srv.Addr(), "nope.upstream.test.", dns.TypeA, 1232)
	if r.Rcode != dns.RcodeNameError || len(r.Ns) != 1 || r.Ns[0].Header().Ttl > 60 || r.Ns[0].Header().Ttl < 58 {
		t.Errorf("cached NXDOMAIN: %v", r)
	}
	if n := up.queries.Load(); n != 1 {
		t.Errorf("NXDOMAIN: upstream got %d queries, want 1 (negative caching)", n)
	}

	up.mode.Store(upServfail)
	for range 3 {
		if r := ask(t, srv.Addr(), "dead.upstream.test.", dns.TypeA, 1232); r.Rcode != dns.RcodeServerFailure {
			t.Fatalf("rcode %s, want SERVFAIL", dns.RcodeToString[r.Rcode])
		}
	}
	if n := up.queries.Load(); n != 2 {
		t.Errorf("SERVFAIL: upstream got %d queries, want 2 (the failure is cached, RFC 9520)", n)
	}
}

func TestRecursionACL(t *testing.T) {
	up := startUpstream(t, "www.upstream.test. 300 IN A 192.0.2.1", "target.upstream.test. 300 IN A 192.0.2.2")
	zs := resolvertest.NewZones(readyView(resolvertest.ParseZone(t, "example.test.", `
$TTL 3600
@     IN SOA ns1 hostmaster 1 7200 3600 1209600 300
@     IN NS  ns1
ns1   IN A   192.0.2.53
www   IN A   192.0.2.80
out   IN CNAME target.upstream.test.
`)))
	reg := prometheus.NewRegistry()
	srv := startForwarder(t, fwdOptions{zones: zs, reg: reg, config: func(c *resolver.Config) {
		c.Recursion.Allow = []string{"10.0.0.0/8", "192.0.2.1"} // not loopback
	}}, up)

	r := ask(t, srv.Addr(), "www.upstream.test.", dns.TypeA, 1232)
	if r.Rcode != dns.RcodeRefused || r.RecursionAvailable || len(r.Answer) != 0 {
		t.Errorf("outside the zones from a refused client: %v", r)
	}
	resolvertest.Case{Answer: []string{"www.example.test. 3600 IN A 192.0.2.80"}}.
		Check(t, ask(t, srv.Addr(), "www.example.test.", dns.TypeA, 1232))
	// A chain leaving the zones: the zones' part, as an authoritative
	// server answers it.
	resolvertest.Case{Answer: []string{"out.example.test. 3600 IN CNAME target.upstream.test."}}.
		Check(t, ask(t, srv.Addr(), "out.example.test.", dns.TypeA, 1232))
	if n := up.queries.Load(); n != 0 {
		t.Errorf("upstream got %d queries for a refused client", n)
	}
	if got := counterValue(t, reg, "kudurru_dns_recursion_refused_total", nil); got != 1 {
		t.Errorf("recursion_refused_total = %v, want 1", got)
	}
}

func TestDanglingCNAMEChased(t *testing.T) {
	up := startUpstream(t, "target.upstream.test. 300 IN A 192.0.2.2")
	zs := resolvertest.NewZones(readyView(resolvertest.ParseZone(t, "example.test.", `
$TTL 3600
@     IN SOA ns1 hostmaster 1 7200 3600 1209600 300
@     IN NS  ns1
ns1   IN A   192.0.2.53
out   IN CNAME target.upstream.test.
gone  IN CNAME nope.upstream.test.
`)))
	srv := startForwarder(t, fwdOptions{zones: zs}, up)
	for _, c := range []resolvertest.Case{
		{Name: "completed", Qname: "out.example.test.", Qtype: dns.TypeA, NoAA: true, Answer: []string{
			"out.example.test. 3600 IN CNAME target.upstream.test.", "target.upstream.test. 300 IN A 192.0.2.2"}},
		{Name: "target does not exist", Qname: "gone.example.test.", Qtype: dns.TypeA, NoAA: true,
			Rcode: dns.RcodeNameError, Answer: []string{"gone.example.test. 3600 IN CNAME nope.upstream.test."},
			Ns: []string{upSOA}},
	} {
		t.Run(c.Name, func(t *testing.T) { c.Check(t, resolvertest.Exchange(t, "udp", srv.Addr(), c.Msg())) })
	}
}

func TestStaleWhenUpstreamDown(t *testing.T) {
	up := startUpstream(t, "short.upstream.test. 1 IN A 192.0.2.3")
	srv := startForwarder(t, fwdOptions{}, up)
	if r := ask(t, srv.Addr(), "short.upstream.test.", dns.TypeA, 1232); firstA(r) != "192.0.2.3" {
		t.Fatalf("first answer %v", r)
	}
	up.stop()
	// Within a second the entry expires; from then on the answer is the
	// stale one, with TTL 30 (RFC 8767).
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := ask(t, srv.Addr(), "short.upstream.test.", dns.TypeA, 1232)
		if r.Rcode != dns.RcodeSuccess || firstA(r) != "192.0.2.3" {
			t.Fatalf("answer while the upstream is down: %v", r)
		}
		if r.Answer[0].Header().Ttl == 30 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("never served stale")
		}
		time.Sleep(50 * time.Millisecond) // waiting for the entry to expire
	}
	if r := ask(t, srv.Addr(), "never.upstream.test.", dns.TypeA, 1232); r.Rcode != dns.RcodeServerFailure {
		t.Errorf("uncached name with the upstream down: rcode %s, want SERVFAIL", dns.RcodeToString[r.Rcode])
	}
}

func TestCachedReplyFitsClient(t *testing.T) {
	var recs []string
	for i := range 40 {
		recs = append(recs, "big.upstream.test. 300 IN A 192.0.2."+itoa(i+1))
	}
	up := startUpstream(t, recs...)
	srv := startForwarder(t, fwdOptions{}, up)
	tcp := new(dns.Msg)
	tcp.SetQuestion("big.upstream.test.", dns.TypeA)
	if r := resolvertest.Exchange(t, "tcp", srv.Addr(), tcp); len(r.Answer) != 40 || r.Truncated {
		t.Fatalf("over TCP: %d records, TC=%v", len(r.Answer), r.Truncated)
	}
	for _, c := range []struct {
		name    string
		edns    uint16 // 0: no EDNS
		do      bool
		records int
		tc      bool
	}{
		{"no EDNS: 512 bytes", 0, false, 0, true},
		{"EDNS 512", 512, false, 0, true},
		{"EDNS below 512 counts as 512", 100, false, 0, true},
		{"EDNS 1232", 1232, true, 40, false},
		{"EDNS 4096 capped by ours", 4096, false, 40, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := new(dns.Msg)
			m.SetQuestion("big.upstream.test.", dns.TypeA)
			if c.edns > 0 {
				m.SetEdns0(c.edns, c.do)
			}
			r := resolvertest.Exchange(t, "udp", srv.Addr(), m)
			if len(r.Answer) != c.records || r.Truncated != c.tc {
				t.Errorf("%d records, TC=%v; want %d, TC=%v", len(r.Answer), r.Truncated, c.records, c.tc)
			}
			o := r.IsEdns0()
			switch {
			case c.edns == 0 && o != nil:
				t.Error("OPT in the reply to a query without EDNS")
			case c.edns > 0 && (o == nil || o.UDPSize() != 1232 || o.Do() != c.do):
				t.Errorf("reply OPT %v, want size 1232 DO=%v", o, c.do)
			}
		})
	}
	// The DO query is another cache key: 2 upstream queries in all.
	if n := up.queries.Load(); n != 2 {
		t.Errorf("upstream got %d queries, want 2", n)
	}
}

func TestZoneCreatedAfterCachingWins(t *testing.T) {
	up := startUpstream(t, "www.new.test. 300 IN A 192.0.2.1")
	zs := resolvertest.NewZones(readyView())
	srv := startForwarder(t, fwdOptions{zones: zs}, up)
	if r := ask(t, srv.Addr(), "www.new.test.", dns.TypeA, 1232); firstA(r) != "192.0.2.1" {
		t.Fatalf("forwarded: %v", r)
	}
	zs.Set(readyView(resolvertest.ParseZone(t, "new.test.", newTestZone)))
	resolvertest.Case{Answer: []string{"www.new.test. 60 IN A 198.51.100.1"}}.
		Check(t, ask(t, srv.Addr(), "www.new.test.", dns.TypeA, 1232))
	if n := up.queries.Load(); n != 1 {
		t.Errorf("upstream got %d queries, want 1", n)
	}
}

func TestPrefetch(t *testing.T) {
	up := startUpstream(t, "hot.upstream.test. 60 IN A 192.0.2.4")
	reg := prometheus.NewRegistry()
	srv := startForwarder(t, fwdOptions{reg: reg, config: func(c *resolver.Config) {
		c.Cache.PrefetchHits = 1
		c.Cache.PrefetchPercent = 99 // any hit after the first 0.6 s
	}}, up)
	ask(t, srv.Addr(), "hot.upstream.test.", dns.TypeA, 1232)
	<-up.seen
	// Hits until one comes late enough to signal; the refresh reaches the
	// upstream on its own.
	deadline := time.After(5 * time.Second)
	for {
		ask(t, srv.Addr(), "hot.upstream.test.", dns.TypeA, 1232)
		select {
		case name := <-up.seen:
			if name != "hot.upstream.test." {
				t.Fatalf("upstream asked for %q", name)
			}
			waitCounter(t, reg, "kudurru_dns_prefetches_total", map[string]string{"result": "refreshed"}, 1)
			return
		case <-deadline:
			t.Fatal("no prefetch reached the upstream")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitCounter polls a counter until it reaches want: the prefetch
// goroutine signals nothing a test can wait on.
func waitCounter(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string, want float64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for counterValue(t, reg, name, labels) < want {
		if time.Now().After(deadline) {
			t.Fatalf("%s%v stayed below %v", name, labels, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestForwardNotReady: a node without state (applied index 0) does not
// know the cluster's zones yet, so it forwards nothing.
func TestForwardNotReady(t *testing.T) {
	up := startUpstream(t, "www.upstream.test. 300 IN A 192.0.2.1")
	zs := resolvertest.NewZones(zone.Empty)
	srv := startForwarder(t, fwdOptions{zones: zs}, up)
	if r := ask(t, srv.Addr(), "www.upstream.test.", dns.TypeA, 1232); r.Rcode != dns.RcodeServerFailure {
		t.Errorf("rcode %s before any state, want SERVFAIL", dns.RcodeToString[r.Rcode])
	}
	zs.Set(readyView())
	if r := ask(t, srv.Addr(), "www.upstream.test.", dns.TypeA, 1232); firstA(r) != "192.0.2.1" {
		t.Errorf("once ready: %v", r)
	}
	if n := up.queries.Load(); n != 1 {
		t.Errorf("upstream got %d queries, want 1", n)
	}
}

func TestForwardZones(t *testing.T) {
	corp := startUpstream(t, "www.corp.example. 300 IN A 10.1.1.1")
	srv := startForwarder(t, fwdOptions{config: func(c *resolver.Config) {
		c.Forward = []resolver.ForwardZone{{Zone: "Corp.Example", Upstreams: []string{corp.url()}}}
		c.Upstream.HealthCheckInterval = 50 * time.Millisecond // probers run; Close must stop them (goleak)
	}})
	if r := ask(t, srv.Addr(), "www.corp.example.", dns.TypeA, 1232); firstA(r) != "10.1.1.1" {
		t.Errorf("inside the forward zone: %v", r)
	}
	if r := ask(t, srv.Addr(), "www.elsewhere.test.", dns.TypeA, 1232); r.Rcode != dns.RcodeRefused {
		t.Errorf("outside every forward zone: rcode %s, want REFUSED", dns.RcodeToString[r.Rcode])
	}
}

func TestForwardConfigValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*resolver.Config)
		want string
	}{
		{"bad zone", func(c *resolver.Config) {
			c.Forward = []resolver.ForwardZone{{Zone: "a..b", Upstreams: []string{"udp://192.0.2.1"}}}
		}, `forward[0].zone "a..b"`},
		{"no upstreams", func(c *resolver.Config) { c.Forward = []resolver.ForwardZone{{Zone: "."}} }, "forward[0].upstreams: empty"},
		{"bad upstream", func(c *resolver.Config) {
			c.Forward = []resolver.ForwardZone{{Zone: ".", Upstreams: []string{"udp://192.0.2.1", "udp://dns.example"}}}
		}, `forward[0].upstreams[1]: upstream address "udp://dns.example"`},
		{"same zone twice", func(c *resolver.Config) {
			c.Forward = []resolver.ForwardZone{{Zone: "x.", Upstreams: []string{"udp://192.0.2.1"}},
				{Zone: "X", Upstreams: []string{"udp://192.0.2.2"}}}
		}, `forward[1].zone "X": the same zone as forward[0]`},
		{"policy", func(c *resolver.Config) { c.Upstream.Policy = "fastest" }, `upstream: policy "fastest"`},
		{"cache", func(c *resolver.Config) { c.Cache.PersistInterval = time.Millisecond }, "cache: persist_interval 1ms"},
		{"acl", func(c *resolver.Config) { c.Recursion.Allow = []string{"10.0.0.0/33"} }, `recursion.allow[0] "10.0.0.0/33"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := resolver.DefaultConfig()
			c.edit(&cfg)
			if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Validate() = %v, want an error with %q", err, c.want)
			}
		})
	}
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}
