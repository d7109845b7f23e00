package cache

import (
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"
)

func TestServeStale(t *testing.T) {
	clk := newClock()
	c, _ := newTestCache(t, clk, func(cfg *Config) {
		cfg.StaleWindow = time.Hour
		cfg.StaleRefresh = 30 * time.Second
		cfg.StaleAnswerTTL = 30 * time.Second
	})
	req := question("stale.example.", dns.TypeA, false, false)
	c.Set(req, reply(t, req, dns.RcodeSuccess, []string{"stale.example. 60 IN A 192.0.2.1"}, nil, nil))

	steps := []struct {
		name      string
		advance   time.Duration
		stale     bool // call GetStale instead of Get
		wantFound bool
		wantStale bool
	}{
		{"fresh via GetStale", 0, true, true, false},
		{"expired: Get misses", 61 * time.Second, false, false, false},
		{"upstreams failed: GetStale serves stale", 0, true, true, true},
		{"within stale_refresh: Get serves stale", 29 * time.Second, false, true, true},
		{"stale_refresh over: Get misses again", 2 * time.Second, false, false, false},
		{"near window end: GetStale serves", time.Hour - 33*time.Second, true, true, true},
		{"window over: GetStale misses", 2 * time.Second, true, false, false},
	}
	for _, st := range steps {
		clk.Advance(st.advance)
		get := c.Get
		if st.stale {
			get = c.GetStale
		}
		b, res := get(nil, req)
		if res.Found != st.wantFound || res.Stale != st.wantStale {
			t.Fatalf("%s: result %+v, want found=%v stale=%v", st.name, res, st.wantFound, st.wantStale)
		}
		if res.Stale {
			if got := ttls(unpack(t, b)); !slices.Equal(got, []uint32{30}) {
				t.Errorf("%s: stale TTLs %v, want [30]", st.name, got)
			}
		}
	}

	t.Run("disabled", func(t *testing.T) {
		clk := newClock()
		c, _ := newTestCache(t, clk, func(cfg *Config) { cfg.StaleWindow = 0 })
		c.Set(req, reply(t, req, dns.RcodeSuccess, []string{"stale.example. 60 IN A 192.0.2.1"}, nil, nil))
		clk.Advance(61 * time.Second)
		if _, res := c.GetStale(nil, req); res.Found {
			t.Error("GetStale served stale data with stale_window 0")
		}
	})
}

func TestPrefetchSignal(t *testing.T) {
	clk := newClock()
	c, _ := newTestCache(t, clk, func(cfg *Config) {
		cfg.PrefetchHits = 3
		cfg.PrefetchPercent = 10
	})
	req := question("hot.example.", dns.TypeA, false, false)
	c.Set(req, reply(t, req, dns.RcodeSuccess, []string{"hot.example. 100 IN A 192.0.2.1"}, nil, nil))
	cold := question("cold.example.", dns.TypeA, false, false)
	c.Set(cold, reply(t, cold, dns.RcodeSuccess, []string{"cold.example. 100 IN A 192.0.2.2"}, nil, nil))

	for i := range 3 {
		if _, res := mustGet(t, c, req); res.Prefetch {
			t.Fatalf("hit %d far from expiry signalled prefetch", i+1)
		}
	}
	clk.Advance(91 * time.Second) // 9 s of 100 s left
	if _, res := mustGet(t, c, cold); res.Prefetch {
		t.Error("an entry with one hit signalled prefetch")
	}
	if _, res := mustGet(t, c, req); !res.Prefetch {
		t.Error("popular entry near expiry did not signal prefetch")
	}
	if _, res := mustGet(t, c, req); res.Prefetch {
		t.Error("prefetch signalled twice for one entry")
	}
	// The refreshed answer is a new entry, which may signal again.
	c.Set(req, reply(t, req, dns.RcodeSuccess, []string{"hot.example. 100 IN A 192.0.2.1"}, nil, nil))
	if _, res := mustGet(t, c, req); res.Prefetch {
		t.Error("fresh replacement signalled prefetch")
	}
}

