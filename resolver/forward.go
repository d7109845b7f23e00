package resolver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/kudurru/kudurru/fsm/zone"
	"github.com/kudurru/kudurru/resolver/cache"
	"github.com/kudurru/kudurru/resolver/lookup"
	"github.com/kudurru/kudurru/resolver/upstream"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// The forwarding stage answers names outside every served zone: it checks
// the recursion ACL, answers from the cache (resolver/cache), and on a miss
// asks the upstreams (resolver/upstream) and stores what they answer. When
// every upstream fails it serves stale data (RFC 8767) if the cache still
// has some, and SERVFAIL otherwise, which it caches briefly (RFC 9520,
// RFC 2308 §7) so that a dead domain cannot cause an upstream storm.
//
// Only answers from upstreams are cached. The authority stage runs first, so
// a zone served here always wins over cached data, including a zone created
// after the data was cached.

// forwarding is the state of the forwarding stage. It is built by New
// (chain) when dns.forward names upstreams, and stopped when the Server
// closes (run). Its query path takes no lock but the cache shard's.
type forwarding struct {
	zones    Zones
	log      *slog.Logger
	acl      acl
	cache    *cache.Cache
	up       *upstream.Forwarder
	m        *fwdMetrics
	ednsSize uint16 // payload size we advertise to clients and to upstreams

	blobs        BlobStore     // nil: no persistence
	persistEvery time.Duration // 0: no persistence
	fetchTimeout time.Duration // bound of a background refresh

	// Prefetches run on goroutines of their own, at most cap(slots) at a
	// time; pwg tracks them.
	slots   chan struct{}
	base    context.Context // cancelled when the server closes
	cancel  context.CancelFunc
	pmu     sync.Mutex // guards pclosed and the pwg.Add that it gates
	pclosed bool
	pwg     sync.WaitGroup
}

// maxPrefetches bounds the background refreshes running at once; a signal
// beyond it is dropped (the entry then expires and is fetched on demand).
const maxPrefetches = 16

// forwardStage builds the forwarding stage from the configuration, or
// returns nil when no upstreams are configured. It restores the cache dump,
// starts the upstream health checks and the persistence loop, whose
// goroutine the Server's WaitGroup tracks: it ends once Close cancels s.ctx,
// after stopping the upstreams and writing a last dump.
func (s *Server) forwardStage() stage {
	if !s.cfg.forwarding() {
		return nil
	}
	f, err := newForwarding(s.cfg, s.deps, s.log, s.registry())
	if err != nil {
		// Config.Validate has checked everything that can fail here but
		// the metrics registry; answer SERVFAIL rather than pretend that
		// nothing is configured.
		s.log.Error("forwarding disabled: cannot build it", "error", err)
		return brokenForwarding
	}
	if len(f.acl) == 0 {
		s.log.Warn("dns.forward is set but dns.recursion.allow is empty: every client is refused for names outside the zones")
	}
	f.restore()
	f.up.Start()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f.run(s.ctx)
	}()
	return f.stage
}

// registry is where the forwarding parts register their metrics: the
// server's registry, or a private one like the server's own metrics.
func (s *Server) registry() prometheus.Registerer {
	if s.deps.Registry != nil {
		return s.deps.Registry
	}
	return prometheus.NewRegistry()
}

func newForwarding(cfg Config, deps Deps, log *slog.Logger, reg prometheus.Registerer) (*forwarding, error) {
	l, err := parseACL(cfg.Recursion.Allow)
	if err != nil {
		return nil, err
	}
	m, err := newFwdMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("forwarding metrics: %w", err)
	}
	c, err := cache.New(cfg.Cache, log, reg)
	if err != nil {
		m.unregister()
		return nil, err
	}
	up, err := upstream.New(cfg.upstreamConfig(), log, reg)
	if err != nil {
		c.Close()
		m.unregister()
		return nil, err
	}
	f := &forwarding{
		zones: deps.Zones, log: log.With("stage", "forward"), acl: l, cache: c, up: up, m: m,
		ednsSize: uint16(cfg.EDNSUDPSize), blobs: deps.Blobs, persistEvery: cfg.Cache.PersistInterval,
		fetchTimeout: cfg.Upstream.QueryTimeout, slots: make(chan struct{}, maxPrefetches),
	}
	f.base, f.cancel = context.WithCancel(context.Background())
	return f, nil
}

