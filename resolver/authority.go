package resolver

import (
	"context"

	"github.com/kudurru/kudurru/resolver/lookup"
	"github.com/miekg/dns"
)

// authorityStage answers from the zones of the current View. The View is
// loaded once per query, so a query sees one consistent state, and a change
// is visible to the next query as soon as it is published. Names outside
// every zone go to the next stage.
func (s *Server) authorityStage(next Handler) Handler {
	return HandlerFunc(func(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
		q := r.Question[0]
		if q.Qclass != dns.ClassINET {
			return next.ServeDNS(ctx, w, r)
		}
		res := lookup.Lookup(s.deps.Zones.Current(), q)
		if res.Outcome == lookup.NotAuthoritative {
			return next.ServeDNS(ctx, w, r)
		}
		m := new(dns.Msg)
		m.SetReply(r)
		m.Authoritative = res.Authoritative
		m.Rcode = res.Rcode
		m.Answer, m.Ns, m.Extra = res.Answer, res.Ns, res.Extra
		return res.Rcode, w.WriteMsg(m)
	})
}
