package zone

import (
	"bytes"

	"github.com/google/btree"
	"github.com/miekg/dns"
)

// btreeDegree trades node size against depth; 32 keeps a 1M-name tree about
// four levels deep while a copy-on-write write copies only a few KiB.
const btreeDegree = 32

// Zone is one authoritative zone: its origin, its serial and its names. A Zone
// is immutable; Apply returns a new Zone that shares every untouched part.
type Zone struct {
	Origin  string // canonical apex name
	key     []byte
	names   *btree.BTreeG[*Node]
	serial  uint32
	records int
}

func newEmptyZone(origin string) *Zone {
	return &Zone{Origin: origin, key: Key(origin), names: btree.NewG(btreeDegree, nodeLess)}
}

// Serial returns the zone's SOA serial.
func (z *Zone) Serial() uint32 { return z.serial }

// SOA returns the apex SOA record. Do not modify it.
func (z *Zone) SOA() *dns.SOA {
	s := z.Apex().RRset(dns.TypeSOA)
	if s == nil {
		return nil
	}
	return s.RRs[0].(*dns.SOA)
}

// Apex returns the node at the zone's origin.
func (z *Zone) Apex() *Node { return z.GetKey(z.key) }

// Records returns how many records the zone holds.
func (z *Zone) Records() int { return z.records }

// Names returns how many owner names the zone holds.
func (z *Zone) Names() int { return z.names.Len() }

// Get returns the node of a canonical name, or nil.
func (z *Zone) Get(name string) *Node { return z.GetKey(Key(name)) }

// GetKey returns the node with the given key, or nil.
func (z *Zone) GetKey(key []byte) *Node {
	n, _ := z.names.Get(&Node{key: key})
	return n
}

// HasDescendants reports whether any name strictly below the name with the
// given key exists. A name that does not exist itself but has descendants is
// an empty non-terminal (RFC 4592 §2.2.2).
func (z *Zone) HasDescendants(key []byte) bool {
	found := false
	z.names.AscendGreaterOrEqual(&Node{key: key}, func(n *Node) bool {
		if bytes.Equal(n.key, key) {
			return true // the name itself; look at the next one
		}
		found = bytes.HasPrefix(n.key, key)
		return false
	})
	return found
}

// Ancestors calls fn for every existing node on the path from the apex down
// to the name with the given key, the apex first and that name itself last
// (when it exists), until fn returns false.
func (z *Zone) Ancestors(key []byte, fn func(*Node) bool) {
	if !bytes.HasPrefix(key, z.key) {
		return
	}
	for i := len(z.key); i <= len(key); i++ {
		if i > len(z.key) && key[i-1] != 0 {
			continue
		}
		// key[:i] ends at a label boundary (the terminator is 0x00, which
		// never appears escaped).
		if n := z.GetKey(key[:i]); n != nil && !fn(n) {
			return
		}
	}
}

// Walk calls fn for every node in canonical order until fn returns false.
func (z *Zone) Walk(fn func(*Node) bool) { z.names.Ascend(fn) }

// WalkFrom calls fn for every node at or after the given key, in canonical
// order, until fn returns false.
func (z *Zone) WalkFrom(key []byte, fn func(*Node) bool) {
	z.names.AscendGreaterOrEqual(&Node{key: key}, fn)
}

// AllRecords returns the zone's records in canonical order, with the SOA
// first, as a zone transfer or export lists them. It allocates the whole
// list; use Walk for large zones.
func (z *Zone) AllRecords() []dns.RR {
	out := make([]dns.RR, 0, z.records)
	if soa := z.SOA(); soa != nil {
		out = append(out, soa)
	}
	z.Walk(func(n *Node) bool {
		for _, s := range n.sets {
			if s.Type == dns.TypeSOA && n.Name == z.Origin {
				continue
			}
			out = append(out, s.RRs...)
		}
		return true
	})
	return out
}