// stage is the chain stage.
func (f *forwarding) stage(next Handler) Handler {
	return HandlerFunc(func(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
		d := danglingFrom(ctx)
		if r.Question[0].Qclass != dns.ClassINET {
			return next.ServeDNS(ctx, w, r)
		}
		peer := w.RemoteAddr()
		if !f.acl.allows(clientAddr(peer)) {
			if d != nil {
				return writeAuthority(w, r, d) // the zones' part is for everyone
			}
			f.m.refused.Inc()
			return dns.RcodeRefused, nil
		}
		if d != nil {
			return f.chase(ctx, w, r, d)
		}
		if v := f.zones.Current(); v == nil || v.Index == 0 {
			// No state yet (a new node before Raft delivers): the
			// cluster's own zones are unknown, and forwarding their
			// names would leak them upstream and bring back answers
			// (NXDOMAIN) that clients would cache. SERVFAIL makes
			// them try another server.
			f.m.notReady.Inc()
			return dns.RcodeServerFailure, nil
		}
		_, tcp := peer.(*net.TCPAddr)
		return f.serve(ctx, w, r, tcp)
	})
}

// wireBufs holds buffers for cached answers.
var wireBufs = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// serve answers r from the cache or the upstreams.
func (f *forwarding) serve(ctx context.Context, w dns.ResponseWriter, r *dns.Msg, tcp bool) (int, error) {
	bp := wireBufs.Get().(*[]byte)
	defer wireBufs.Put(bp)
	b, res := f.cache.Get((*bp)[:0], r)
	if res.Found {
		f.countCached(b, res)
		if res.Prefetch {
			f.prefetch(r)
		}
		return f.writeCached(w, r, b, bp, tcp, res)
	}
	resp, err := f.fetch(ctx, f.upstreamQuery(r, r.Question[0].Name, r.Question[0].Qtype))
	switch {
	case err == nil:
		f.m.upstream.Inc()
		resp.RecursionDesired = r.RecursionDesired
		return dns.RcodeSuccess, w.WriteMsg(resp)
	case errors.Is(err, upstream.ErrNoUpstream):
		// No forward zone covers the name: as if nothing forwarded.
		f.m.noUpstream.Inc()
		return dns.RcodeRefused, nil
	}
	if b, res := f.cache.GetStale((*bp)[:0], r); res.Found {
		// Stale data, or the SERVFAIL fetch has just cached.
		f.countCached(b, res)
		return f.writeCached(w, r, b, bp, tcp, res)
	}
	f.m.servfail.Inc()
	return dns.RcodeServerFailure, err
}

// writeCached writes an answer from the cache. One whose CNAME chain has
// come to enter a served zone since it was stored (the zone was created
// later) is spliced as fetch splices fresh answers; the rest go out as the
// cached bytes.
func (f *forwarding) writeCached(w dns.ResponseWriter, r *dns.Msg, b []byte, bp *[]byte, tcp bool, res cache.Result) (int, error) {
	if res.Chain {
		m := new(dns.Msg)
		if m.Unpack(b) == nil && spliceZones(f.zones.Current(), m) {
			f.m.spliced.Inc()
			return m.Rcode, w.WriteMsg(m)
		}
	}
	return f.writeWire(w, r, b, bp, tcp)
}

// countCached counts a reply served from the cache: stale, a remembered
// SERVFAIL (every upstream failed), or a fresh answer.
func (f *forwarding) countCached(b []byte, res cache.Result) {
	switch {
	case res.Stale:
		f.m.stale.Inc()
	case len(b) >= 4 && b[3]&0x0f == dns.RcodeServerFailure:
		f.m.servfail.Inc()
	default:
		f.m.cached.Inc()
	}
}

// upstreamQuery is the query sent upstream for a client's query r, asking
// name and qtype: recursion desired, the client's CD bit, EDNS with our
// payload size and the client's DO bit. It is also the key under which the
// answer is cached, the same as the client's (name, type, class, DO, CD).
func (f *forwarding) upstreamQuery(r *dns.Msg, name string, qtype uint16) *dns.Msg {
	m := new(dns.Msg)
	m.Id = r.Id
	m.Opcode = dns.OpcodeQuery
	m.RecursionDesired = true
	m.CheckingDisabled = r.CheckingDisabled
	m.Question = []dns.Question{{Name: name, Qtype: qtype, Qclass: dns.ClassINET}}
	do := false
	if opt := r.IsEdns0(); opt != nil {
		do = opt.Do()
	}
	m.SetEdns0(f.ednsSize, do)
	return m
}

