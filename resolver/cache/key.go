package cache

import (
	"encoding/binary"
	"hash/maphash"
	"strings"

	"github.com/miekg/dns"
)

// query is what Get needs from a request, built on the stack so that a hit
// does not allocate.
type query struct {
	id  uint16
	rd  bool
	key [maxName + 5]byte // case-folded wire name, qtype, qclass, flags
	n   int
	// qname is the question name in wire form with the query's letter case.
	qname    [maxName + 1]byte
	qnameLen int
	hash     uint64
}

// keyBytes returns the lookup key.
func (q *query) keyBytes() []byte { return q.key[:q.n] }

// parseQuery fills q from req. It reports false for requests the cache does
// not handle: not a QUERY, not exactly one question, or a name that does not
// pack.
func (c *Cache) parseQuery(q *query, req *dns.Msg) bool {
	if req == nil || req.Opcode != dns.OpcodeQuery || len(req.Question) != 1 {
		return false
	}
	qs := &req.Question[0]
	n, ok := nameToWire(qs.Name, &q.qname)
	if !ok {
		return false
	}
	q.id, q.rd, q.qnameLen = req.Id, req.RecursionDesired, n
	copy(q.key[:], q.qname[:n])
	lowerASCII(q.key[:n])
	binary.BigEndian.PutUint16(q.key[n:], qs.Qtype)
	binary.BigEndian.PutUint16(q.key[n+2:], qs.Qclass)
	var flags uint8
	if opt := req.IsEdns0(); opt != nil && opt.Do() {
		flags |= keyDO
	}
	if req.CheckingDisabled {
		flags |= keyCD
	}
	q.key[n+4] = flags
	q.n = n + 5
	q.hash = c.hashKey(q.keyBytes())
	return true
}

func (c *Cache) hashKey(b []byte) uint64 { return maphash.Bytes(c.seed, b) }

// shardFor picks the shard of a hash: the top bits, so that the map inside
// the shard sees the well-mixed low bits.
func (c *Cache) shardFor(h uint64) *shard { return c.shards[h>>c.shardShift] }

// nameToWire writes a fully qualified presentation-format name in wire form.
// Names without escapes, nearly all of them, take a fast path; the rest go
// through miekg/dns.
func nameToWire(s string, dst *[maxName + 1]byte) (int, bool) {
	if strings.IndexByte(s, '\\') >= 0 {
		n, err := dns.PackDomainName(s, dst[:], 0, nil, false)
		return n, err == nil && n > 0 && n <= maxName
	}
	if s == "." {
		dst[0] = 0
		return 1, true
	}
	if len(s) < 2 || len(s) > maxName-1 || s[len(s)-1] != '.' {
		return 0, false
	}
	n, start := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] != '.' {
			continue
		}
		l := i - start
		if l == 0 || l > 63 {
			return 0, false
		}
		dst[n] = byte(l)
		copy(dst[n+1:], s[start:i])
		n += 1 + l
		start = i + 1
	}
	dst[n] = 0
	return n + 1, true
}
