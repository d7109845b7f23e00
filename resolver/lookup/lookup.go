package lookup

import (
	"strings"

	"github.com/kudurru/kudurru/fsm/zone"
	"github.com/miekg/dns"
)

// MaxChain is the number of CNAME records Lookup follows for one question
// before it stops and returns the chain as it is. A chain that comes back to
// a name it has passed (a loop) stops at once.
const MaxChain = 12

// Outcome is the kind of answer a Result holds.
type Outcome uint8

// The outcomes of a lookup.
const (
	// NotAuthoritative: no zone of the View holds the name. Nothing is in
	// the Result; the caller hands the question to its next stage (REFUSED
	// while kudurru does not forward).
	NotAuthoritative Outcome = iota
	// Success: the answer section holds the data asked for, possibly after
	// a CNAME chain, or a chain whose last target lies outside every served
	// zone (see Result.Dangling).
	Success
	// NoData: the name exists but holds no data of the type asked for.
	NoData
	// NXDomain: the name does not exist.
	NXDomain
	// Referral: the name lies at or below a zone cut; the authority section
	// holds the delegation's NS set and the additional section its glue.
	Referral
)

var outcomeNames = [...]string{"not_authoritative", "success", "nodata", "nxdomain", "referral"}

func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "unknown"
}

// Result is the answer to one question. The records are shared with the View
// unless Lookup had to change them; callers must not modify them.
type Result struct {
	Outcome       Outcome
	Rcode         int  // dns.RcodeSuccess or dns.RcodeNameError; REFUSED for NotAuthoritative
	Authoritative bool // the AA bit
	Answer        []dns.RR
	Ns            []dns.RR
	Extra         []dns.RR
	// Zone is the zone that answered the question's own name; nil when
	// Outcome is NotAuthoritative.
	Zone *zone.Zone
	// Dangling is the canonical target of the last CNAME when the chain
	// leaves the served zones, for a later stage to resolve; "" otherwise.
	Dangling string
}

// Lookup answers q from the zones of v. q.Name may use any letter case; the
// records owned by that name carry it as spelled. Only class IN data is
// served: the caller checks the class. Lookup never modifies v and is safe
// for concurrent use.
func Lookup(v *zone.View, q dns.Question) Result {
	qname, ok := canonical(q.Name)
	if !ok {
		return Result{Outcome: NotAuthoritative, Rcode: dns.RcodeRefused}
	}
	z := v.FindZone(qname)
	if z == nil {
		return Result{Outcome: NotAuthoritative, Rcode: dns.RcodeRefused}
	}
	// The DS set of a zone lives in its parent (RFC 4035 §3.1.4.1): when
	// the parent is served too, answer from the parent side of the cut.
	if q.Qtype == dns.TypeDS && qname == z.Origin {
		if p := zone.Parent(qname); p != "" {
			if pz := v.FindZone(p); pz != nil {
				z = pz
			}
		}
	}
	l := lookup{v: v, qtype: q.Qtype}
	l.res.Zone = z
	l.res.Authoritative = true
	l.run(z, qname, q.Name)
	return l.res
}

// lookup is the state of one Lookup call.
type lookup struct {
	v     *zone.View
	qtype uint16
	res   Result
}

// run resolves name (canonical; spelled as owner) in z and follows CNAMEs.
func (l *lookup) run(z *zone.Zone, name, owner string) {
	var seen [MaxChain + 1]string
	hops := 0
	for {
		seen[hops] = name
		f := find(z, name, zone.Key(name), l.qtype)
		switch f.kind {
		case kindCut:
			if hops == 0 {
				l.res.Authoritative = false
			}
			l.res.Outcome = Referral
			ns := f.node.RRset(dns.TypeNS)
			l.res.Ns = appendSet(l.res.Ns, ns, ns.Name)
			l.addTargets(z, ns, &l.res.Extra, true)
			return
		case kindNX:
			l.negative(z, NXDomain, dns.RcodeNameError)
			return
		case kindEmpty:
			l.negative(z, NoData, dns.RcodeSuccess)
			return
		}
		// kindExact or kindWildcard: f.node holds the data, owner names it.
		node := f.node
		if l.qtype == dns.TypeANY {
			// RFC 8482 §4.1: one RRset, not the whole node: the SOA at
			// an apex, else the first in type order (a CNAME when the
			// name is an alias). NSD chooses the same way.
			s := node.RRset(dns.TypeSOA)
			if s == nil {
				s = node.RRsets()[0]
			}
			l.res.Answer = appendSet(l.res.Answer, s, owner)
			l.res.Outcome = Success
			l.additional(z, s)
			return
		}
		if s := node.RRset(l.qtype); s != nil {
			l.res.Answer = appendSet(l.res.Answer, s, owner)
			l.res.Outcome = Success
			l.additional(z, s)
			return
		}
		c := node.RRset(dns.TypeCNAME)
		if c == nil {
			l.negative(z, NoData, dns.RcodeSuccess)
			return
		}
		l.res.Answer = appendSet(l.res.Answer, c, owner)
		l.res.Outcome = Success
		spelled := c.RRs[0].(*dns.CNAME).Target
		target, ok := canonical(spelled)
		if !ok {
			return
		}
		hops++
		if hops > MaxChain || looped(seen[:hops], target) {
			return
		}
		tz := l.v.FindZone(target)
		if tz == nil {
			l.res.Dangling = target
			return
		}
		z, name, owner = tz, target, spelled
	}
}

func looped(seen []string, name string) bool {
	for _, s := range seen {
		if s == name {
			return true
		}
	}
	return false
}

// negative ends the lookup with no data: the zone's SOA goes into the
// authority section with the negative TTL of RFC 2308 §5, the smaller of the
// SOA's own TTL and its MINIMUM field.
func (l *lookup) negative(z *zone.Zone, o Outcome, rcode int) {
	l.res.Outcome = o
	l.res.Rcode = rcode
	soa := z.SOA()
	if soa == nil {
		return
	}
	var rr dns.RR = soa
	if soa.Minttl < soa.Hdr.Ttl {
		cp := dns.Copy(soa)
		cp.Header().Ttl = soa.Minttl
		rr = cp
	}
	l.res.Ns = append(l.res.Ns, rr)
}

// appendSet appends the records of s to dst, owned by owner. Records are
// shared when owner is spelled as the set's canonical name, and copied with
// the new owner otherwise (another letter case, or a wildcard expansion).
func appendSet(dst []dns.RR, s *zone.RRset, owner string) []dns.RR {
	if owner == s.Name {
		return append(dst, s.RRs...)
	}
	for _, rr := range s.RRs {
		cp := dns.Copy(rr)
		cp.Header().Name = owner
		dst = append(dst, cp)
	}
	return dst
}

// canonical returns name lower-cased and fully qualified, allocating only
// when it must. ok is false for a name that is not a valid domain name.
func canonical(name string) (string, bool) {
	if name == "" {
		return "", false
	}
	if strings.IndexByte(name, '\\') >= 0 || !dns.IsFqdn(name) {
		c, err := zone.CanonicalName(name)
		return c, err == nil
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; 'A' <= c && c <= 'Z' {
			return strings.ToLower(name), true
		}
	}
	return name, true
}
