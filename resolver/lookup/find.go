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
	var cut, last *zone.Node
	z.Ancestors(key, func(n *zone.Node) bool {
		if n.Name != z.Origin && n.RRset(dns.TypeNS) != nil {
			cut = n
			return false
		}
		last = n
		return true
	})
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
	apex := len(z.Apex().Key())
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

// parentKey returns the key of the parent of the name with key k: k without
// its last label. Inside a key, 0x00 only ever ends a label.
func parentKey(k []byte) []byte {
	if len(k) == 0 {
		return k
	}
	return k[:bytes.LastIndexByte(k[:len(k)-1], 0)+1]
}
