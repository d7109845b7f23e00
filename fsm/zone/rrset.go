package zone

import (
	"bytes"
	"slices"

	"github.com/miekg/dns"
)

// RRset is the records of one owner name and type. It is immutable once it is
// reachable from a published View: callers that need to change a record (to
// set the owner name's letter case, say) copy it first with dns.Copy.
type RRset struct {
	Name string   // canonical owner name
	Type uint16   // RR type
	TTL  uint32   // the TTL of every record in the set (RFC 2181 §5.2)
	RRs  []dns.RR // at least one record; class IN, owner Name, TTL TTL
}

// Node is one owner name of a zone with its RRsets, sorted by type. It is
// immutable once published.
type Node struct {
	key  []byte
	Name string
	sets []*RRset
}

// RRset returns the set of type t at this name, or nil.
func (n *Node) RRset(t uint16) *RRset {
	if n == nil {
		return nil
	}
	for _, s := range n.sets {
		if s.Type == t {
			return s
		}
	}
	return nil
}

// RRsets returns every set at this name, sorted by type. The slice is shared:
// do not modify it.
func (n *Node) RRsets() []*RRset {
	if n == nil {
		return nil
	}
	return n.sets
}

// Key returns the node's tree key (see Key). Do not modify it.
func (n *Node) Key() []byte { return n.key }

// records counts the records at this name.
func (n *Node) records() int {
	c := 0
	for _, s := range n.sets {
		c += len(s.RRs)
	}
	return c
}

// with returns a copy of n with set s replacing any set of the same type, or
// removing it when s has no records.
func (n *Node) with(t uint16, s *RRset) *Node {
	out := &Node{key: n.key, Name: n.Name, sets: make([]*RRset, 0, len(n.sets)+1)}
	for _, old := range n.sets {
		if old.Type != t {
			out.sets = append(out.sets, old)
		}
	}
	if s != nil && len(s.RRs) > 0 {
		out.sets = append(out.sets, s)
		slices.SortFunc(out.sets, func(a, b *RRset) int { return int(a.Type) - int(b.Type) })
	}
	return out
}

// nodeLess orders nodes by key, which is canonical name order.
func nodeLess(a, b *Node) bool { return bytes.Compare(a.key, b.key) < 0 }
