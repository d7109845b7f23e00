package cache

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

func TestTTLDecay(t *testing.T) {
	clk := newClock()
	c, _ := newTestCache(t, clk, nil)
	req := question("www.example.", dns.TypeA, false, false)
	resp := reply(t, req, dns.RcodeSuccess,
		[]string{"www.example. 300 IN A 192.0.2.1", "www.example. 300 IN A 192.0.2.2"},
		[]string{"example. 3600 IN NS ns.example."},
		[]string{"ns.example. 120 IN A 192.0.2.53"})
	if !c.Set(req, resp) {
		t.Fatal("Set refused a plain positive answer")
	}

	cases := []struct {
		name    string
		advance time.Duration
		want    []uint32 // nil: miss
	}{
		{"just stored", 0, []uint32{300, 300, 3600, 120}},
		{"after 10s", 10 * time.Second, []uint32{290, 290, 3590, 110}},
		{"sub-second ages round down", 900 * time.Millisecond, []uint32{290, 290, 3590, 110}},
		{"last second of the shortest TTL", 109 * time.Second, []uint32{181, 181, 3481, 1}},
		{"shortest TTL expired", time.Second, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk.Advance(tc.advance)
			q := question("www.example.", dns.TypeA, false, false)
			q.Id = 0xBEEF
			q.RecursionDesired = false
			b, res := c.Get(nil, q)
			if tc.want == nil {
				if res.Found {
					t.Fatalf("Get hit after expiry: %v", unpack(t, b))
				}
				return
			}
			if !res.Found || res.Stale {
				t.Fatalf("Get = %+v, want a fresh hit", res)
			}
			m := unpack(t, b)
			if got := ttls(m); !slices.Equal(got, tc.want) {
				t.Errorf("TTLs = %v, want %v", got, tc.want)
			}
			if m.Id != 0xBEEF || m.RecursionDesired || m.Authoritative || !m.Response {
				t.Errorf("header id=%#x rd=%v aa=%v qr=%v, want id=0xbeef rd=false aa=false qr=true",
					m.Id, m.RecursionDesired, m.Authoritative, m.Response)
			}
		})
	}
}

func TestTTLClamp(t *testing.T) {
	clk := newClock()
	c, _ := newTestCache(t, clk, func(cfg *Config) {
		cfg.MinTTL = time.Minute
		cfg.MaxTTL = time.Hour
	})
	req := question("clamp.example.", dns.TypeTXT, false, false)
	c.Set(req, reply(t, req, dns.RcodeSuccess, []string{
		`clamp.example. 5 IN TXT "short"`,
		`clamp.example. 172800 IN TXT "long"`,
	}, nil, nil))
	m, _ := mustGet(t, c, req)
	if got, want := ttls(m), []uint32{60, 3600}; !slices.Equal(got, want) {
		t.Errorf("TTLs = %v, want %v", got, want)
	}
	clk.Advance(61 * time.Second)
	if _, res := c.Get(nil, req); res.Found {
		t.Error("entry outlived its clamped minimum TTL")
	}
}

