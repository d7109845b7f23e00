package resolver_test

import (
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kudurru/kudurru/fsm/zone"
	"github.com/kudurru/kudurru/resolver"
	"github.com/kudurru/kudurru/resolver/resolvertest"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func query(name string, t uint16) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(name, t)
	return m
}

// rawExchange sends raw bytes over UDP and returns the first reply, or nil
// when none came within wait.
func rawExchange(t *testing.T, addr string, b []byte, wait time.Duration) *dns.Msg {
	t.Helper()
	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(wait))
	buf := make([]byte, 65535)
	n, err := c.Read(buf)
	if err != nil {
		return nil
	}
	r := new(dns.Msg)
	if err := r.Unpack(buf[:n]); err != nil {
		t.Fatalf("reply does not parse: %v", err)
	}
	return r
}

func TestEDNS(t *testing.T) {
	srv := resolvertest.Start(t, resolvertest.NewZones(testView(t)), resolvertest.Options{})
	addr := srv.Addr()

	t.Run("no OPT without EDNS", func(t *testing.T) {
		r := resolvertest.Exchange(t, "udp", addr, query("www.example.test.", dns.TypeA))
		if r.IsEdns0() != nil {
			t.Errorf("reply has OPT: %v", r)
		}
	})
	t.Run("OPT with our size and the DO bit", func(t *testing.T) {
		m := query("www.example.test.", dns.TypeA)
		m.SetEdns0(4096, true)
		opt := resolvertest.Exchange(t, "udp", addr, m).IsEdns0()
		if opt == nil || opt.UDPSize() != 1232 || !opt.Do() || opt.Version() != 0 {
			t.Errorf("OPT = %v, want udp 1232, do, version 0", opt)
		}
	})
	t.Run("unknown options ignored and not echoed", func(t *testing.T) {
		m := query("www.example.test.", dns.TypeA)
		m.SetEdns0(1232, false)
		opt := m.IsEdns0()
		opt.Option = append(opt.Option, &dns.EDNS0_LOCAL{Code: 65001, Data: []byte("x")},
			&dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: "0102030405060708"})
		r := resolvertest.Exchange(t, "udp", addr, m)
		if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
			t.Fatalf("reply %v", r)
		}
		if got := r.IsEdns0(); got == nil || len(got.Option) != 0 {
			t.Errorf("OPT = %v, want one without options", got)
		}
	})
	t.Run("BADVERS", func(t *testing.T) {
		m := query("www.example.test.", dns.TypeA)
		m.SetEdns0(1232, false)
		m.IsEdns0().SetVersion(1)
		r := resolvertest.Exchange(t, "udp", addr, m)
		opt := r.IsEdns0()
		if r.Rcode != dns.RcodeBadVers || opt == nil || opt.Version() != 0 || len(r.Answer) != 0 {
			t.Errorf("reply = %v, want BADVERS with an OPT of version 0", r)
		}
	})
	t.Run("two OPT records are FORMERR", func(t *testing.T) {
		m := query("www.example.test.", dns.TypeA)
		m.SetEdns0(1232, false)
		m.SetEdns0(1232, false)
		m.Extra = append(m.Extra, &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT, Class: 1232}})
		if r := resolvertest.Exchange(t, "udp", addr, m); r.Rcode != dns.RcodeFormatError {
			t.Errorf("rcode = %s, want FORMERR", dns.RcodeToString[r.Rcode])
		}
	})
}

func TestTruncation(t *testing.T) {
	srv := resolvertest.Start(t, resolvertest.NewZones(testView(t)), resolvertest.Options{})
	addr := srv.Addr()
	for _, c := range []struct {
		name      string
		net       string
		edns      uint16 // 0: none
		qname     string
		tc        bool
		maxSize   int
		wantCount int // answer records when not truncated
	}{
		{"no EDNS: 512 bytes", "udp", 0, "many.example.test.", true, 512, 0},
		{"small EDNS size counts as 512", "udp", 100, "many.example.test.", true, 512, 0},
		{"client size below ours", "udp", 600, "many.example.test.", true, 600, 0},
		{"fits in 1232", "udp", 4096, "many.example.test.", false, 1232, 60},
		{"ours below client size", "udp", 4096, "bigtxt.example.test.", true, 1232, 0},
		{"TCP carries it all", "tcp", 0, "bigtxt.example.test.", false, 65535, 30},
	} {
		t.Run(c.name, func(t *testing.T) {
			qt := dns.TypeA
			if strings.HasPrefix(c.qname, "bigtxt") {
				qt = dns.TypeTXT
			}
			m := query(c.qname, qt)
			if c.edns > 0 {
				m.SetEdns0(c.edns, false)
			}
			r := resolvertest.Exchange(t, c.net, addr, m)
			if r.Truncated != c.tc {
				t.Errorf("TC = %v, want %v", r.Truncated, c.tc)
			}
			r.Compress = true
			if size := r.Len(); size > c.maxSize {
				t.Errorf("reply is %d bytes, limit %d", size, c.maxSize)
			}
			if !c.tc && len(r.Answer) != c.wantCount {
				t.Errorf("%d answer records, want %d", len(r.Answer), c.wantCount)
			}
			if r.Rcode != dns.RcodeSuccess || !r.Authoritative {
				t.Errorf("rcode %s AA %v", dns.RcodeToString[r.Rcode], r.Authoritative)
			}
		})
	}
	t.Run("additional dropped without TC", func(t *testing.T) {
		r := resolvertest.Exchange(t, "udp", addr, query("example.test.", dns.TypeNS))
		if r.Truncated || len(r.Answer) != 2 {
			t.Errorf("reply %v", r)
		}
	})
}

