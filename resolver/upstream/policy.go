package upstream

import (
	"math/rand/v2"
	"slices"
	"sync/atomic"
)

// group is the upstream set of one forwarding zone.
type group struct {
	zone string
	ups  []*upstream
	next atomic.Uint64 // round-robin position
}

// order returns the upstreams to try for one query, in policy order.
// Upstreams marked down are left out, unless every one is down: then all
// are tried, so that a wrong health verdict cannot black-hole a zone.
func (g *group) order(p Policy) []*upstream {
	cands := make([]*upstream, 0, len(g.ups))
	for _, u := range g.ups {
		if u.healthy.Load() {
			cands = append(cands, u)
		}
	}
	if len(cands) == 0 {
		cands = append(cands, g.ups...)
	}
	switch p {
	case Random:
		rand.Shuffle(len(cands), func(i, j int) { cands[i], cands[j] = cands[j], cands[i] })
	case RoundRobin:
		// Rotate left by a counter shared by all queries of the zone.
		n := int(g.next.Add(1)-1) % len(cands)
		slices.Reverse(cands[:n])
		slices.Reverse(cands[n:])
		slices.Reverse(cands)
	case LowestLatency:
		slices.SortStableFunc(cands, func(a, b *upstream) int {
			la, lb := a.latency(), b.latency()
			switch {
			case la < lb:
				return -1
			case la > lb:
				return 1
			}
			return 0
		})
	case Sequential:
	}
	return cands
}