// fetch asks the upstreams q, stores the answer in the cache and returns it
// ready to write (without OPT: the writer adds ours). When every upstream
// asked failed it caches a SERVFAIL for q (unless the cache keeps serving
// stale data for it) and returns an error wrapping upstream.ErrAllFailed;
// when none could be asked (all at their in-flight cap, or closing) it
// caches nothing: that says nothing about the name.
//
// An answer whose CNAME chain enters a served zone is completed from the
// zones instead (spliceZones) and not cached, so that upstream copies of
// our own names are never served and a zone change is never hidden.
func (f *forwarding) fetch(ctx context.Context, q *dns.Msg) (*dns.Msg, error) {
	resp, err := f.up.Exchange(ctx, q)
	if err == nil && resp.Rcode > 0xF {
		// An extended rcode (BADVERS, BADCOOKIE…) is about our exchange
		// with that upstream, not about the name: nothing to pass on.
		err = fmt.Errorf("%w: extended rcode %s", upstream.ErrAllFailed, dns.RcodeToString[resp.Rcode])
	}
	if err != nil {
		if errors.Is(err, upstream.ErrAllFailed) && !errors.Is(err, upstream.ErrOverloaded) &&
			!errors.Is(err, upstream.ErrClosed) && ctx.Err() == nil {
			f.cache.Set(q, servfail(q))
		}
		return nil, err
	}
	extra := resp.Extra[:0]
	for _, rr := range resp.Extra {
		if rr.Header().Rrtype != dns.TypeOPT {
			extra = append(extra, rr)
		}
	}
	resp.Extra = extra
	resp.Authoritative = false // not ours; the cache clears it too
	if spliceZones(f.zones.Current(), resp) {
		f.m.spliced.Inc()
		return resp, nil
	}
	f.cache.Set(q, resp)
	return resp, nil
}

// spliceZones replaces the part of resp's CNAME chain that enters a
// served zone by the zones' own answer, and reports whether it did. The
// chain is followed from the question's name through the CNAMEs in
// resp's answer; the records of the names before the first served one are
// kept, and the answer for that name comes from lookup.Lookup: its
// records, its rcode and, for a negative answer, its SOA. The rest of the
// upstream's reply is dropped. A chain that leaves the zones again ends
// there, as the authority stage answers it.
func spliceZones(v *zone.View, resp *dns.Msg) bool {
	if v == nil || len(resp.Question) != 1 {
		return false
	}
	qtype := resp.Question[0].Qtype
	name := resp.Question[0].Name
	var keep []dns.RR
	for range lookup.MaxChain + 1 {
		if v.FindZone(strings.ToLower(dns.Fqdn(name))) != nil {
			res := lookup.Lookup(v, dns.Question{Name: name, Qtype: qtype, Qclass: dns.ClassINET})
			if res.Outcome == lookup.NotAuthoritative {
				return false
			}
			resp.Answer = append(keep, res.Answer...)
			resp.Rcode = res.Rcode
			resp.Ns, resp.Extra = nil, nil
			if res.Rcode == dns.RcodeNameError || !answers(res.Answer, qtype) {
				for _, rr := range res.Ns {
					if rr.Header().Rrtype == dns.TypeSOA {
						resp.Ns = append(resp.Ns, rr)
					}
				}
			}
			return true
		}
		next := ""
		for _, rr := range resp.Answer {
			if zone.EqualNames(rr.Header().Name, name) {
				keep = append(keep, rr)
				if c, ok := rr.(*dns.CNAME); ok && qtype != dns.TypeCNAME {
					next = c.Target
				}
			}
		}
		if next == "" {
			return false
		}
		name = next
	}
	return false
}

// servfail is the failure answer cached for q (RFC 9520): the question,
// SERVFAIL, RA=1, nothing else.
func servfail(q *dns.Msg) *dns.Msg {
	m := new(dns.Msg)
	m.Response = true
	m.Opcode = dns.OpcodeQuery
	m.RecursionDesired = true
	m.RecursionAvailable = true
	m.CheckingDisabled = q.CheckingDisabled
	m.Rcode = dns.RcodeServerFailure
	m.Question = []dns.Question{q.Question[0]}
	return m
}

