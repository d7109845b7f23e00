package resolver

import (
	"github.com/miekg/dns"
)

// truncate fits m into limit bytes, working on whole RRsets.
//
// Additional-section RRsets are optional (RFC 2181 §9): they are dropped
// from the end without setting TC, except the glue of a referral, whose
// loss sets TC (RFC 9471). When the answer and authority sections do not
// fit, TC=1 is set and the message keeps the leading RRsets that fit, with
// an empty additional section apart from OPT; the client retries over TCP
// (RFC 7766).
func truncate(m *dns.Msg, limit int) {
	m.Compress = true
	var opt dns.RR
	var extra []dns.RR
	for _, rr := range m.Extra {
		if rr.Header().Rrtype == dns.TypeOPT {
			opt = rr
		} else {
			extra = append(extra, rr)
		}
	}
	withOPT := func(rrs []dns.RR) []dns.RR {
		out := make([]dns.RR, 0, len(rrs)+1)
		out = append(out, rrs...)
		if opt != nil {
			out = append(out, opt)
		}
		return out
	}
	required, optional := splitGlue(m, extra)
	m.Extra = withOPT(required)
	if m.Len() > limit {
		truncateHard(m, limit, withOPT(nil))
		return
	}
	kept := required
	for _, set := range rrsets(optional) {
		m.Extra = withOPT(append(kept[:len(kept):len(kept)], set...))
		if m.Len() > limit {
			break
		}
		kept = append(kept[:len(kept):len(kept)], set...)
	}
	m.Extra = withOPT(kept)
}

// truncateHard sets TC and keeps the leading whole RRsets of the answer and
// authority sections that fit.
func truncateHard(m *dns.Msg, limit int, extra []dns.RR) {
	m.Truncated = true
	answer, ns := m.Answer, m.Ns
	m.Answer, m.Ns, m.Extra = nil, nil, extra
	for _, sec := range []struct {
		src []dns.RR
		dst *[]dns.RR
	}{{answer, &m.Answer}, {ns, &m.Ns}} {
		for _, set := range rrsets(sec.src) {
			before := *sec.dst
			*sec.dst = append(before[:len(before):len(before)], set...)
			if m.Len() > limit {
				*sec.dst = before
				return
			}
		}
	}
}

// splitGlue separates the glue a referral needs (addresses of name servers
// at or below the delegated name) from the rest of the additional section.
func splitGlue(m *dns.Msg, extra []dns.RR) (required, optional []dns.RR) {
	var cut string
	if !m.Authoritative && len(m.Answer) == 0 {
		for _, rr := range m.Ns {
			if rr.Header().Rrtype == dns.TypeNS {
				cut = rr.Header().Name
				break
			}
		}
	}
	if cut == "" {
		return nil, extra
	}
	for _, rr := range extra {
		t := rr.Header().Rrtype
		if (t == dns.TypeA || t == dns.TypeAAAA) && dns.IsSubDomain(cut, rr.Header().Name) {
			required = append(required, rr)
		} else {
			optional = append(optional, rr)
		}
	}
	return required, optional
}

// rrsets splits a section into runs of records of one owner and type.
func rrsets(rrs []dns.RR) [][]dns.RR {
	var out [][]dns.RR
	start := 0
	for i := 1; i <= len(rrs); i++ {
		if i == len(rrs) || !sameSet(rrs[i-1], rrs[i]) {
			out = append(out, rrs[start:i])
			start = i
		}
	}
	return out
}

func sameSet(a, b dns.RR) bool {
	ha, hb := a.Header(), b.Header()
	return ha.Rrtype == hb.Rrtype && ha.Class == hb.Class && dns.CanonicalName(ha.Name) == dns.CanonicalName(hb.Name)
}
