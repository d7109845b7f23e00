package lookup

import (
	"bytes"

	"github.com/kudurru/kudurru/fsm/zone"
	"github.com/miekg/dns"
)

// kind classifies what a zone holds for one name.
type kind uint8

const (
	kindNX       kind = iota // no such name, no wildcard: NXDOMAIN
	kindEmpty                // the name exists without data (empty non-terminal, or an empty wildcard): NODATA
	kindExact                // node holds the name's data
	kindWildcard             // node is the wildcard that synthesizes the name's data
	kindCut                  // node is the zone cut above (or at) the name
)

type found struct {
	kind kind
	node *zone.Node
}

// find locates name (canonical, with tree key key) in z. The topmost zone
// cut on the way down wins, except that a DS question at the cut itself is
// answered from this, the parent, side.
func find(z *zone.Zone, name string, key []byte, qtype uint16) found {
	apex := apexKeyLen(z)
	var cut, last *zone.Node
	if len(key) == apex {
		// The apex itself: never a cut (its NS set is the zone's own).
		last = z.GetKey(key)
	}
	// Every existing name from just below the apex down to name. The apex
	// is not looked up: it is no cut, and as the closest encloser its
	// length is all the walk below needs.
	for i := apex + 1; i <= len(key); i++ {
		if key[i-1] != 0 {
			continue // key[:i] must end a label (0x00 never appears escaped)
		}
		n := z.GetKey(key[:i])
		if n == nil {
			continue
		}
		if n.RRset(dns.TypeNS) != nil {
			cut = n
			break
		}
		last = n
	}
	if cut != nil {
		if qtype == dns.TypeDS && len(cut.Key()) == len(key) {
			return found{kind: kindExact, node: cut}
		}
		return found{kind: kindCut, node: cut}
	}
	if last != nil && len(last.Key()) == len(key) {
		return found{kind: kindExact, node: last}
	}
	// The name does not exist. With descendants it is an empty
	// non-terminal (RFC 4592 §2.2.2).
	if z.HasDescendants(key) {
		return found{kind: kindEmpty}
	}
	// The closest encloser is the deepest ancestor that exists, as a node
	// or as an empty non-terminal (RFC 4592 §3.3.1). Everything between it
	// and the deepest node must be an empty non-terminal to count, and the
	// name's own branch is empty, so any descendant proves existence.
	ce := key
	for {
		ce = parentKey(ce)
		if len(ce) <= apex || (last != nil && len(ce) == len(last.Key())) || z.HasDescendants(ce) {
			break
		}
	}
	wild := make([]byte, 0, len(ce)+2)
	wild = append(append(wild, ce...), '*', 0)
	if w := z.GetKey(wild); w != nil {
		return found{kind: kindWildcard, node: w}
	}
	if z.HasDescendants(wild) {
		return found{kind: kindEmpty}
	}
	return found{kind: kindNX}
}

// apexKeyLen is the length of the tree key of z's apex, computed from its
// origin rather than looked up in the tree.
func apexKeyLen(z *zone.Zone) int {
	var buf [128]byte
	return len(zone.AppendKey(buf[:0], z.Origin))
}

// parentKey returns the key of the parent of the name with key k: k without
// its last label. Inside a key, 0x00 only ever ends a label.
func parentKey(k []byte) []byte {
	if len(k) == 0 {
		return k
	}
	return k[:bytes.LastIndexByte(k[:len(k)-1], 0)+1]
}