func TestMalformed(t *testing.T) {
	srv := resolvertest.Start(t, resolvertest.NewZones(testView(t)), resolvertest.Options{})
	addr := srv.Addr()
	good := query("www.example.test.", dns.TypeA)
	goodWire, _ := good.Pack()
	pack := func(m *dns.Msg) []byte {
		b, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	twoQ := query("www.example.test.", dns.TypeA)
	twoQ.Question = append(twoQ.Question, twoQ.Question[0])
	noQ := query("www.example.test.", dns.TypeA)
	noQ.Question = nil
	withTC := query("www.example.test.", dns.TypeA)
	withTC.Truncated = true
	withAnswer := query("www.example.test.", dns.TypeA)
	withAnswer.Answer = []dns.RR{resolvertest.RR(t, "www.example.test. 1 IN A 192.0.2.1")}
	cut := pack(query("www.example.test.", dns.TypeA))
	cut = cut[:len(cut)-3]
	for _, c := range []struct {
		name  string
		wire  []byte
		rcode int
	}{
		{"two questions", pack(twoQ), dns.RcodeFormatError},
		{"no question", pack(noQ), dns.RcodeFormatError},
		{"TC in a query", pack(withTC), dns.RcodeFormatError},
		{"answer records in a query", pack(withAnswer), dns.RcodeFormatError},
		{"unparsable question", cut, dns.RcodeFormatError},
		{"opcode STATUS", func() []byte { m := query("www.example.test.", dns.TypeA); m.Opcode = dns.OpcodeStatus; return pack(m) }(), dns.RcodeNotImplemented},
		{"opcode UPDATE", func() []byte { m := new(dns.Msg); m.SetUpdate("example.test."); return pack(m) }(), dns.RcodeNotImplemented},
		{"opcode NOTIFY", func() []byte { m := new(dns.Msg); m.SetNotify("example.test."); return pack(m) }(), dns.RcodeNotImplemented},
		{"class HS", func() []byte {
			m := query("www.example.test.", dns.TypeA)
			m.Question[0].Qclass = dns.ClassHESIOD
			return pack(m)
		}(), dns.RcodeRefused},
		{"AXFR over UDP", pack(query("example.test.", dns.TypeAXFR)), dns.RcodeRefused},
		{"qtype OPT", pack(query("example.test.", dns.TypeOPT)), dns.RcodeFormatError},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rawExchange(t, addr, c.wire, 5*time.Second)
			if r == nil {
				t.Fatal("no reply")
			}
			if r.Rcode != c.rcode || !r.Response || r.Id != uint16(c.wire[0])<<8|uint16(c.wire[1]) {
				t.Errorf("reply %v, want rcode %s", r, dns.RcodeToString[c.rcode])
			}
		})
	}
	for _, c := range []struct {
		name string
		wire []byte
	}{
		{"short header", []byte{1, 2, 3, 4, 5}},
		{"response", func() []byte { m := query("www.example.test.", dns.TypeA); m.Response = true; return pack(m) }()},
	} {
		t.Run(c.name+" gets silence", func(t *testing.T) {
			// Send the bad packet, then a good one on the same socket:
			// the first reply must be the good one's.
			conn, err := net.Dial("udp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.Write(c.wire)
			conn.Write(goodWire)
			conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			buf := make([]byte, 4096)
			n, err := conn.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			r := new(dns.Msg)
			if err := r.Unpack(buf[:n]); err != nil || r.Id != good.Id || r.Rcode != dns.RcodeSuccess {
				t.Errorf("first reply %v (%v), want the answer to the good query", r, err)
			}
		})
	}
}

