package zone

import (
	"bytes"
	"maps"
	"slices"

	"github.com/miekg/dns"
)

// Member is a node of the cluster as the replicated state knows it: its Raft
// server ID and the address of its HTTP API (where writes are forwarded).
type Member struct {
	ID      string
	APIAddr string
}

// View is the read side of the replicated state at one applied index: the
// cluster ID, every zone, the members' API addresses, and the last serial of
// each deleted zone (so a zone created again continues above it). A View is
// immutable; use Edit to derive a new one.
type View struct {
	ClusterID string
	Index     uint64 // the Raft index this View reflects
	zones     map[string]*Zone
	tombs     map[string]uint32
	members   map[string]Member
}

// Empty is the View of a cluster that has applied nothing.
var Empty = &View{}

// Zone returns the zone with the given canonical origin, or nil.
func (v *View) Zone(origin string) *Zone {
	if v == nil {
		return nil
	}
	return v.zones[origin]
}

// FindZone returns the zone that holds the canonical name qname: the one with
// the longest origin that is qname or an ancestor of it. It allocates
// nothing.
func (v *View) FindZone(qname string) *Zone {
	if v == nil || len(v.zones) == 0 {
		return nil
	}
	for off, end := 0, false; !end; off, end = dns.NextLabel(qname, off) {
		if z := v.zones[qname[off:]]; z != nil {
			return z
		}
	}
	return v.zones["."]
}

// ZoneNames returns the origins of every zone in canonical order.
func (v *View) ZoneNames() []string {
	if v == nil {
		return nil
	}
	names := slices.Collect(maps.Keys(v.zones))
	slices.SortFunc(names, func(a, b string) int { return bytes.Compare(Key(a), Key(b)) })
	return names
}

// Zones returns every zone in canonical order of origin.
func (v *View) Zones() []*Zone {
	names := v.ZoneNames()
	out := make([]*Zone, len(names))
	for i, n := range names {
		out[i] = v.zones[n]
	}
	return out
}

// Len returns the number of zones.
func (v *View) Len() int {
	if v == nil {
		return 0
	}
	return len(v.zones)
}

// Tombstone returns the last serial of a deleted zone.
func (v *View) Tombstone(origin string) (uint32, bool) {
	if v == nil {
		return 0, false
	}
	s, ok := v.tombs[origin]
	return s, ok
}

// Tombstones returns the last serial of every deleted zone, as a new map.
func (v *View) Tombstones() map[string]uint32 {
	if v == nil {
		return nil
	}
	return maps.Clone(v.tombs)
}

// Members returns the cluster members sorted by ID.
func (v *View) Members() []Member {
	if v == nil {
		return nil
	}
	out := slices.Collect(maps.Values(v.members))
	slices.SortFunc(out, func(a, b Member) int {
		if a.ID < b.ID {
			return -1
		}
		if a.ID > b.ID {
			return 1
		}
		return 0
	})
	return out
}

// Member returns the member with the given ID.
func (v *View) Member(id string) (Member, bool) {
	if v == nil {
		return Member{}, false
	}
	m, ok := v.members[id]
	return m, ok
}

// Edit returns a builder that derives a new View from v. The maps are copied
// on the first write to each, so a batch of edits costs one copy.
func (v *View) Edit() *Builder {
	if v == nil {
		v = Empty
	}
	b := &Builder{v: &View{ClusterID: v.ClusterID, Index: v.Index, zones: v.zones, tombs: v.tombs, members: v.members}}
	return b
}

// Builder derives a new View. It is not safe for concurrent use, and must not
// be used after View is called.
type Builder struct {
	v                             *View
	ownZones, ownTombs, ownMember bool
}

// View returns the built View.
func (b *Builder) View() *View { v := b.v; b.v = nil; return v }

// Current returns the View as built so far, for reads during a batch. It
// must not be kept past the next write.
func (b *Builder) Current() *View { return b.v }

// SetClusterID sets the cluster ID.
func (b *Builder) SetClusterID(id string) { b.v.ClusterID = id }

// SetIndex sets the applied index.
func (b *Builder) SetIndex(i uint64) { b.v.Index = i }

// PutZone adds or replaces a zone, and clears its tombstone.
func (b *Builder) PutZone(z *Zone) {
	if !b.ownZones {
		b.v.zones = maps.Clone(b.v.zones)
		if b.v.zones == nil {
			b.v.zones = make(map[string]*Zone)
		}
		b.ownZones = true
	}
	b.v.zones[z.Origin] = z
	if _, ok := b.v.tombs[z.Origin]; ok {
		b.ownTombsMap()
		delete(b.v.tombs, z.Origin)
	}
}

// DeleteZone removes a zone and remembers its serial.
func (b *Builder) DeleteZone(origin string) {
	z := b.v.zones[origin]
	if z == nil {
		return
	}
	if !b.ownZones {
		b.v.zones = maps.Clone(b.v.zones)
		b.ownZones = true
	}
	delete(b.v.zones, origin)
	b.ownTombsMap()
	b.v.tombs[origin] = z.serial
}

func (b *Builder) ownTombsMap() {
	if !b.ownTombs {
		b.v.tombs = maps.Clone(b.v.tombs)
		if b.v.tombs == nil {
			b.v.tombs = make(map[string]uint32)
		}
		b.ownTombs = true
	}
}

// SetTombstone records the last serial of a deleted zone (used when a View
// is decoded).
func (b *Builder) SetTombstone(origin string, serial uint32) {
	b.ownTombsMap()
	b.v.tombs[origin] = serial
}

// PutMember adds or replaces a member.
func (b *Builder) PutMember(m Member) {
	b.ownMembersMap()
	b.v.members[m.ID] = m
}

// DeleteMember removes a member.
func (b *Builder) DeleteMember(id string) {
	if _, ok := b.v.members[id]; !ok {
		return
	}
	b.ownMembersMap()
	delete(b.v.members, id)
}

func (b *Builder) ownMembersMap() {
	if !b.ownMember {
		b.v.members = maps.Clone(b.v.members)
		if b.v.members == nil {
			b.v.members = make(map[string]Member)
		}
		b.ownMember = true
	}
}