func TestNegativeCaching(t *testing.T) {
	soa := "example. 3600 IN SOA ns.example. host.example. 1 7200 900 1209600 %d"
	cases := []struct {
		name     string
		qtype    uint16
		rcode    int
		answer   []string
		ns       []string
		maxNeg   time.Duration
		wantTTLs []uint32 // nil: not cached
		life     time.Duration
	}{
		{"NXDOMAIN uses SOA MINIMUM", dns.TypeA, dns.RcodeNameError, nil,
			[]string{fmt.Sprintf(soa, 300)}, time.Hour, []uint32{300}, 300 * time.Second},
		{"NXDOMAIN uses SOA TTL when lower", dns.TypeA, dns.RcodeNameError, nil,
			[]string{"example. 60 IN SOA ns.example. host.example. 1 7200 900 1209600 600"}, time.Hour, []uint32{60}, time.Minute},
		{"NODATA", dns.TypeAAAA, dns.RcodeSuccess, nil,
			[]string{fmt.Sprintf(soa, 900)}, time.Hour, []uint32{900}, 900 * time.Second},
		{"NODATA behind a CNAME", dns.TypeAAAA, dns.RcodeSuccess,
			[]string{"neg.example. 100 IN CNAME target.example."},
			[]string{fmt.Sprintf(soa, 900)}, time.Hour, []uint32{100, 900}, 100 * time.Second},
		{"capped by max_negative_ttl", dns.TypeA, dns.RcodeNameError, nil,
			[]string{fmt.Sprintf(soa, 86400)}, 10 * time.Minute, []uint32{600}, 10 * time.Minute},
		{"no SOA is not cached", dns.TypeA, dns.RcodeNameError, nil, nil, time.Hour, nil, 0},
		{"negative caching disabled", dns.TypeA, dns.RcodeNameError, nil,
			[]string{fmt.Sprintf(soa, 300)}, 0, nil, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			c, _ := newTestCache(t, clk, func(cfg *Config) { cfg.MaxNegativeTTL = tc.maxNeg })
			req := question("neg.example.", tc.qtype, false, false)
			stored := c.Set(req, reply(t, req, tc.rcode, tc.answer, tc.ns, nil))
			if stored != (tc.wantTTLs != nil) {
				t.Fatalf("Set = %v, want %v", stored, tc.wantTTLs != nil)
			}
			if !stored {
				return
			}
			m, _ := mustGet(t, c, req)
			if m.Rcode != tc.rcode {
				t.Errorf("rcode = %s, want %s", dns.RcodeToString[m.Rcode], dns.RcodeToString[tc.rcode])
			}
			if got := ttls(m); !slices.Equal(got, tc.wantTTLs) {
				t.Errorf("TTLs = %v, want %v", got, tc.wantTTLs)
			}
			clk.Advance(tc.life - time.Nanosecond)
			if _, res := c.Get(nil, req); !res.Found {
				t.Errorf("expired before %s", tc.life)
			}
			clk.Advance(time.Nanosecond)
			if _, res := c.Get(nil, req); res.Found {
				t.Errorf("still fresh after %s", tc.life)
			}
		})
	}
}

func TestKeySplit(t *testing.T) {
	clk := newClock()
	c, _ := newTestCache(t, clk, nil)
	type variant struct {
		name   string
		qtype  uint16
		do, cd bool
		addr   string
	}
	variants := []variant{
		{"plain", dns.TypeA, false, false, "192.0.2.1"},
		{"DO", dns.TypeA, true, false, "192.0.2.2"},
		{"CD", dns.TypeA, false, true, "192.0.2.3"},
		{"DO+CD", dns.TypeA, true, true, "192.0.2.4"},
	}
	for _, v := range variants {
		req := question("split.example.", v.qtype, v.do, v.cd)
		if !c.Set(req, reply(t, req, dns.RcodeSuccess, []string{"split.example. 60 IN A " + v.addr}, nil, nil)) {
			t.Fatalf("Set %s refused", v.name)
		}
	}
	if c.Len() != len(variants) {
		t.Fatalf("Len = %d, want %d separate entries", c.Len(), len(variants))
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			m, _ := mustGet(t, c, question("split.example.", v.qtype, v.do, v.cd))
			if got := m.Answer[0].(*dns.A).A.String(); got != v.addr {
				t.Errorf("answer %s, want %s", got, v.addr)
			}
			if m.CheckingDisabled != v.cd {
				t.Errorf("CD = %v, want %v", m.CheckingDisabled, v.cd)
			}
			if opt := m.IsEdns0(); (opt != nil && opt.Do()) != v.do {
				t.Errorf("DO in answer = %v, want %v", opt != nil && opt.Do(), v.do)
			}
		})
	}
	t.Run("other type misses", func(t *testing.T) {
		if _, res := c.Get(nil, question("split.example.", dns.TypeAAAA, false, false)); res.Found {
			t.Error("AAAA query hit the A entry")
		}
	})
	t.Run("other class misses", func(t *testing.T) {
		q := question("split.example.", dns.TypeA, false, false)
		q.Question[0].Qclass = dns.ClassCHAOS
		if _, res := c.Get(nil, q); res.Found {
			t.Error("CH query hit the IN entry")
		}
	})
}

