package upstream

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/miekg/dns"
)

func TestPolicies(t *testing.T) {
	servers := []*dnsServer{startDNS(t, answerA("192.0.2.1")), startDNS(t, answerA("192.0.2.2")), startDNS(t, answerA("192.0.2.3"))}
	addrs := make([]string, len(servers))
	for i, s := range servers {
		addrs[i] = s.url("udp")
	}
	counts := func() []int64 {
		out := make([]int64, len(servers))
		for i, s := range servers {
			out[i] = s.udpQueries.Swap(0)
		}
		return out
	}
	run := func(t *testing.T, p Policy, n int) []int64 {
		cfg := testConfig(map[string][]string{".": addrs})
		cfg.Policy = p
		f, _ := newForwarder(t, cfg, nil)
		counts()
		for i := range n {
			if _, err := f.Exchange(context.Background(), query(fmt.Sprintf("p%d.example.", i), dns.TypeA)); err != nil {
				t.Fatal(err)
			}
		}
		return counts()
	}
	t.Run("sequential", func(t *testing.T) {
		if got := run(t, Sequential, 9); got[0] != 9 {
			t.Errorf("counts %v, want all on the first", got)
		}
	})
	t.Run("round_robin", func(t *testing.T) {
		if got := run(t, RoundRobin, 9); got[0] != 3 || got[1] != 3 || got[2] != 3 {
			t.Errorf("counts %v, want 3 each", got)
		}
	})
	t.Run("random", func(t *testing.T) {
		got := run(t, Random, 90)
		for i, n := range got {
			if n == 0 { // probability 3 × (2/3)^90
				t.Errorf("upstream %d never chosen: %v", i, got)
			}
		}
	})
	t.Run("lowest_latency", func(t *testing.T) {
		cfg := testConfig(map[string][]string{".": addrs})
		cfg.Policy = LowestLatency
		f, _ := newForwarder(t, cfg, nil)
		g := f.groups["."]
		g.ups[0].observe(30 * time.Millisecond)
		g.ups[1].observe(2 * time.Millisecond)
		g.ups[2].observe(9 * time.Millisecond)
		counts()
		for i := range 5 {
			if _, err := f.Exchange(context.Background(), query(fmt.Sprintf("l%d.example.", i), dns.TypeA)); err != nil {
				t.Fatal(err)
			}
		}
		// Real loopback answers take far less than 9 ms, so the
		// fastest stays fastest.
		if got := counts(); got[1] != 5 {
			t.Errorf("counts %v, want all on the fastest (second)", got)
		}
		order := g.order(LowestLatency)
		if order[0] != g.ups[1] || order[1] != g.ups[2] || order[2] != g.ups[0] {
			t.Errorf("order %s, %s, %s; want by latency", order[0].name, order[1].name, order[2].name)
		}
		fresh := &upstream{name: "unmeasured"}
		fresh.healthy.Store(true)
		g2 := &group{ups: append([]*upstream{}, g.ups[0], fresh)}
		if got := g2.order(LowestLatency)[0]; got != fresh {
			t.Errorf("an unmeasured upstream should be tried first, got %s", got.name)
		}
	})
	t.Run("down upstreams are skipped unless all are down", func(t *testing.T) {
		cfg := testConfig(map[string][]string{".": addrs})
		f, _ := newForwarder(t, cfg, nil)
		g := f.groups["."]
		g.ups[0].healthy.Store(false)
		if got := g.order(Sequential); len(got) != 2 || got[0] != g.ups[1] {
			t.Errorf("order skips down: got %d upstreams", len(got))
		}
		for _, u := range g.ups {
			u.healthy.Store(false)
		}
		if got := g.order(Sequential); len(got) != 3 {
			t.Errorf("all down: %d upstreams tried, want all 3", len(got))
		}
	})
}
