package zone

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/miekg/dns"
)

// ErrInvalid marks a change or record set that breaks a zone rule. Errors
// returned by Normalize, Apply and NewZone wrap it.
var ErrInvalid = errors.New("invalid zone data")

// Op is the kind of a Change.
type Op uint8

// The kinds of change.
const (
	OpReplace     Op = 1 // replace the RRset Name/Type with RRs
	OpDeleteRRset Op = 2 // delete the RRset Name/Type
	OpDeleteName  Op = 3 // delete every RRset at Name
	OpAdd         Op = 4 // add RRs to the RRset Name/Type (creating it)
	OpRemove      Op = 5 // remove RRs from the RRset Name/Type
	OpCheck       Op = 6 // precondition: the RRset Name/Type holds exactly RRs (none: absent)
)

// ErrPrecondition marks a batch whose OpCheck did not hold: a
// compare-and-set that lost. Apply wraps it; the zone is unchanged.
var ErrPrecondition = errors.New("precondition failed")

func (o Op) String() string {
	switch o {
	case OpReplace:
		return "replace"
	case OpDeleteRRset:
		return "delete"
	case OpDeleteName:
		return "delete_name"
	case OpAdd:
		return "add"
	case OpRemove:
		return "remove"
	case OpCheck:
		return "check"
	}
	return fmt.Sprintf("op%d", uint8(o))
}

