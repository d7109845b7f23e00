package cache

import (
	"bytes"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// seedMessages are packed responses that exercise the walker: compression,
// OPT, SOA in authority, several sections.
func seedMessages(t testing.TB) [][]byte {
	req := question("Seed.Example.", dns.TypeA, true, false)
	msgs := []*dns.Msg{
		reply(t, req, dns.RcodeSuccess, []string{"seed.example. 300 IN A 192.0.2.1", "seed.example. 300 IN A 192.0.2.2"},
			[]string{"example. 3600 IN NS ns.example."}, []string{"ns.example. 60 IN A 192.0.2.53"}),
		reply(t, req, dns.RcodeNameError, nil,
			[]string{"example. 3600 IN SOA ns.example. host.example. 1 7200 900 1209600 600"}, nil),
		reply(t, req, dns.RcodeSuccess, []string{"seed.example. 30 IN CNAME www.seed.example.", "www.seed.example. 30 IN A 192.0.2.9"}, nil, nil),
		reply(t, req, dns.RcodeServerFailure, nil, nil, nil),
	}
	var out [][]byte
	for _, m := range msgs {
		m.Compress = true
		b, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// FuzzRewrite feeds arbitrary packed messages through the cache's store and
// serve path (Set, then Get with another ID, RD bit, name case and age).
// Whatever the cache stores must come back parseable, with the query's ID and
// name, and every TTL its stored value less the age.
func FuzzRewrite(f *testing.F) {
	for _, b := range seedMessages(f) {
		f.Add(b, uint16(0xBEEF), uint16(7), uint8(1))
	}
	// A root-name question and a record with an empty rdata.
	f.Add([]byte("\x00\x00\x81\x80\x00\x01\x00\x01\x00\x00\x00\x00\x00\x00\x02\x00\x01\x00\x00\x02\x00\x01\x00\x00\x00\x3c\x00\x00"), uint16(1), uint16(0), uint8(0))
	// Crasher (testdata/fuzz/FuzzRewrite/8195c7e9d9be62e4): a compression
	// pointer into an SOA's TTL field, so rewriting the TTL garbled the
	// RNAME. Fixed by storing only messages packed by miekg/dns (cache.pack).
	f.Add([]byte("00\x850\x00\x01\x00\x00\x00\x01\x00\x01\x040000\x000000\x00\x00\x0600000\x10\x00 \x0200\xc00\x040000\xc0\x1e00\x00\x010\x0000000000000000\x0000000000\x00\x00"),
		uint16(48879), uint16(7), uint8(1))

	f.Fuzz(func(t *testing.T, data []byte, id uint16, age uint16, caseBits uint8) {
		in := new(dns.Msg)
		if in.Unpack(data) != nil || len(in.Question) != 1 {
			return
		}
		if b, err := pack(in); err != nil || new(dns.Msg).Unpack(b) != nil {
			return // miekg/dns cannot round-trip it; Set refuses such input
		}
		clk := newClock()
		cfg := DefaultConfig()
		cfg.Shards, cfg.MaxBytes = 1, 1<<20
		c, err := New(cfg, testLogger(t), nil, WithClock(clk.Now))
		if err != nil {
			t.Fatal(err)
		}
		req := new(dns.Msg)
		req.Question = []dns.Question{in.Question[0]}
		if caseBits&keyDO != 0 {
			req.SetEdns0(1232, true)
		}
		req.CheckingDisabled = caseBits&keyCD != 0
		if !c.Set(req, in) {
			return // not cacheable
		}
		var sq query
		if !c.parseQuery(&sq, req) {
			t.Fatal("Set stored an answer to a query Get cannot parse")
		}
		e := c.shardFor(sq.hash).get(&sq)
		if e == nil {
			t.Fatal("stored entry not found")
		}
		stored := new(dns.Msg)
		if err := stored.Unpack(e.wire); err != nil {
			t.Fatalf("stored wire does not parse: %v", err)
		}

		// Query in another letter case, ID and RD bit.
		name := []byte(in.Question[0].Name)
		for i, ch := range name {
			if caseBits&(1<<(i%8)) != 0 && 'a' <= ch && ch <= 'z' {
				name[i] = ch - ('a' - 'A')
			}
		}
		q := req.Copy()
		q.Id = id
		q.RecursionDesired = caseBits&0x80 != 0
		q.Question[0].Name = string(name)

		clk.Advance(time.Duration(age) * time.Second)
		out, res := c.Get(nil, q)
		if fresh := time.Duration(age)*time.Second < time.Duration(e.lifetime); res.Found != fresh {
			t.Fatalf("Get found=%v at age %ds, lifetime %ds", res.Found, age, e.lifetime/1e9)
		}
		if !res.Found {
			return
		}
		got := new(dns.Msg)
		if err := got.Unpack(out); err != nil {
			t.Fatalf("served answer does not parse: %v", err)
		}
		if got.Id != id || got.RecursionDesired != q.RecursionDesired || got.Authoritative {
			t.Fatalf("header id=%#x rd=%v aa=%v, want id=%#x rd=%v aa=false", got.Id, got.RecursionDesired, got.Authoritative, id, q.RecursionDesired)
		}
		if gq, rq := got.Question[0], q.Question[0]; gq.Qtype != rq.Qtype || gq.Qclass != rq.Qclass || gq.Name != rq.Name {
			t.Fatalf("question %v, want %v", gq, rq)
		}
		want, have := ttls(stored), ttls(got)
		if len(want) != len(have) {
			t.Fatalf("served %d records, stored %d", len(have), len(want))
		}
		for i := range want {
			w := uint32(0)
			if want[i] > uint32(age) {
				w = want[i] - uint32(age)
			}
			if have[i] != w {
				t.Fatalf("record %d TTL %d, want %d (stored %d, age %d)", i, have[i], w, want[i], age)
			}
		}
		if so, gopt := stored.IsEdns0(), got.IsEdns0(); (so == nil) != (gopt == nil) || so != nil && so.Hdr.Ttl != gopt.Hdr.Ttl {
			t.Fatalf("OPT changed: stored %v, served %v", so, gopt)
		}
	})
}

// FuzzLoad feeds arbitrary blobs to the dump decoder: no panic, and a blob it
// refuses leaves the cache as it was.
func FuzzLoad(f *testing.F) {
	clk := newClock()
	for _, gz := range []bool{true, false} {
		f.Add(dump(f, warmCache(f, clk, gz)))
	}
	f.Add([]byte(dumpMagic))
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, blob []byte) {
		cfg := DefaultConfig()
		cfg.Shards, cfg.MaxBytes = 1, 1<<20
		c, err := New(cfg, testLogger(t), nil, WithClock(clk.Now))
		if err != nil {
			t.Fatal(err)
		}
		req := question("keep.example.", dns.TypeA, false, false)
		c.Set(req, reply(t, req, dns.RcodeSuccess, []string{"keep.example. 600 IN A 192.0.2.9"}, nil, nil))
		before := c.Bytes()
		st, err := c.Load(bytes.NewReader(blob), clk.Now())
		if err != nil {
			if c.Len() != 1 || c.Bytes() != before {
				t.Fatalf("refused load changed the cache: %v", err)
			}
			return
		}
		if c.Len() > 1+st.Loaded {
			t.Fatalf("Len %d after loading %d entries", c.Len(), st.Loaded)
		}
		// Every loaded entry must serve a parseable answer.
		for _, s := range c.shards {
			for _, e := range s.ring {
				var q query
				q.qnameLen = copy(q.qname[:], e.wire[headerLen:e.qnameEnd])
				if m := new(dns.Msg); m.Unpack(e.render(nil, &q, clk.Now().UnixNano(), false, 0)) != nil {
					t.Fatalf("loaded entry does not parse")
				}
			}
		}
	})
}
