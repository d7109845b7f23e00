// Package cache is kudurru's DNS response cache for the forwarding path.
//
// It stores packed wire-format responses and serves a hit by copying bytes
// and patching them: the query's ID, RD bit and question-name letter case,
// and every record TTL decreased by the entry's age. The offsets of the TTL
// fields are found once, when the response is stored.
//
// The key is the case-folded question name, qtype, qclass and the DO and CD
// bits. The cache is split into power-of-two shards by key hash, bounded in
// bytes, with CLOCK eviction per shard. It implements negative caching (RFC
// 2308), brief SERVFAIL caching (RFC 2308 §7), serve-stale (RFC 8767) and a
// prefetch signal for popular entries near expiry. Dump and Load persist the
// cache as one versioned, checksummed blob.
//
// The cache does not talk to the network; the query chain decides when to
// ask upstreams, and calls Set with what they answered.
package cache

import (
	"hash/maphash"
	"log/slog"
	"math/bits"
	"strings"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// Cache is a sharded, byte-bounded cache of packed DNS responses. All methods
// are safe for concurrent use.
type Cache struct {
	cfg        Config
	log        *slog.Logger
	now        func() time.Time
	seed       maphash.Seed
	shards     []*shard
	shardShift uint

	// Derived from cfg, in the units the hot path uses.
	staleWindow  int64 // ns
	staleRefresh int64 // ns
	staleTTL     uint32

	metrics *metrics
	closed  atomic.Bool
}

// Option changes how New builds a Cache.
type Option func(*Cache)

// WithClock makes the cache read time from now instead of time.Now; tests
// use it to make TTL behaviour deterministic.
func WithClock(now func() time.Time) Option {
	return func(c *Cache) { c.now = now }
}

// New builds a cache. log must not be nil; reg may be nil to skip metric
// registration.
func New(cfg Config, log *slog.Logger, reg prometheus.Registerer, opts ...Option) (*Cache, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Cache{
		cfg:          cfg,
		log:          log.With("component", "cache"),
		now:          monotonicClock(),
		seed:         maphash.MakeSeed(),
		shards:       make([]*shard, cfg.Shards),
		shardShift:   uint(64 - bits.TrailingZeros(uint(cfg.Shards))),
		staleWindow:  int64(cfg.StaleWindow),
		staleRefresh: int64(cfg.StaleRefresh),
		staleTTL:     seconds(cfg.StaleAnswerTTL),
	}
	for _, o := range opts {
		o(c)
	}
	budget := cfg.MaxBytes / int64(cfg.Shards)
	for i := range c.shards {
		c.shards[i] = newShard(budget)
	}
	m, err := newMetrics(c, reg)
	if err != nil {
		return nil, err
	}
	c.metrics = m
	return c, nil
}

// Close unregisters the cache's metrics and empties it. Later calls to Get
// miss and Set stores nothing. Close is idempotent.
func (c *Cache) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	c.metrics.unregister()
	for _, s := range c.shards {
		s.reset()
	}
	return nil
}

// Result describes the outcome of Get and GetStale.
type Result struct {
	// Found reports that the returned bytes are an answer.
	Found bool
	// Stale reports that the answer is expired data served per RFC 8767.
	Stale bool
	// Prefetch is set, once per stored entry, when a popular entry is near
	// expiry: the caller should refresh it from upstream in the background
	// and Set the new answer.
	Prefetch bool
	// Chain reports that the answer follows a CNAME chain through other
	// names, which the caller may have come to serve itself since it was
	// stored.
	Chain bool
}

func (c *Cache) nowNano() int64 { return c.now().UnixNano() }

// monotonicClock returns the cache's clock: the wall time when it was made,
// advanced by the monotonic clock since. A step of the wall clock (an NTP
// step, a resumed VM) then neither freezes cached TTLs nor expires every
// entry at once; stored and expiry times stay comparable with wall times
// for the dump, which a later process reads.
func monotonicClock() func() time.Time {
	start := time.Now()
	return func() time.Time { return start.Add(time.Since(start)) }
}

// Get looks req up. On a hit it appends the answer to dst[:0] and returns
// it, ready to send: the ID, RD bit and question-name case of req, TTLs
// decreased by age. An expired entry is returned (Stale) only while a recent
// upstream failure is being waited out; see GetStale.
func (c *Cache) Get(dst []byte, req *dns.Msg) ([]byte, Result) {
	var q query
	if c.closed.Load() || !c.parseQuery(&q, req) {
		return dst[:0], Result{}
	}
	s := c.shardFor(q.hash)
	e := s.get(&q)
	if e == nil {
		s.misses.Add(1)
		return dst[:0], Result{}
	}
	now := c.nowNano()
	if e.fresh(now) {
		s.hits.Add(1)
		res := Result{Found: true, Prefetch: c.wantPrefetch(e, now), Chain: e.chain}
		return e.render(dst, &q, now, false, 0), res
	}
	if e.staleUsable(now, c.staleWindow) && now < e.failUntil.Load() {
		c.metrics.stale.Inc()
		return e.render(dst, &q, now, true, c.staleTTL), Result{Found: true, Stale: true, Chain: e.chain}
	}
	s.misses.Add(1)
	return dst[:0], Result{}
}

