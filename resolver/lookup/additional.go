package lookup

import (
	"github.com/kudurru/kudurru/fsm/zone"
	"github.com/miekg/dns"
)

// additional adds the addresses of the names an answer RRset points at:
// NS, MX and SRV targets (RFC 1034 §4.3.2 step 6, RFC 2782), taken from the
// zone that holds the RRset only. Resolvers discard additional records from
// outside the zone they asked (bailiwick scrubbing), so addresses from other
// served zones would cost bytes and buy nothing; NSD behaves the same.
func (l *lookup) additional(z *zone.Zone, s *zone.RRset) {
	switch s.Type {
	case dns.TypeNS:
		l.addTargets(z, s, &l.res.Extra, true)
	case dns.TypeMX, dns.TypeSRV:
		l.addTargets(z, s, &l.res.Extra, false)
	}
}

// addTargets appends to extra the A and AAAA sets of each target of s that
// lies in z. With glue, a target is read straight from z's tree, including
// names below a zone cut (glue, RFC 9471); without, only authoritative data
// counts, wildcards included.
func (l *lookup) addTargets(z *zone.Zone, s *zone.RRset, extra *[]dns.RR, glue bool) {
	for _, rr := range s.RRs {
		var target string
		switch r := rr.(type) {
		case *dns.NS:
			target = r.Ns
		case *dns.MX:
			target = r.Mx
		case *dns.SRV:
			target = r.Target
		}
		t, ok := canonical(target)
		if !ok || !zone.IsSubdomain(z.Origin, t) || l.has(t) {
			continue
		}
		if glue {
			if n := z.Get(t); n != nil {
				l.addAddrs(n, t, extra)
			}
			continue
		}
		if f := find(z, t, zone.Key(t), dns.TypeA); f.kind == kindExact || f.kind == kindWildcard {
			l.addAddrs(f.node, t, extra)
		}
	}
}

// addAddrs appends the A and AAAA sets of n, owned by owner, and reports
// whether there were any.
func (l *lookup) addAddrs(n *zone.Node, owner string, extra *[]dns.RR) bool {
	added := false
	for _, t := range [2]uint16{dns.TypeA, dns.TypeAAAA} {
		if s := n.RRset(t); s != nil {
			*extra = appendSet(*extra, s, owner)
			added = true
		}
	}
	return added
}

// has reports whether the response already carries addresses of name, in
// the answer or the additional section.
func (l *lookup) has(name string) bool {
	for _, sec := range [2][]dns.RR{l.res.Answer, l.res.Extra} {
		for _, rr := range sec {
			h := rr.Header()
			if (h.Rrtype == dns.TypeA || h.Rrtype == dns.TypeAAAA) && zone.EqualNames(h.Name, name) {
				return true
			}
		}
	}
	return false
}