// writeWire sends a packed answer from the cache (which holds answers
// without OPT): with our OPT record when r had one, and through the
// writer's truncation when it is larger than the client can take. bp is
// the pool buffer b came from; b may have outgrown it.
func (f *forwarding) writeWire(w dns.ResponseWriter, r *dns.Msg, b []byte, bp *[]byte, tcp bool) (int, error) {
	opt := r.IsEdns0()
	limit := dns.MaxMsgSize
	if !tcp {
		// RFC 6891 §6.2.5: below 512 means 512; never more than we
		// advertise. The writer applies the same rule to packed replies.
		limit = dns.MinMsgSize
		if opt != nil {
			limit = min(max(int(opt.UDPSize()), dns.MinMsgSize), int(f.ednsSize))
		}
	}
	if opt != nil {
		b = appendOPT(b, f.ednsSize, opt.Do())
	}
	if cap(b) <= 64<<10 {
		*bp = b[:0]
	}
	if len(b) <= limit {
		_, err := w.Write(b)
		return dns.RcodeSuccess, err
	}
	// Too large for this client (or no room for OPT): the writer cuts it
	// on whole RRsets and sets TC, as for any reply.
	m := new(dns.Msg)
	if err := m.Unpack(b); err != nil {
		return dns.RcodeServerFailure, fmt.Errorf("unpack cached answer: %w", err)
	}
	return dns.RcodeSuccess, w.WriteMsg(m)
}

// appendOPT appends an OPT record (RFC 6891: version 0, payload size, the
// DO bit, no options) to a packed message without one. It returns b
// unchanged when the additional count is full.
func appendOPT(b []byte, size uint16, do bool) []byte {
	if len(b) < 12 {
		return b
	}
	ar := uint16(b[10])<<8 | uint16(b[11])
	if ar == 0xFFFF {
		return b
	}
	var flags byte
	if do {
		flags = 0x80
	}
	b = append(b, 0, 0, byte(dns.TypeOPT), byte(size>>8), byte(size), 0, 0, flags, 0, 0, 0)
	ar++
	b[10], b[11] = byte(ar>>8), byte(ar)
	return b
}

// prefetch refreshes r's entry in the background. Each entry signals once
// per lifetime (cache.Result.Prefetch); beyond maxPrefetches at once the
// signal is dropped.
func (f *forwarding) prefetch(r *dns.Msg) {
	select {
	case f.slots <- struct{}{}:
	default:
		f.m.prefetchDropped.Inc()
		return
	}
	q := f.upstreamQuery(r, r.Question[0].Name, r.Question[0].Qtype)
	f.pmu.Lock()
	if f.pclosed {
		f.pmu.Unlock()
		<-f.slots
		return
	}
	f.pwg.Add(1)
	f.pmu.Unlock()
	go func() {
		defer f.pwg.Done()
		defer func() { <-f.slots }()
		ctx, cancel := context.WithTimeout(f.base, f.fetchTimeout)
		defer cancel()
		if _, err := f.fetch(ctx, q); err != nil {
			f.m.prefetchFailed.Inc()
			f.log.Debug("prefetch failed", "qname", q.Question[0].Name,
				"qtype", dns.Type(q.Question[0].Qtype).String(), "error", err)
			return
		}
		f.m.prefetchDone.Inc()
	}()
}

// run keeps the cache dump fresh until ctx ends, then stops the stage.
func (f *forwarding) run(ctx context.Context) {
	var tick <-chan time.Time
	if f.persisting() {
		t := time.NewTicker(f.persistEvery)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			f.stop()
			return
		case <-tick:
			f.dump()
		}
	}
}

// stop ends the prefetches and the upstreams, writes the last dump and
// releases the cache. Queries still running then miss and fail.
func (f *forwarding) stop() {
	f.pmu.Lock()
	f.pclosed = true
	f.pmu.Unlock()
	f.cancel()
	f.pwg.Wait()
	f.up.Close()
	if f.persisting() {
		f.dump()
	}
	f.cache.Close()
}

// brokenForwarding stands in for a forwarding stage that could not be built:
// SERVFAIL for names outside the zones, the zones' part of a CNAME chain
// that leaves them.
func brokenForwarding(next Handler) Handler {
	return HandlerFunc(func(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
		if d := danglingFrom(ctx); d != nil {
			return writeAuthority(w, r, d)
		}
		if r.Question[0].Qclass != dns.ClassINET {
			return next.ServeDNS(ctx, w, r)
		}
		return dns.RcodeServerFailure, nil
	})
}