// wantPrefetch reports whether this hit is the one that should trigger a
// refresh: enough hits, less than PrefetchPercent of the lifetime left, and
// no earlier signal for this entry.
func (c *Cache) wantPrefetch(e *entry, now int64) bool {
	if c.cfg.PrefetchHits == 0 || e.kind == kindServfail {
		return false
	}
	hits := e.hits.Add(1)
	if hits < c.cfg.PrefetchHits || e.prefetched.Load() {
		return false
	}
	// left < lifetime × percent/100, without overflow: lifetime is up to
	// 68 years in nanoseconds.
	left := e.expire - now
	if left >= e.lifetime/100*int64(c.cfg.PrefetchPercent) {
		return false
	}
	if !e.prefetched.CompareAndSwap(false, true) {
		return false
	}
	c.metrics.prefetch.Inc()
	return true
}

// GetStale is Get for a caller whose upstreams all failed: besides fresh
// answers it returns expired ones within StaleWindow, with every TTL set to
// StaleAnswerTTL (RFC 8767). For StaleRefresh afterwards Get keeps serving
// that stale answer without the caller asking upstreams again.
func (c *Cache) GetStale(dst []byte, req *dns.Msg) ([]byte, Result) {
	var q query
	if c.closed.Load() || !c.parseQuery(&q, req) {
		return dst[:0], Result{}
	}
	e := c.shardFor(q.hash).get(&q)
	if e == nil {
		return dst[:0], Result{}
	}
	now := c.nowNano()
	if e.fresh(now) {
		return e.render(dst, &q, now, false, 0), Result{Found: true, Chain: e.chain}
	}
	if !e.staleUsable(now, c.staleWindow) {
		return dst[:0], Result{}
	}
	e.failUntil.Store(now + c.staleRefresh)
	c.metrics.stale.Inc()
	return e.render(dst, &q, now, true, c.staleTTL), Result{Found: true, Stale: true, Chain: e.chain}
}

// Set stores resp as the answer to req and reports whether it was stored.
// Not stored: truncated answers, rcodes other than NOERROR, NXDOMAIN and
// SERVFAIL, negative answers without an SOA, zero TTLs, answers whose
// question differs from req's, and answers too large for a shard. A SERVFAIL
// never replaces an answer that is fresh or still servable stale; it starts
// the stale-refresh wait instead.
func (c *Cache) Set(req, resp *dns.Msg) bool {
	var q query
	if c.closed.Load() || resp == nil || !c.parseQuery(&q, req) {
		return false
	}
	if !sameQuestion(req, resp) {
		c.metrics.reject(rejectReason(errKeyMismatch))
		return false
	}
	wire, err := pack(resp)
	if err != nil {
		c.metrics.reject("malformed")
		return false
	}
	now := c.nowNano()
	e, err := c.prepare(wire, q.key[q.n-1], now)
	if err == nil && e.key != string(q.keyBytes()) {
		err = errKeyMismatch // same names that pack differently
	}
	if err != nil {
		c.metrics.reject(rejectReason(err))
		return false
	}
	return c.insert(e, now)
}

// pack packs m with name compression, without changing m. Every packed
// message the cache stores comes from here: miekg/dns points compression
// pointers only at the start of names it wrote, never into a TTL field the
// cache rewrites (a hand-made message could, and would then serve garbled
// names).
func pack(m *dns.Msg) ([]byte, error) {
	c := *m
	c.Compress = true
	return c.Pack()
}

// sameQuestion reports whether resp answers req's question, ignoring case.
func sameQuestion(req, resp *dns.Msg) bool {
	if len(resp.Question) != 1 {
		return false
	}
	a, b := req.Question[0], resp.Question[0]
	return a.Qtype == b.Qtype && a.Qclass == b.Qclass && strings.EqualFold(a.Name, b.Name)
}

// insert stores a prepared entry under the replacement rules of Set.
func (c *Cache) insert(e *entry, now int64) bool {
	s := c.shardFor(e.hash)
	if e.size > s.budget {
		c.metrics.reject(rejectReason(errEntrySize))
		return false
	}
	return s.put(e, now, c.staleWindow, func(old, e *entry) bool {
		if old == nil || old.key != e.key || e.kind != kindServfail || old.kind == kindServfail {
			return true
		}
		if old.fresh(now) {
			return false
		}
		if old.staleUsable(now, c.staleWindow) {
			old.failUntil.Store(now + c.staleRefresh)
			return false
		}
		return true
	})
}

// Len returns the number of stored entries.
func (c *Cache) Len() int {
	var n int64
	for _, s := range c.shards {
		n += s.entries.Load()
	}
	return int(n)
}

// Bytes returns the accounted memory of the stored entries.
func (c *Cache) Bytes() int64 {
	var n int64
	for _, s := range c.shards {
		n += s.bytes.Load()
	}
	return n
}

func rejectReason(err error) string {
	switch err {
	case errTruncated:
		return "truncated"
	case errRcode, errExtRcode:
		return "rcode"
	case errNoSOA:
		return "no_soa"
	case errZeroTTL, errDisabled:
		return "ttl"
	case errEntrySize:
		return "too_large"
	case errKeyMismatch:
		return "question_mismatch"
	case errSigned:
		return "signed"
	default:
		return "malformed"
	}
}
