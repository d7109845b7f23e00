package cache

import (
	"encoding/binary"
	"errors"
	"sync/atomic"
	"unsafe"
)

// kind classifies a stored response.
type kind uint8

const (
	kindPositive kind = iota
	kindNegative      // NXDOMAIN or NODATA, RFC 2308
	kindServfail      // RFC 2308 §7
)

// Key flag bits.
const (
	keyDO uint8 = 1 << iota
	keyCD
)

var (
	errRcode       = errors.New("rcode is not cacheable")
	errNoSOA       = errors.New("negative answer without SOA")
	errZeroTTL     = errors.New("ttl is zero")
	errDisabled    = errors.New("caching of this kind is disabled")
	errEntrySize   = errors.New("entry larger than a shard")
	errKeyMismatch = errors.New("response question does not match the query")
)

// entry is one cached response. Every field but the atomics is immutable
// once the entry is published in a shard, so readers copy from it without a
// lock.
type entry struct {
	hash uint64
	// key is the case-folded question name in wire form followed by qtype,
	// qclass (big endian) and the key flag byte.
	key  string
	kind kind
	// chain reports a CNAME in the answer of a question for another type:
	// a chain through other names (Result.Chain).
	chain bool
	// wire is the packed response with ID 0, AA clear and every TTL already
	// clamped; ttlOffs are the offsets of its TTL fields.
	wire     []byte
	ttlOffs  []uint16
	qnameEnd int
	// stored and expire are clock times in Unix nanoseconds; lifetime is
	// expire-stored.
	stored, expire, lifetime int64
	size                     int64

	hits       atomic.Uint32
	ref        atomic.Bool  // CLOCK reference bit
	prefetched atomic.Bool  // the prefetch signal was given once
	failUntil  atomic.Int64 // serve stale without asking upstream until then

	ringIdx int // position in the shard ring, guarded by the shard lock
}

// entryOverhead approximates the memory of an entry beyond its byte slices:
// the struct, its map slot and ring slot, and slice headers.
const entryOverhead = int64(unsafe.Sizeof(entry{})) + 64

// prepare builds an entry from a packed response. wire is taken over and
// rewritten: ID zeroed, AA cleared, TTLs clamped per kind. The key's name is
// the case-folded question of the response itself. wire must come from pack
// (see there).
func (c *Cache) prepare(wire []byte, flags uint8, now int64) (*entry, error) {
	info, err := parseWire(wire)
	if err != nil {
		return nil, err
	}
	var k kind
	switch {
	case info.rcode == rcodeServfail:
		k = kindServfail
	case info.rcode == rcodeNXDomain,
		info.rcode == rcodeNoError && !info.answersQtype:
		k = kindNegative
	case info.rcode == rcodeNoError:
		k = kindPositive
	default:
		return nil, errRcode
	}

	lo, hi := seconds(c.cfg.MinTTL), seconds(c.cfg.MaxTTL)
	var life uint32
	switch k {
	case kindServfail:
		life = seconds(c.cfg.ServfailTTL)
		if life == 0 {
			return nil, errDisabled
		}
		hi = life
		lo = min(lo, life)
	case kindNegative:
		if info.soaIdx < 0 {
			return nil, errNoSOA
		}
		hi = seconds(c.cfg.MaxNegativeTTL)
		if hi == 0 {
			return nil, errDisabled
		}
		lo = min(lo, hi)
	}

	life = hi
	for i, off := range info.ttlOffs {
		ttl := be32(wire[off:])
		if ttl > 1<<31-1 { // RFC 2181 §8: treat as zero
			ttl = 0
		}
		if k == kindNegative && i == info.soaIdx && info.soaMinimum < ttl { // RFC 2308 §5
			ttl = info.soaMinimum
		}
		ttl = max(lo, min(ttl, hi))
		binary.BigEndian.PutUint32(wire[off:], ttl)
		life = min(life, ttl)
	}
	if k == kindServfail {
		life = hi
	}
	if life == 0 {
		return nil, errZeroTTL
	}

	wire[0], wire[1] = 0, 0
	wire[2] &^= flagAA
	keyBuf := make([]byte, 0, info.qnameEnd-headerLen+5)
	keyBuf = append(keyBuf, wire[headerLen:info.qnameEnd]...)
	lowerASCII(keyBuf)
	keyBuf = binary.BigEndian.AppendUint16(keyBuf, info.qtype)
	keyBuf = binary.BigEndian.AppendUint16(keyBuf, info.qclass)
	keyBuf = append(keyBuf, flags)

	e := &entry{
		key:      string(keyBuf),
		kind:     k,
		chain:    info.hasCNAME && info.qtype != typeCNAME,
		wire:     wire,
		ttlOffs:  info.ttlOffs,
		qnameEnd: info.qnameEnd,
		stored:   now,
		lifetime: int64(life) * 1e9,
	}
	e.hash = c.hashKey(keyBuf)
	e.expire = now + e.lifetime
	e.size = int64(cap(wire)) + int64(len(e.key)) + 2*int64(cap(info.ttlOffs)) + entryOverhead
	return e, nil
}

// render appends the entry's response for a query to dst: the query's ID,
// RD bit and question-name letter case, and every TTL reduced by the age of
// the entry (or set to staleTTL when stale is true).
func (e *entry) render(dst []byte, q *query, now int64, stale bool, staleTTL uint32) []byte {
	out := append(dst[:0], e.wire...)
	binary.BigEndian.PutUint16(out, q.id)
	if q.rd {
		out[2] |= flagRD
	} else {
		out[2] &^= flagRD
	}
	copy(out[headerLen:e.qnameEnd], q.qname[:q.qnameLen])
	age := uint32(0)
	if d := now - e.stored; d > 0 {
		age = uint32(min(d/1e9, 1<<31))
	}
	for _, off := range e.ttlOffs {
		ttl := staleTTL
		if !stale {
			ttl = be32(e.wire[off:])
			if ttl > age {
				ttl -= age
			} else {
				ttl = 0
			}
		}
		binary.BigEndian.PutUint32(out[off:], ttl)
	}
	return out
}

// fresh reports whether the entry has not expired at now.
func (e *entry) fresh(now int64) bool { return now < e.expire }

// staleUsable reports whether the entry may be served stale at now.
func (e *entry) staleUsable(now, window int64) bool {
	return e.kind != kindServfail && window > 0 && now < e.expire+window
}

// dead reports whether the entry is useless at now: neither fresh nor
// servable stale. The eviction hand removes dead entries first.
func (e *entry) dead(now, window int64) bool {
	return !e.fresh(now) && !e.staleUsable(now, window)
}
