package cache

import (
	"sync"
	"sync/atomic"
)

// shard is one independently locked part of the cache. Readers take the read
// lock only to find an entry; they copy its bytes after releasing it, since a
// published entry never changes. Eviction is CLOCK (second chance): a hit sets
// the entry's reference bit without a write lock, the hand clears it, and an
// entry whose bit is clear when the hand reaches it goes. Dead entries
// (expired beyond the stale window) go first.
type shard struct {
	mu sync.RWMutex
	// m maps a key hash to its entry; guarded by mu.
	m map[uint64]*entry
	// ring holds every entry of m in CLOCK order; hand is the next position
	// the clock hand inspects. Guarded by mu.
	ring []*entry
	hand int

	budget int64 // bytes this shard may hold; immutable

	// Counters read by the metrics without the lock. bytes and entries are
	// written under mu.
	bytes, entries       atomic.Int64
	hits, misses, evicts atomic.Uint64

	_ [64]byte // keep neighbouring shards' counters off this cache line
}

func newShard(budget int64) *shard {
	return &shard{m: make(map[uint64]*entry), budget: budget}
}

// get returns the entry for q, or nil.
func (s *shard) get(q *query) *entry {
	s.mu.RLock()
	e := s.m[q.hash]
	s.mu.RUnlock()
	if e == nil || e.key != string(q.keyBytes()) {
		return nil
	}
	if !e.ref.Load() {
		e.ref.Store(true)
	}
	return e
}

// replaceFunc decides, under the shard lock, whether a new entry replaces the
// old one for the same key (old may be nil).
type replaceFunc func(old, e *entry) bool

// put stores e, evicting as needed. It returns false when keep refused the
// replacement or e cannot fit in the shard at all.
func (s *shard) put(e *entry, now, window int64, keep replaceFunc) bool {
	if e.size > s.budget {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.m[e.hash]
	if keep != nil && !keep(old, e) {
		return false
	}
	if old != nil {
		s.removeLocked(old)
	}
	for s.bytes.Load()+e.size > s.budget && len(s.ring) > 0 {
		s.evictLocked(now, window)
	}
	e.ringIdx = len(s.ring)
	s.ring = append(s.ring, e)
	s.m[e.hash] = e
	s.bytes.Add(e.size)
	s.entries.Add(1)
	return true
}

// evictLocked advances the clock hand until it removes one entry. Each
// pass clears reference bits, so it stops within two turns of the ring.
func (s *shard) evictLocked(now, window int64) {
	for {
		if s.hand >= len(s.ring) {
			s.hand = 0
		}
		e := s.ring[s.hand]
		if e.ref.Load() && !e.dead(now, window) {
			e.ref.Store(false)
			s.hand++
			continue
		}
		s.removeLocked(e)
		s.evicts.Add(1)
		return
	}
}

// removeLocked takes e out of the map and the ring. The last ring slot moves
// into e's place, which the hand inspects next.
func (s *shard) removeLocked(e *entry) {
	if s.m[e.hash] == e {
		delete(s.m, e.hash)
	}
	i := e.ringIdx
	last := len(s.ring) - 1
	if i <= last && s.ring[i] == e {
		s.ring[i] = s.ring[last]
		s.ring[i].ringIdx = i
		s.ring[last] = nil
		s.ring = s.ring[:last]
	}
	s.bytes.Add(-e.size)
	s.entries.Add(-1)
}

// snapshot returns the shard's entries that satisfy keep, for Dump.
func (s *shard) snapshot(dst []*entry, keep func(*entry) bool) []*entry {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, e := range s.ring {
		if keep(e) {
			dst = append(dst, e)
		}
	}
	return dst
}

// reset drops every entry.
func (s *shard) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m = make(map[uint64]*entry)
	s.ring = nil
	s.hand = 0
	s.bytes.Store(0)
	s.entries.Store(0)
}