func TestCaseRestoration(t *testing.T) {
	clk := newClock()
	c, _ := newTestCache(t, clk, nil)
	req := question("WWW.Example.ORG.", dns.TypeA, false, false)
	resp := reply(t, req, dns.RcodeSuccess, []string{"www.example.org. 60 IN A 192.0.2.1"}, nil, nil)
	resp.Question[0].Name = "www.example.org." // upstream answered in lower case
	if !c.Set(req, resp) {
		t.Fatal("Set refused an answer whose question differs only in case")
	}
	for _, name := range []string{"www.example.org.", "wWw.ExAmPlE.oRg.", "WWW.EXAMPLE.ORG."} {
		t.Run(name, func(t *testing.T) {
			m, _ := mustGet(t, c, question(name, dns.TypeA, false, false))
			if got := m.Question[0].Name; got != name {
				t.Errorf("question name %q, want the query's %q", got, name)
			}
			if len(m.Answer) != 1 || !dns.IsSubDomain("example.org.", m.Answer[0].Header().Name) {
				t.Errorf("answer %v", m.Answer)
			}
		})
	}
	t.Run("different name is refused", func(t *testing.T) {
		other := reply(t, req, dns.RcodeSuccess, []string{"other.example.org. 60 IN A 192.0.2.1"}, nil, nil)
		other.Question[0].Name = "other.example.org."
		if c.Set(req, other) {
			t.Error("Set stored an answer to another question")
		}
	})
}

func TestOPTFlagsUntouched(t *testing.T) {
	clk := newClock()
	c, _ := newTestCache(t, clk, nil)
	req := question("opt.example.", dns.TypeA, true, false)
	c.Set(req, reply(t, req, dns.RcodeSuccess, []string{"opt.example. 600 IN A 192.0.2.1"}, nil, nil))
	clk.Advance(100 * time.Second)
	m, _ := mustGet(t, c, req)
	opt := m.IsEdns0()
	if opt == nil || !opt.Do() || opt.Version() != 0 || opt.ExtendedRcode() != 0 {
		t.Fatalf("OPT changed by TTL rewrite: %v", opt)
	}
	if got := m.Answer[0].Header().Ttl; got != 500 {
		t.Errorf("A TTL = %d, want 500", got)
	}
}

func TestUncacheable(t *testing.T) {
	req := question("u.example.", dns.TypeA, true, false)
	ok := func(t *testing.T) *dns.Msg {
		return reply(t, req, dns.RcodeSuccess, []string{"u.example. 60 IN A 192.0.2.1"}, nil, nil)
	}
	cases := []struct {
		name   string
		resp   func(t *testing.T) *dns.Msg
		reason string
	}{
		{"truncated", func(t *testing.T) *dns.Msg { m := ok(t); m.Truncated = true; return m }, "truncated"},
		{"REFUSED", func(t *testing.T) *dns.Msg { return reply(t, req, dns.RcodeRefused, nil, nil, nil) }, "rcode"},
		{"FORMERR", func(t *testing.T) *dns.Msg { return reply(t, req, dns.RcodeFormatError, nil, nil, nil) }, "rcode"},
		{"BADVERS (extended rcode)", func(t *testing.T) *dns.Msg {
			m := reply(t, req, dns.RcodeSuccess, nil, nil, nil)
			m.Rcode = dns.RcodeBadVers // packed as header bits plus OPT bits
			return m
		}, "rcode"},
		{"TTL zero", func(t *testing.T) *dns.Msg {
			return reply(t, req, dns.RcodeSuccess, []string{"u.example. 0 IN A 192.0.2.1"}, nil, nil)
		}, "ttl"},
		{"not a response", func(t *testing.T) *dns.Msg { m := ok(t); m.Response = false; return m }, "malformed"},
		{"other question", func(t *testing.T) *dns.Msg { m := ok(t); m.Question[0].Qtype = dns.TypeMX; return m }, "question_mismatch"},
		{"control: plain answer is stored", func(t *testing.T) *dns.Msg { return ok(t) }, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newTestCache(t, newClock(), nil)
			stored := c.Set(req, tc.resp(t))
			if want := tc.reason == ""; stored != want {
				t.Fatalf("Set = %v, want %v", stored, want)
			}
			if tc.reason == "" {
				return
			}
			if c.Len() != 0 {
				t.Errorf("Len = %d after refused Set", c.Len())
			}
			if got := testCounter(t, c.metrics.rejected.WithLabelValues(tc.reason)); got != 1 {
				t.Errorf("uncacheable_total{reason=%q} = %v, want 1", tc.reason, got)
			}
		})
	}
	t.Run("requests the cache does not handle", func(t *testing.T) {
		c, _ := newTestCache(t, newClock(), nil)
		update := question("u.example.", dns.TypeA, false, false)
		update.Opcode = dns.OpcodeUpdate
		for _, q := range []*dns.Msg{nil, new(dns.Msg), update} {
			if c.Set(q, ok(t)) {
				t.Errorf("Set stored an answer for request %v", q)
			}
			if _, res := c.Get(nil, q); res.Found {
				t.Errorf("Get hit for request %v", q)
			}
		}
	})
}