// Change is one edit of a zone. A list of changes is applied atomically.
type Change struct {
	Op   Op
	Name string   // owner name, inside the zone
	Type uint16   // for OpReplace and OpDeleteRRset
	TTL  uint32   // for OpReplace: the set's TTL (0: take the first record's)
	RRs  []dns.RR // for OpReplace: the new records (none: delete the set)
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// forbiddenType reports types that cannot be stored in a zone.
func forbiddenType(t uint16) bool {
	switch t {
	case dns.TypeNone, dns.TypeOPT, dns.TypeTSIG, dns.TypeTKEY, dns.TypeANY,
		dns.TypeAXFR, dns.TypeIXFR, dns.TypeMAILA, dns.TypeMAILB:
		return true
	}
	return false
}

// Normalize checks a change against the zone origin and returns it in
// canonical form: the owner lower-cased and qualified, every record copied
// with class IN, the owner name and one TTL, duplicates dropped. It checks
// what can be checked without the zone's contents; Apply checks the rest.
func Normalize(origin string, c Change) (Change, error) {
	name, err := CanonicalName(c.Name)
	if err != nil {
		return Change{}, invalidf("%v", err)
	}
	if !IsSubdomain(origin, name) {
		return Change{}, invalidf("name %s is outside zone %s", name, origin)
	}
	out := Change{Op: c.Op, Name: name, Type: c.Type}
	switch c.Op {
	case OpDeleteName:
		out.Type = 0
		if name == origin {
			return Change{}, invalidf("cannot delete the zone apex %s; delete the zone instead", name)
		}
		return out, nil
	case OpDeleteRRset, OpReplace, OpAdd, OpRemove, OpCheck:
	default:
		return Change{}, invalidf("unknown change operation %d", c.Op)
	}
	if forbiddenType(c.Type) {
		return Change{}, invalidf("type %s cannot be stored in a zone", dns.TypeToString[c.Type])
	}
	if (c.Op == OpAdd || c.Op == OpRemove) && len(c.RRs) == 0 {
		return Change{}, invalidf("%s of %s %s names no records", c.Op, name, dns.TypeToString[c.Type])
	}
	if c.Op == OpCheck && len(c.RRs) == 0 {
		return out, nil
	}
	if c.Op == OpDeleteRRset || len(c.RRs) == 0 {
		if name == origin && (c.Type == dns.TypeSOA || c.Type == dns.TypeNS) {
			return Change{}, invalidf("cannot delete the %s set at the zone apex", dns.TypeToString[c.Type])
		}
		out.Op = OpDeleteRRset
		return out, nil
	}
	ttl := c.TTL
	if ttl == 0 {
		ttl = c.RRs[0].Header().Ttl
	}
	out.TTL = ttl
	for _, rr := range c.RRs {
		if rr == nil {
			return Change{}, invalidf("nil record")
		}
		h := rr.Header()
		if h.Rrtype != c.Type {
			return Change{}, invalidf("record %q has type %s in a %s set", rr.String(), dns.TypeToString[h.Rrtype], dns.TypeToString[c.Type])
		}
		if h.Class != dns.ClassINET {
			return Change{}, invalidf("record %q: only class IN is served", rr.String())
		}
		own, err := CanonicalName(h.Name)
		if err != nil || own != name {
			return Change{}, invalidf("record %q does not belong to name %s", rr.String(), name)
		}
		if _, ok := rr.(*dns.RFC3597); ok {
			return Change{}, invalidf("record %q: unknown record type", rr.String())
		}
		cp := dns.Copy(rr)
		ch := cp.Header()
		ch.Name, ch.Ttl, ch.Rdlength = name, ttl, 0
		if err := roundTrips(cp); err != nil {
			return Change{}, invalidf("record %q: %v", rr.String(), err)
		}
		if !slices.ContainsFunc(out.RRs, func(o dns.RR) bool { return dns.IsDuplicate(o, cp) }) {
			out.RRs = append(out.RRs, cp)
		}
	}
	switch c.Type {
	case dns.TypeSOA:
		if name != origin {
			return Change{}, invalidf("SOA record at %s: a SOA belongs only at the zone apex %s", name, origin)
		}
		if len(out.RRs) != 1 {
			return Change{}, invalidf("a zone has exactly one SOA record, got %d", len(out.RRs))
		}
	case dns.TypeCNAME:
		if name == origin {
			return Change{}, invalidf("CNAME at the zone apex %s is not allowed", name)
		}
		if len(out.RRs) != 1 {
			return Change{}, invalidf("CNAME at %s: a name has at most one CNAME record, got %d", name, len(out.RRs))
		}
	}
	return out, nil
}

// roundTrips checks that a record survives wire encoding unchanged: the
// log, snapshots and DNS answers carry records in wire format. The zone-file
// parser accepts some records that do not (an SOA with empty rdata, meant
// for DNS UPDATE, packs to bytes that do not unpack).
func roundTrips(rr dns.RR) error {
	buf := make([]byte, dns.Len(rr)+64)
	off, err := dns.PackRR(rr, buf, 0, nil, false)
	if err != nil {
		return fmt.Errorf("cannot be encoded: %v", err)
	}
	back, end, err := dns.UnpackRR(buf[:off], 0)
	if err != nil || end != off {
		return fmt.Errorf("rdata is incomplete or does not survive wire encoding")
	}
	again := make([]byte, off+64)
	off2, err := dns.PackRR(back, again, 0, nil, false)
	if err != nil || !bytes.Equal(buf[:off], again[:off2]) {
		return fmt.Errorf("rdata does not survive wire encoding")
	}
	return nil
}

// Apply returns a new zone with the changes applied in order, or an error and
// no zone when any change is invalid: changes are all or nothing. The serial
// of the result is greater than z's (RFC 1982): the serial of a SOA the
// changes set when that is greater, z's serial plus one otherwise. Apply does
// not modify z.
func (z *Zone) Apply(changes []Change) (*Zone, error) {
	out := &Zone{Origin: z.Origin, key: z.key, names: z.names.Clone(), serial: z.serial, records: z.records}
	touched := make(map[string]bool, len(changes))
	var wanted uint32
	hasWanted := false
	for i, c := range changes {
		nc, err := Normalize(z.Origin, c)
		if err != nil {
			return nil, fmt.Errorf("change %d: %w", i+1, err)
		}
		if nc.Op == OpCheck {
			if !sameRecords(out.Get(nc.Name).RRset(nc.Type), nc.RRs) {
				return nil, fmt.Errorf("change %d: %w: %s %s does not hold the expected records", i+1, ErrPrecondition, nc.Name, dns.TypeToString[nc.Type])
			}
			continue
		}
		if nc.Op == OpReplace && nc.Type == dns.TypeSOA {
			wanted, hasWanted = nc.RRs[0].(*dns.SOA).Serial, true
		}
		out.put(nc)
		touched[nc.Name] = true
	}
	for name := range touched {
		if err := out.checkName(name); err != nil {
			return nil, err
		}
	}
	out.setSerial(nextSerial(z.serial, wanted, hasWanted))
	return out, nil
}

// sameRecords reports whether set holds exactly rrs, ignoring TTLs and
// order. A nil set equals no records.
func sameRecords(set *RRset, rrs []dns.RR) bool {
	var have []dns.RR
	if set != nil {
		have = set.RRs
	}
	if len(have) != len(rrs) {
		return false
	}
	for _, rr := range rrs {
		if !slices.ContainsFunc(have, func(h dns.RR) bool { return dns.IsDuplicate(h, rr) }) {
			return false
		}
	}
	return true
}

// put applies one normalized change to a zone under construction.
func (z *Zone) put(c Change) {
	key := Key(c.Name)
	old := z.GetKey(key)
	var next *Node
	switch c.Op {
	case OpDeleteName:
		next = nil
	case OpDeleteRRset:
		if old == nil {
			return
		}
		next = old.with(c.Type, nil)
	case OpAdd, OpRemove:
		base := old
		if base == nil {
			if c.Op == OpRemove {
				return
			}
			base = &Node{key: key, Name: c.Name}
		}
		next = base.with(c.Type, mergeSet(base.RRset(c.Type), c))
	case OpReplace:
		base := old
		if base == nil {
			base = &Node{key: key, Name: c.Name}
		}
		next = base.with(c.Type, &RRset{Name: c.Name, Type: c.Type, TTL: c.TTL, RRs: c.RRs})
	}
	if old != nil {
		z.records -= old.records()
	}
	if next == nil || len(next.sets) == 0 {
		if old != nil {
			z.names.Delete(old)
		}
		return
	}
	z.records += next.records()
	z.names.ReplaceOrInsert(next)
}

// mergeSet returns old with the change's records added (OpAdd) or removed
// (OpRemove). An added record takes the change's TTL, and so does the set,
// since a set has one TTL (RFC 2181 §5.2).
func mergeSet(old *RRset, c Change) *RRset {
	var rrs []dns.RR
	ttl := c.TTL
	if old != nil {
		if c.Op == OpRemove {
			ttl = old.TTL
		}
		for _, rr := range old.RRs {
			if c.Op == OpRemove && slices.ContainsFunc(c.RRs, func(o dns.RR) bool { return dns.IsDuplicate(o, rr) }) {
				continue
			}
			if c.Op == OpAdd && slices.ContainsFunc(c.RRs, func(o dns.RR) bool { return dns.IsDuplicate(o, rr) }) {
				continue // replaced by the added copy below
			}
			rrs = append(rrs, rr)
		}
	}
	if c.Op == OpAdd {
		rrs = append(rrs, c.RRs...)
	}
	if len(rrs) == 0 {
		return nil
	}
	if old != nil && ttl != old.TTL || c.Op == OpAdd {
		for i, rr := range rrs {
			if rr.Header().Ttl != ttl {
				cp := dns.Copy(rr)
				cp.Header().Ttl = ttl
				rrs[i] = cp
			}
		}
	}
	return &RRset{Name: c.Name, Type: c.Type, TTL: ttl, RRs: rrs}
}

// checkName enforces the rules that span RRsets of one name.
func (z *Zone) checkName(name string) error {
	n := z.Get(name)
	if name == z.Origin {
		if n.RRset(dns.TypeSOA) == nil {
			return invalidf("zone %s has no SOA record at its apex", z.Origin)
		}
		if n.RRset(dns.TypeNS) == nil {
			return invalidf("zone %s has no NS records at its apex", z.Origin)
		}
	}
	if s := n.RRset(dns.TypeSOA); s != nil && (name != z.Origin || len(s.RRs) != 1) {
		return invalidf("%s: a zone has exactly one SOA record, at its apex %s", name, z.Origin)
	}
	if s := n.RRset(dns.TypeCNAME); s != nil && len(s.RRs) != 1 {
		return invalidf("%s: a name has at most one CNAME record, got %d", name, len(s.RRs))
	}
	if n == nil || n.RRset(dns.TypeCNAME) == nil {
		return nil
	}
	for _, s := range n.sets {
		switch s.Type {
		case dns.TypeCNAME, dns.TypeRRSIG, dns.TypeNSEC:
		default:
			return invalidf("%s has a CNAME record and a record of type %s; a CNAME must be the only data at its name (RFC 1034 §3.6.2)", name, dns.TypeToString[s.Type])
		}
	}
	return nil
}

// setSerial rewrites the apex SOA with the given serial.
func (z *Zone) setSerial(serial uint32) {
	z.serial = serial
	apex := z.Apex()
	set := apex.RRset(dns.TypeSOA)
	soa := dns.Copy(set.RRs[0]).(*dns.SOA)
	soa.Serial = serial
	z.names.ReplaceOrInsert(apex.with(dns.TypeSOA, &RRset{Name: set.Name, Type: dns.TypeSOA, TTL: set.TTL, RRs: []dns.RR{soa}}))
}

// NewZone builds a zone from a list of records, as a zone file or a create
// request gives them. The records must hold one SOA and at least one NS
// record at origin, and every name must be at or below origin. Records with
// the same name and type form one set; the set takes the first record's TTL.
//
// When prev is true the zone replaces one whose serial was prevSerial (an
// import over an existing zone, or a zone created again after a delete), and
// the new serial is greater than prevSerial whatever the SOA says.
func NewZone(origin string, records []dns.RR, prevSerial uint32, prev bool) (*Zone, error) {
	canon, err := CanonicalName(origin)
	if err != nil {
		return nil, invalidf("zone name: %v", err)
	}
	type setKey struct {
		name string
		t    uint16
	}
	var order []setKey
	groups := make(map[setKey]*Change)
	for _, rr := range records {
		if rr == nil {
			return nil, invalidf("nil record")
		}
		h := rr.Header()
		name, err := CanonicalName(h.Name)
		if err != nil {
			return nil, invalidf("record %q: %v", rr.String(), err)
		}
		k := setKey{name, h.Rrtype}
		c := groups[k]
		if c == nil {
			c = &Change{Op: OpReplace, Name: name, Type: h.Rrtype, TTL: h.Ttl}
			groups[k] = c
			order = append(order, k)
		}
		c.RRs = append(c.RRs, rr)
	}
	z := newEmptyZone(canon)
	for _, k := range order {
		nc, err := Normalize(canon, *groups[k])
		if err != nil {
			return nil, err
		}
		z.put(nc)
	}
	names := make([]string, 0, len(order))
	for _, k := range order {
		names = append(names, k.name)
	}
	names = append(names, canon)
	slices.Sort(names)
	for _, name := range slices.Compact(names) {
		if err := z.checkName(name); err != nil {
			return nil, err
		}
	}
	serial := z.SOA().Serial
	if prev {
		serial = nextSerial(prevSerial, serial, true)
	}
	z.setSerial(serial)
	return z, nil
}
