package resolver

import (
	"context"

	"github.com/kudurru/kudurru/resolver/lookup"
	"github.com/miekg/dns"
)

// A CNAME chain that leaves the served zones (lookup.Result.Dangling) is
// completed by the forwarding stage for clients the recursion ACL allows,
// as a resolver with local zones does (Unbound's local-data, CoreDNS file
// with an upstream): the chain from the zones, then the answer for its
// target from the cache or the upstreams. Everyone else, and everyone when
// the target cannot be resolved, gets the zones' part alone, as an
// authoritative-only server answers: correct data that a recursive client
// can complete itself.
//
// The completed answer has AA=0 and RA=1: part of it is not ours (RFC 1035
// §4.1.1 ties AA to the first owner name, but downstream caches rank the
// whole answer by it, RFC 2181 §5.4.1). Its rcode is the target's (RFC
// 6604); a negative target brings its SOA for negative caching. The
// combined reply is never cached, only the target's answer is, so a zone
// change is visible at once.

// danglingKey carries the authority stage's Result for a chain that leaves
// the zones to the forwarding stage.
type danglingKey struct{}

// withDangling hands res, whose Dangling is set, to the next stage.
func withDangling(ctx context.Context, res *lookup.Result) context.Context {
	return context.WithValue(ctx, danglingKey{}, res)
}

// danglingFrom returns the Result handed on by the authority stage, or nil.
func danglingFrom(ctx context.Context) *lookup.Result {
	res, _ := ctx.Value(danglingKey{}).(*lookup.Result)
	return res
}

// authorityMsg is the reply the authority stage writes for res.
func authorityMsg(r *dns.Msg, res *lookup.Result) *dns.Msg {
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = res.Authoritative
	m.Rcode = res.Rcode
	m.Answer, m.Ns, m.Extra = res.Answer, res.Ns, res.Extra
	return m
}

// writeAuthority writes the zones' answer as it is.
func writeAuthority(w dns.ResponseWriter, r *dns.Msg, res *lookup.Result) (int, error) {
	return res.Rcode, w.WriteMsg(authorityMsg(r, res))
}

// chase completes the chain of res with the answer for its target.
func (f *forwarding) chase(ctx context.Context, w dns.ResponseWriter, r *dns.Msg, res *lookup.Result) (int, error) {
	q := f.upstreamQuery(r, res.Dangling, r.Question[0].Qtype)
	tail := f.resolveMsg(ctx, q)
	if tail == nil || (tail.Rcode != dns.RcodeSuccess && tail.Rcode != dns.RcodeNameError) {
		f.m.chasePartial.Inc()
		return writeAuthority(w, r, res)
	}
	f.m.chaseDone.Inc()
	m := authorityMsg(r, res)
	m.Authoritative = false
	m.RecursionAvailable = true
	m.Rcode = tail.Rcode
	// The View's slices are shared: build new ones.
	m.Answer = append(append(make([]dns.RR, 0, len(res.Answer)+len(tail.Answer)), res.Answer...), tail.Answer...)
	m.Ns, m.Extra = nil, nil
	if tail.Rcode == dns.RcodeNameError || !answers(tail.Answer, q.Question[0].Qtype) {
		for _, rr := range tail.Ns {
			if rr.Header().Rrtype == dns.TypeSOA {
				m.Ns = append(m.Ns, rr)
			}
		}
	}
	return m.Rcode, w.WriteMsg(m)
}

// resolveMsg answers q (a query built by upstreamQuery) from the cache or
// the upstreams, stale data included when they fail; nil when nothing
// answers.
func (f *forwarding) resolveMsg(ctx context.Context, q *dns.Msg) *dns.Msg {
	bp := wireBufs.Get().(*[]byte)
	defer wireBufs.Put(bp)
	b, res := f.cache.Get((*bp)[:0], q)
	if !res.Found {
		resp, err := f.fetch(ctx, q)
		if err == nil {
			return resp
		}
		if b, res = f.cache.GetStale((*bp)[:0], q); !res.Found {
			return nil
		}
	} else if res.Prefetch {
		f.prefetch(q)
	}
	m := new(dns.Msg)
	if m.Unpack(b) != nil {
		return nil
	}
	if res.Chain && spliceZones(f.zones.Current(), m) {
		f.m.spliced.Inc() // a chain back into a zone created since it was cached
	}
	return m
}

// answers reports whether rrs hold a record of qtype (any record for ANY).
func answers(rrs []dns.RR, qtype uint16) bool {
	for _, rr := range rrs {
		if qtype == dns.TypeANY || rr.Header().Rrtype == qtype {
			return true
		}
	}
	return false
}