func TestMemoryBound(t *testing.T) {
	for _, shards := range []int{1, 64} {
		t.Run(fmt.Sprintf("%d shards", shards), func(t *testing.T) {
			clk := newClock()
			maxBytes := int64(shards) * 8192
			c, _ := newTestCache(t, clk, func(cfg *Config) {
				cfg.Shards = shards
				cfg.MaxBytes = maxBytes
			})
			hot := question("hot.example.", dns.TypeA, false, false)
			c.Set(hot, reply(t, hot, dns.RcodeSuccess, []string{"hot.example. 3600 IN A 192.0.2.1"}, nil, nil))
			for i := range 4000 {
				name := fmt.Sprintf("n%d.example.", i)
				req := question(name, dns.TypeA, false, false)
				c.Set(req, reply(t, req, dns.RcodeSuccess, []string{name + " 3600 IN A 192.0.2.1"}, nil, nil))
				if shards == 1 {
					// Keep the hot entry referenced: CLOCK gives it a
					// second chance every turn of the hand.
					mustGet(t, c, hot)
				}
				if b := c.Bytes(); b > maxBytes {
					t.Fatalf("after %d inserts Bytes = %d > max_bytes %d", i+1, b, maxBytes)
				}
			}
			var evictions uint64
			for _, s := range c.shards {
				evictions += s.evicts.Load()
			}
			if evictions == 0 || c.Len() >= 4000 {
				t.Errorf("evictions = %d, Len = %d: bound not enforced", evictions, c.Len())
			}
			if shards == 1 {
				if _, res := c.Get(nil, hot); !res.Found {
					t.Error("frequently hit entry was evicted")
				}
			}
			if c.Bytes() < maxBytes/2 {
				t.Errorf("Bytes = %d: cache holds far less than max_bytes %d", c.Bytes(), maxBytes)
			}
		})
	}
	t.Run("expired entries go first", func(t *testing.T) {
		clk := newClock()
		c, _ := newTestCache(t, clk, func(cfg *Config) {
			cfg.Shards = 1
			cfg.MaxBytes = 8192
			cfg.StaleWindow = 0
		})
		short := question("short.example.", dns.TypeA, false, false)
		c.Set(short, reply(t, short, dns.RcodeSuccess, []string{"short.example. 1 IN A 192.0.2.1"}, nil, nil))
		mustGet(t, c, short) // referenced, but dead soon
		clk.Advance(2 * time.Second)
		n := c.Len()
		for i := 0; c.shards[0].evicts.Load() == 0; i++ {
			name := fmt.Sprintf("f%d.example.", i)
			req := question(name, dns.TypeA, false, false)
			c.Set(req, reply(t, req, dns.RcodeSuccess, []string{name + " 3600 IN A 192.0.2.1"}, nil, nil))
		}
		if c.Len() < n {
			t.Fatalf("Len fell from %d to %d", n, c.Len())
		}
		for _, e := range c.shards[0].ring {
			if e.key[:len("\x05short")] == "\x05short" {
				t.Error("the expired entry survived the first eviction")
			}
		}
	})
	t.Run("entry larger than a shard", func(t *testing.T) {
		c, _ := newTestCache(t, newClock(), func(cfg *Config) {
			cfg.Shards = 1
			cfg.MaxBytes = 4096
		})
		req := question("big.example.", dns.TypeTXT, false, false)
		var rrs []string
		for i := range 40 {
			rrs = append(rrs, fmt.Sprintf(`big.example. 60 IN TXT "%0200d"`, i))
		}
		if c.Set(req, reply(t, req, dns.RcodeSuccess, rrs, nil, nil)) {
			t.Error("stored an entry larger than its shard")
		}
	})
}

