package resolver

import (
	"context"

	"github.com/miekg/dns"
)

// ingressStage checks that a message is a query this server handles before
// any stage looks at its question. It runs after miekg/dns has parsed the
// message (an unparsable one got FORMERR, or silence when even its header
// was unreadable) and after the accept function dropped responses.
func (s *Server) ingressStage(next Handler) Handler {
	return HandlerFunc(func(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
		switch r.Opcode {
		case dns.OpcodeQuery:
		case dns.OpcodeNotify, dns.OpcodeUpdate:
			// Hook: the NOTIFY (RFC 1996) and UPDATE (RFC 2136) stages
			// branch off here, before the checks below, which are the
			// rules of QUERY.
			return dns.RcodeNotImplemented, nil
		default:
			return dns.RcodeNotImplemented, nil
		}
		// RFC 9619: exactly one question. A query carries no answer or
		// authority records, and is never truncated (NSD agrees).
		if len(r.Question) != 1 || len(r.Answer) != 0 || len(r.Ns) != 0 || r.Truncated {
			return dns.RcodeFormatError, nil
		}
		// RFC 6891 §6.1.1: at most one OPT, owned by the root.
		var opt *dns.OPT
		for _, rr := range r.Extra {
			if o, ok := rr.(*dns.OPT); ok {
				if opt != nil || o.Hdr.Name != "." {
					return dns.RcodeFormatError, nil
				}
				opt = o
			}
		}
		if opt != nil && opt.Version() != 0 {
			// RFC 6891 §6.1.3: BADVERS, with our OPT of version 0 (the
			// writer adds it and packs the extended rcode into it).
			m := errorReply(r, dns.RcodeBadVers)
			return dns.RcodeBadVers, w.WriteMsg(m)
		}
		q := r.Question[0]
		switch q.Qclass {
		case dns.ClassINET, dns.ClassCHAOS:
		default:
			return dns.RcodeRefused, nil
		}
		switch q.Qtype {
		case dns.TypeAXFR, dns.TypeIXFR:
			// Hook: zone transfers (TCP only, with TSIG) go here.
			return dns.RcodeRefused, nil
		case dns.TypeOPT, dns.TypeTSIG, dns.TypeTKEY, dns.TypeMAILA, dns.TypeMAILB:
			// Meta types that cannot be asked for as data.
			return dns.RcodeFormatError, nil
		}
		return next.ServeDNS(ctx, w, r)
	})
}
