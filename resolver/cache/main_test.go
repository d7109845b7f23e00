package cache

import (
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeClock is a manually advanced clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time // guarded by mu
}

func newClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// testWriter routes log output to t.Log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

func testLogger(t testing.TB) *slog.Logger {
	if _, ok := t.(*testing.B); ok {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// newTestCache builds a cache on its own registry and clock.
func newTestCache(t testing.TB, clk *fakeClock, mutate func(*Config)) (*Cache, *prometheus.Registry) {
	t.Helper()
	cfg := DefaultConfig()
	if mutate != nil {
		mutate(&cfg)
	}
	reg := prometheus.NewRegistry()
	c, err := New(cfg, testLogger(t), reg, WithClock(clk.Now))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c, reg
}

// question builds a query.
func question(name string, qtype uint16, do, cd bool) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.Id = 0x1234
	m.CheckingDisabled = cd
	if do {
		m.SetEdns0(1232, true)
	}
	return m
}

// reply builds an answer to req from RR strings, per section.
func reply(t testing.TB, req *dns.Msg, rcode int, answer, ns, extra []string) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetRcode(req, rcode)
	m.RecursionAvailable = true
	m.Authoritative = true
	parse := func(ss []string) []dns.RR {
		var out []dns.RR
		for _, s := range ss {
			rr, err := dns.NewRR(s)
			if err != nil {
				t.Fatalf("NewRR(%q): %v", s, err)
			}
			out = append(out, rr)
		}
		return out
	}
	m.Answer, m.Ns, m.Extra = parse(answer), parse(ns), parse(extra)
	if opt := req.IsEdns0(); opt != nil {
		m.SetEdns0(opt.UDPSize(), opt.Do())
	}
	return m
}

// mustGet returns the parsed answer of a hit, failing the test on a miss.
func mustGet(t testing.TB, c *Cache, req *dns.Msg) (*dns.Msg, Result) {
	t.Helper()
	b, res := c.Get(nil, req)
	if !res.Found {
		t.Fatalf("Get(%s %s): miss", req.Question[0].Name, dns.TypeToString[req.Question[0].Qtype])
	}
	return unpack(t, b), res
}

func unpack(t testing.TB, b []byte) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	if err := m.Unpack(b); err != nil {
		t.Fatalf("unpack served answer: %v", err)
	}
	return m
}

// ttls lists the TTL of every record but OPT, in message order.
func ttls(m *dns.Msg) []uint32 {
	var out []uint32
	for _, sec := range [][]dns.RR{m.Answer, m.Ns, m.Extra} {
		for _, rr := range sec {
			if rr.Header().Rrtype != dns.TypeOPT {
				out = append(out, rr.Header().Ttl)
			}
		}
	}
	return out
}
