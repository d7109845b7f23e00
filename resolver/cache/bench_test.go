package cache

import (
	"fmt"
	"testing"

	"github.com/miekg/dns"
)

func benchCache(b *testing.B) (*Cache, []*dns.Msg) {
	// The real clock, as in production (the test clock takes a mutex).
	c, err := New(DefaultConfig(), testLogger(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	var reqs []*dns.Msg
	for i := range 1024 {
		name := fmt.Sprintf("host%d.bench.example.", i)
		req := question(name, dns.TypeA, true, false)
		resp := reply(b, req, dns.RcodeSuccess, []string{name + " 300 IN A 192.0.2.1", name + " 300 IN A 192.0.2.2"},
			[]string{"bench.example. 3600 IN NS ns1.bench.example."}, nil)
		if !c.Set(req, resp) {
			b.Fatal("Set refused")
		}
		reqs = append(reqs, req)
	}
	return c, reqs
}

func BenchmarkGetHit(b *testing.B) {
	c, reqs := benchCache(b)
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var res Result
		buf, res = c.Get(buf, reqs[i&1023])
		if !res.Found {
			b.Fatal("miss")
		}
	}
}

func BenchmarkGetHitParallel(b *testing.B) {
	c, reqs := benchCache(b)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		buf := make([]byte, 0, 512)
		i := 0
		for pb.Next() {
			var res Result
			buf, res = c.Get(buf, reqs[i&1023])
			if !res.Found {
				b.Fatal("miss")
			}
			i++
		}
	})
}

func BenchmarkGetMiss(b *testing.B) {
	c, _ := benchCache(b)
	req := question("absent.bench.example.", dns.TypeA, true, false)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, res := c.Get(nil, req); res.Found {
			b.Fatal("hit")
		}
	}
}

func BenchmarkSet(b *testing.B) {
	c, reqs := benchCache(b)
	resps := make([]*dns.Msg, len(reqs))
	for i, req := range reqs {
		name := req.Question[0].Name
		resps[i] = reply(b, req, dns.RcodeSuccess, []string{name + " 300 IN A 192.0.2.1", name + " 300 IN A 192.0.2.2"},
			[]string{"bench.example. 3600 IN NS ns1.bench.example."}, nil)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !c.Set(reqs[i&1023], resps[i&1023]) {
			b.Fatal("Set refused")
		}
	}
}