// statusFunc adapts a function to resolver.Status.
type statusFunc func() resolver.NodeStatus

func (f statusFunc) NodeStatus() resolver.NodeStatus { return f() }

func TestLocalNames(t *testing.T) {
	v := testView(t)
	b := v.Edit()
	b.SetIndex(42)
	zs := resolvertest.NewZones(b.View())
	status := statusFunc(func() resolver.NodeStatus {
		return resolver.NodeStatus{NodeID: "node-a", RaftState: "leader", AppliedIndex: 41}
	})
	chaosOn := resolvertest.Start(t, zs, resolvertest.Options{Status: status,
		Config: func(c *resolver.Config) { c.Chaos = true; c.Version = "kudurru test" }})
	chaosOff := resolvertest.Start(t, zs, resolvertest.Options{})
	ch := func(name string, qt uint16) resolvertest.Case {
		return resolvertest.Case{Qname: name, Qtype: qt, Qclass: dns.ClassCHAOS}
	}
	for _, c := range []struct {
		name string
		srv  *resolver.Server
		c    resolvertest.Case
	}{
		{"version.bind", chaosOn, resolvertest.Case{Qname: "version.bind.", Qtype: dns.TypeTXT, Qclass: dns.ClassCHAOS,
			Answer: []string{`version.bind. 0 CH TXT "kudurru test"`}}},
		{"id.server", chaosOn, resolvertest.Case{Qname: "ID.Server.", Qtype: dns.TypeTXT, Qclass: dns.ClassCHAOS,
			Answer: []string{`ID.Server. 0 CH TXT "node-a"`}}},
		{"hostname.bind", chaosOn, resolvertest.Case{Qname: "hostname.bind.", Qtype: dns.TypeTXT, Qclass: dns.ClassCHAOS,
			Answer: []string{`hostname.bind. 0 CH TXT "node-a"`}}},
		{"chaos other type", chaosOn, resolvertest.Case{Qname: "version.bind.", Qtype: dns.TypeA, Qclass: dns.ClassCHAOS}},
		{"chaos unknown name", chaosOn, func() resolvertest.Case {
			c := ch("authors.bind.", dns.TypeTXT)
			c.Rcode, c.NoAA = dns.RcodeRefused, true
			return c
		}()},
		{"chaos disabled", chaosOff, func() resolvertest.Case {
			c := ch("version.bind.", dns.TypeTXT)
			c.Rcode, c.NoAA = dns.RcodeRefused, true
			return c
		}()},
		{"health", chaosOn, resolvertest.Case{Qname: "Health.Kudurru.Internal.", Qtype: dns.TypeTXT,
			Answer: []string{`Health.Kudurru.Internal. 0 IN TXT "node=node-a" "state=leader" "applied=41" "view=42"`}}},
		{"health without status", chaosOff, resolvertest.Case{Qname: "health.kudurru.internal.", Qtype: dns.TypeA}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.c.Check(t, resolvertest.Exchange(t, "udp", c.srv.Addr(), c.c.Msg()))
		})
	}
}

// panicZones panics on its first call and serves v afterwards.
type panicZones struct {
	calls atomic.Int32
	v     *zone.View
}

func (p *panicZones) Current() *zone.View {
	if p.calls.Add(1) == 1 {
		panic("test panic in a stage")
	}
	return p.v
}

func TestPanicBecomesSERVFAIL(t *testing.T) {
	reg := prometheus.NewRegistry()
	srv := resolvertest.Start(t, &panicZones{v: testView(t)}, resolvertest.Options{Registry: reg})
	m := query("www.example.test.", dns.TypeA)
	m.SetEdns0(1232, false)
	r := resolvertest.Exchange(t, "udp", srv.Addr(), m)
	if r.Rcode != dns.RcodeServerFailure || r.IsEdns0() == nil {
		t.Errorf("first reply %v, want SERVFAIL with OPT", r)
	}
	r = resolvertest.Exchange(t, "udp", srv.Addr(), m)
	if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
		t.Errorf("server did not keep serving: %v", r)
	}
	if n := testutil.ToFloat64(mustCollector(t, reg, "kudurru_dns_panics_total")); n != 1 {
		t.Errorf("panics_total = %v, want 1", n)
	}
}

// mustCollector finds a registered metric family by name and returns a
// collector view of it for testutil.
func mustCollector(t *testing.T, g prometheus.Gatherer, name string) prometheus.Collector {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.Metric) == 1 {
			return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "x", Help: "x"},
				func() float64 { return mf.Metric[0].GetCounter().GetValue() })
		}
	}
	t.Fatalf("metric %s not found", name)
	return nil
}
