package upstream

import (
	"context"
	"strings"
	"sync"

	"github.com/miekg/dns"
)

// flightKey identifies identical queries: they get one upstream query.
type flightKey struct {
	name          string // case-folded
	qtype, qclass uint16
	do, cd        bool
}

func keyOf(q *dns.Msg) flightKey {
	k := flightKey{
		name:   strings.ToLower(q.Question[0].Name),
		qtype:  q.Question[0].Qtype,
		qclass: q.Question[0].Qclass,
		cd:     q.CheckingDisabled,
	}
	if opt := q.IsEdns0(); opt != nil {
		k.do = opt.Do()
	}
	return k
}

// flight is one upstream query and the callers waiting for it.
type flight struct {
	done       chan struct{}
	resp       *dns.Msg // immutable once done is closed
	err        error
	dups       int  // callers that joined; guarded by flights.mu
	leaderGone bool // the leader's own context ended the flight
}

// flights coalesces concurrent identical queries (singleflight). The first
// caller runs the query under its own context; others wait for it or for
// their context. If the leader's context ends the flight, a waiter whose
// context is still live runs the query again rather than inherit that error.
type flights struct {
	mu sync.Mutex
	m  map[flightKey]*flight // guarded by mu
	// coalesced counts callers that joined a flight.
	coalesced interface{ Inc() }
	// joined, when set (tests), is called each time a caller joins a flight.
	joined func()
}

// do runs fn once for concurrent callers with the same key. shared reports
// that resp may be seen by other callers: the caller must copy it before
// changing it.
func (g *flights) do(ctx context.Context, key flightKey, fn func(context.Context) (*dns.Msg, error)) (resp *dns.Msg, err error, shared bool) {
	for {
		g.mu.Lock()
		if f, ok := g.m[key]; ok {
			f.dups++
			g.mu.Unlock()
			g.coalesced.Inc()
			if g.joined != nil {
				g.joined()
			}
			select {
			case <-f.done:
				if f.leaderGone && ctx.Err() == nil {
					continue
				}
				return f.resp, f.err, true
			case <-ctx.Done():
				return nil, ioError(ctx, ctx.Err()), false
			}
		}
		f := &flight{done: make(chan struct{})}
		g.m[key] = f
		g.mu.Unlock()

		f.resp, f.err = fn(ctx)
		f.leaderGone = f.err != nil && ctx.Err() != nil

		g.mu.Lock()
		delete(g.m, key)
		shared = f.dups > 0
		g.mu.Unlock()
		close(f.done)
		return f.resp, f.err, shared
	}
}