func TestConcurrentAccess(t *testing.T) {
	clk := newClock()
	c, _ := newTestCache(t, clk, func(cfg *Config) {
		cfg.Shards = 4
		cfg.MaxBytes = 64 << 10
	})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 0, 512)
			for i := range 500 {
				name := fmt.Sprintf("c%d.example.", (i*7+w)%97)
				req := question(name, dns.TypeA, w%2 == 0, false)
				switch i % 4 {
				case 0:
					c.Set(req, reply(t, req, dns.RcodeSuccess, []string{name + " 30 IN A 192.0.2.1"}, nil, nil))
				case 1:
					c.Set(req, reply(t, req, dns.RcodeServerFailure, nil, nil, nil))
				case 2:
					buf, _ = c.GetStale(buf, req)
				default:
					var res Result
					if buf, res = c.Get(buf, req); res.Found {
						if m := new(dns.Msg); m.Unpack(buf) != nil || m.Question[0].Name != name {
							t.Errorf("corrupt answer for %s", name)
						}
					}
				}
				if i%100 == 0 {
					clk.Advance(time.Second)
				}
			}
		}()
	}
	wg.Wait()
	var entries int64
	for _, s := range c.shards {
		s.mu.RLock()
		if int64(len(s.ring)) != s.entries.Load() || len(s.m) != len(s.ring) {
			t.Errorf("shard bookkeeping: ring %d, map %d, counter %d", len(s.ring), len(s.m), s.entries.Load())
		}
		var b int64
		for i, e := range s.ring {
			b += e.size
			if e.ringIdx != i {
				t.Errorf("ringIdx %d at position %d", e.ringIdx, i)
			}
		}
		if b != s.bytes.Load() {
			t.Errorf("shard bytes %d, sum of entries %d", s.bytes.Load(), b)
		}
		entries += s.entries.Load()
		s.mu.RUnlock()
	}
	if int(entries) != c.Len() {
		t.Errorf("Len %d, entries %d", c.Len(), entries)
	}
}

func TestClose(t *testing.T) {
	c, reg := newTestCache(t, newClock(), nil)
	req := question("close.example.", dns.TypeA, false, false)
	c.Set(req, reply(t, req, dns.RcodeSuccess, []string{"close.example. 60 IN A 192.0.2.1"}, nil, nil))
	for i := range 2 {
		if err := c.Close(); err != nil {
			t.Fatalf("Close #%d: %v", i+1, err)
		}
	}
	if _, res := c.Get(nil, req); res.Found {
		t.Error("Get hit after Close")
	}
	if c.Set(req, reply(t, req, dns.RcodeSuccess, []string{"close.example. 60 IN A 192.0.2.1"}, nil, nil)) {
		t.Error("Set stored after Close")
	}
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 0 {
		t.Errorf("after Close the registry still has %d families (err %v)", len(mfs), err)
	}
	// The registry can take a new cache, as on a config reload.
	c2, err := New(DefaultConfig(), testLogger(t), reg)
	if err != nil {
		t.Fatalf("New on the same registry after Close: %v", err)
	}
	c2.Close()
}

// TestChainFlag: Result.Chain marks answers that follow a CNAME through
// other names, and only those.
func TestChainFlag(t *testing.T) {
	clk := newClock()
	c, _ := newTestCache(t, clk, nil)
	for _, tc := range []struct {
		name   string
		qtype  uint16
		answer []string
		want   bool
	}{
		{"plain.example.", dns.TypeA, []string{"plain.example. 60 IN A 192.0.2.1"}, false},
		{"alias.example.", dns.TypeA, []string{"alias.example. 60 IN CNAME plain.example.", "plain.example. 60 IN A 192.0.2.1"}, true},
		{"alias.example.", dns.TypeCNAME, []string{"alias.example. 60 IN CNAME plain.example."}, false},
	} {
		req := question(tc.name, tc.qtype, false, false)
		if !c.Set(req, reply(t, req, dns.RcodeSuccess, tc.answer, nil, nil)) {
			t.Fatalf("%s %s not stored", tc.name, dns.TypeToString[tc.qtype])
		}
		if _, res := mustGet(t, c, req); res.Chain != tc.want {
			t.Errorf("%s %s: Chain %v, want %v", tc.name, dns.TypeToString[tc.qtype], res.Chain, tc.want)
		}
	}
}