// TestPrefetchLongTTL: with max_ttl at its RFC 2181 limit (68 years) the
// prefetch arithmetic does not overflow: no signal far from expiry, one
// near it.
func TestPrefetchLongTTL(t *testing.T) {
	clk := newClock()
	c, _ := newTestCache(t, clk, func(cfg *Config) {
		cfg.MaxTTL = maxTTL
		cfg.PrefetchHits = 1
		cfg.PrefetchPercent = 99
	})
	req := question("long.example.", dns.TypeA, false, false)
	c.Set(req, reply(t, req, dns.RcodeSuccess, []string{"long.example. 2147483647 IN A 192.0.2.1"}, nil, nil))
	if _, res := mustGet(t, c, req); res.Prefetch {
		t.Fatal("a hit at the start of a 68-year TTL signalled prefetch")
	}
	clk.Advance(maxTTL - maxTTL/200) // 0.5 % left
	if _, res := mustGet(t, c, req); !res.Prefetch {
		t.Fatal("a hit with 0.5 % of a 68-year TTL left did not signal prefetch")
	}
}

func TestServfailCaching(t *testing.T) {
	positive := func(t *testing.T, req *dns.Msg) *dns.Msg {
		return reply(t, req, dns.RcodeSuccess, []string{"sf.example. 60 IN A 192.0.2.1"}, nil, nil)
	}
	t.Run("cached for servfail_ttl", func(t *testing.T) {
		clk := newClock()
		c, _ := newTestCache(t, clk, func(cfg *Config) { cfg.ServfailTTL = 5 * time.Second })
		req := question("sf.example.", dns.TypeA, false, false)
		if !c.Set(req, reply(t, req, dns.RcodeServerFailure, nil, nil, nil)) {
			t.Fatal("SERVFAIL not stored")
		}
		m, _ := mustGet(t, c, req)
		if m.Rcode != dns.RcodeServerFailure {
			t.Fatalf("rcode %s, want SERVFAIL", dns.RcodeToString[m.Rcode])
		}
		clk.Advance(5 * time.Second)
		if _, res := c.Get(nil, req); res.Found {
			t.Error("SERVFAIL kept beyond servfail_ttl")
		}
		if _, res := c.GetStale(nil, req); res.Found {
			t.Error("SERVFAIL served as stale data")
		}
	})
	t.Run("disabled", func(t *testing.T) {
		c, _ := newTestCache(t, newClock(), func(cfg *Config) { cfg.ServfailTTL = 0 })
		req := question("sf.example.", dns.TypeA, false, false)
		if c.Set(req, reply(t, req, dns.RcodeServerFailure, nil, nil, nil)) {
			t.Error("SERVFAIL stored with servfail_ttl 0")
		}
	})
	t.Run("does not replace fresh data", func(t *testing.T) {
		c, _ := newTestCache(t, newClock(), nil)
		req := question("sf.example.", dns.TypeA, false, false)
		c.Set(req, positive(t, req))
		if c.Set(req, reply(t, req, dns.RcodeServerFailure, nil, nil, nil)) {
			t.Error("SERVFAIL replaced a fresh answer")
		}
		if m, _ := mustGet(t, c, req); m.Rcode != dns.RcodeSuccess {
			t.Errorf("rcode %s, want NOERROR", dns.RcodeToString[m.Rcode])
		}
	})
	t.Run("keeps stale data and serves it", func(t *testing.T) {
		clk := newClock()
		c, _ := newTestCache(t, clk, nil)
		req := question("sf.example.", dns.TypeA, false, false)
		c.Set(req, positive(t, req))
		clk.Advance(2 * time.Minute)
		if c.Set(req, reply(t, req, dns.RcodeServerFailure, nil, nil, nil)) {
			t.Error("SERVFAIL replaced data still servable stale")
		}
		m, res := mustGet(t, c, req)
		if !res.Stale || m.Rcode != dns.RcodeSuccess {
			t.Errorf("Get = %+v rcode %s, want the stale NOERROR answer", res, dns.RcodeToString[m.Rcode])
		}
	})
	t.Run("positive answer replaces SERVFAIL", func(t *testing.T) {
		c, _ := newTestCache(t, newClock(), nil)
		req := question("sf.example.", dns.TypeA, false, false)
		c.Set(req, reply(t, req, dns.RcodeServerFailure, nil, nil, nil))
		if !c.Set(req, positive(t, req)) {
			t.Fatal("positive answer did not replace SERVFAIL")
		}
		if m, _ := mustGet(t, c, req); m.Rcode != dns.RcodeSuccess {
			t.Errorf("rcode %s, want NOERROR", dns.RcodeToString[m.Rcode])
		}
	})
}
