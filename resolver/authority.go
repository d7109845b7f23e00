package resolver

import (
	"context"

	"github.com/kudurru/kudurru/resolver/lookup"
	"github.com/miekg/dns"
)

// authorityStage answers from the zones of the current View. The View is
// loaded once per query, so a query sees one consistent state, and a change
// is visible to the next query as soon as it is published. Names outside
// every zone go to the next stage. Results are remembered per View
// (memo.go): res may be shared, so it is never modified.
func (s *Server) authorityStage(next Handler) Handler {
	return HandlerFunc(func(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
		q := r.Question[0]
		if q.Qclass != dns.ClassINET {
			return next.ServeDNS(ctx, w, r)
		}
		res, tmpl := s.memo.find(s.deps.Zones.Current(), q)
		if res.Outcome == lookup.NotAuthoritative {
			return next.ServeDNS(ctx, w, r)
		}
		if res.Dangling != "" && s.cfg.forwarding() {
			// The chain leaves the zones: the forwarding stage completes
			// it or writes it as it is (chase.go). A copy, so that res
			// stays on the stack of every other query.
			d := res
			return next.ServeDNS(withDangling(ctx, &d), w, r)
		}
		if rw, ok := w.(*responseWriter); ok && tmpl != nil && r.Opcode == dns.OpcodeQuery {
			if done, err := rw.writeTemplate(tmpl, r); done {
				return res.Rcode, err
			}
		}
		m := new(dns.Msg)
		m.SetReply(r)
		m.Authoritative = res.Authoritative
		m.Rcode = res.Rcode
		m.Answer, m.Ns, m.Extra = res.Answer, res.Ns, res.Extra
		return res.Rcode, w.WriteMsg(m)
	})
}
