package resolver

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
)

// panicLogEvery is the least time between two panic logs; panics in
// between are counted and reported with the next log, so a query of death
// sent in a flood cannot flood the log.
const panicLogEvery = time.Second

// recoverStage turns a panic in a later stage into SERVFAIL for that query
// (written by the server unless a reply went out already), logs it once
// with its stack, and lets the server go on serving.
func (s *Server) recoverStage(next Handler) Handler {
	return HandlerFunc(func(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (rcode int, err error) {
		defer func() {
			if p := recover(); p != nil {
				s.metrics.panics.Inc()
				s.logPanic(p, r)
				rcode, err = dns.RcodeServerFailure, fmt.Errorf("panic in query chain: %v", p)
			}
		}()
		return next.ServeDNS(ctx, w, r)
	})
}

// panicLog rate-limits panic logs. Its fields are atomics: any query
// goroutine may panic.
type panicLog struct {
	last       atomic.Int64 // unix nanoseconds of the last log
	suppressed atomic.Int64 // panics not logged since
}

func (s *Server) logPanic(p any, r *dns.Msg) {
	now := time.Now().UnixNano()
	last := s.panics.last.Load()
	if now-last < int64(panicLogEvery) || !s.panics.last.CompareAndSwap(last, now) {
		s.panics.suppressed.Add(1)
		return
	}
	args := []any{"panic", fmt.Sprint(p), "stack", string(debug.Stack()),
		"suppressed", s.panics.suppressed.Swap(0)}
	if len(r.Question) > 0 {
		q := r.Question[0]
		args = append(args, "qname", q.Name, "qtype", dns.Type(q.Qtype).String())
	}
	s.log.Error("query handler panicked; answered SERVFAIL", args...)
}
