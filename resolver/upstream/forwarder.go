// Package upstream forwards DNS queries to upstream resolvers over UDP, TCP,
// TLS (RFC 7858) and HTTPS (RFC 8484).
//
// A Forwarder maps zones to groups of upstreams (longest suffix of the query
// name wins, "." is the default) and tries a group's upstreams in the order of
// its policy: random, round_robin, sequential or lowest_latency. An attempt
// that times out, fails, or gets SERVFAIL or REFUSED moves on to the next
// upstream; a UDP answer with TC=1 is retried over TCP. Every answer is checked
// against its query (ID, question, QR) and anything else is dropped; each UDP
// query uses a new socket and a random ID. Health probes take an upstream out
// of rotation after consecutive failures and put it back when it answers.
// Identical concurrent queries share one upstream query. Each upstream has an
// in-flight cap.
//
// The package does not cache: the query chain puts resolver/cache in front.
package upstream

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// Forwarder sends queries to upstreams. Exchange is safe for concurrent use.
type Forwarder struct {
	cfg    Config
	log    *slog.Logger
	groups map[string]*group // by canonical zone
	ups    []*upstream       // each address once
	m      *metrics
	fl     flights

	probeName string
	probeType uint16

	goes     tracker         // goroutines: probers, connection readers and writers
	attempts tracker         // upstream attempts in flight on callers' goroutines
	base     context.Context // cancelled by Close
	cancel   context.CancelFunc
	done     chan struct{} // closed by Close

	startOnce, closeOnce sync.Once
	closed               atomic.Bool
	probing              atomic.Bool // health probers run: upstreams may be marked down

	// onHealth, when set before Start (tests), sees every health transition.
	onHealth func(upstream string, healthy bool)
}

// New builds a Forwarder; Start begins its health checks. log must not be
// nil; reg may be nil to skip metric registration.
func New(cfg Config, log *slog.Logger, reg prometheus.Registerer) (*Forwarder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	tlsBase, err := baseTLS(cfg.CAFile)
	if err != nil {
		return nil, fmt.Errorf("upstream config: %w", err)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	f := &Forwarder{
		cfg:       cfg,
		log:       log.With("component", "upstream"),
		groups:    make(map[string]*group, len(cfg.Forward)),
		m:         m,
		fl:        flights{m: make(map[flightKey]*flight), coalesced: m.coalesced},
		probeName: dns.Fqdn(cfg.HealthCheckName),
		probeType: dns.StringToType[strings.ToUpper(cfg.HealthCheckType)],
		done:      make(chan struct{}),
	}
	f.base, f.cancel = context.WithCancel(context.Background())

	zones := make([]string, 0, len(cfg.Forward))
	for z := range cfg.Forward {
		zones = append(zones, z)
	}
	sort.Strings(zones)
	byName := make(map[string]*upstream)
	for _, z := range zones {
		canon, _ := canonicalZone(z) // validated
		g := &group{zone: canon}
		seen := make(map[*upstream]bool)
		for _, s := range cfg.Forward[z] {
			a, _ := ParseAddr(s) // validated
			u := byName[a.String()]
			if u == nil {
				u = f.newUpstream(a, tlsBase)
				byName[u.name] = u
				f.ups = append(f.ups, u)
			}
			if !seen[u] {
				seen[u] = true
				g.ups = append(g.ups, u)
			}
		}
		f.groups[canon] = g
	}
	return f, nil
}

func (f *Forwarder) newUpstream(a Addr, tlsBase *tls.Config) *upstream {
	name := a.String()
	u := &upstream{
		addr:         a,
		name:         name,
		maxInflight:  int64(f.cfg.MaxInflight),
		requests:     f.m.requests.WithLabelValues(name),
		dropped:      f.m.dropped.WithLabelValues(name),
		tcpFallbacks: f.m.tcpFallbacks.WithLabelValues(name),
		probeFails:   f.m.probeFails.WithLabelValues(name),
		duration:     f.m.duration.WithLabelValues(name),
		healthGauge:  f.m.healthy.WithLabelValues(name),
	}
	u.responses = f.m.responses.MustCurryWith(prometheus.Labels{"upstream": name})
	u.errors = f.m.errors.MustCurryWith(prometheus.Labels{"upstream": name})
	u.healthy.Store(true)
	u.healthGauge.Set(1)
	dropped := u.dropped.Inc

	stream := func(dial func(context.Context) (net.Conn, error)) *streamTransport {
		return &streamTransport{
			name: name, dial: dial, dialTimeout: f.cfg.AttemptTimeout, idle: f.cfg.IdleTimeout,
			base: f.base, goes: &f.goes, dropped: dropped,
		}
	}
	var nd net.Dialer
	tcpDial := func(ctx context.Context) (net.Conn, error) { return nd.DialContext(ctx, "tcp", a.Dial) }
	switch a.Proto {
	case UDP:
		u.primary = &udpTransport{addr: a.Dial, dropped: dropped}
		u.tcp = stream(tcpDial)
	case TCP:
		u.primary = stream(tcpDial)
	case TLS:
		td := &tls.Dialer{Config: tlsFor(tlsBase, a)}
		u.primary = stream(func(ctx context.Context) (net.Conn, error) { return td.DialContext(ctx, "tcp", a.Dial) })
	case HTTPS:
		u.primary = newDoH(a, f.cfg.DoHMethod, tlsFor(tlsBase, a), f.cfg.IdleTimeout, f.cfg.AttemptTimeout)
	}
	return u
}

// Start begins the health checks, if configured. It is a no-op after the
// first call or after Close.
func (f *Forwarder) Start() {
	f.startOnce.Do(func() {
		if f.cfg.HealthCheckInterval <= 0 {
			return
		}
		for _, u := range f.ups {
			if !f.goes.goFunc(func() { f.probeLoop(u) }) {
				return
			}
			f.probing.Store(true)
		}
	})
}

// Close stops the health checks, closes every upstream connection and waits
// for the Forwarder's goroutines. Exchanges in progress fail; later ones get
// ErrClosed. Close is idempotent.
func (f *Forwarder) Close() error {
	f.closeOnce.Do(func() {
		f.closed.Store(true)
		// Cancel attempts and probes, and wait for the attempts, so that
		// no connection is put back into a pool after it was emptied.
		f.cancel()
		close(f.done)
		f.attempts.closeAndWait()
		for _, u := range f.ups {
			u.primary.close()
			if u.tcp != nil {
				u.tcp.close()
			}
		}
		f.goes.closeAndWait()
		f.m.unregister()
	})
	return nil
}

// Exchange forwards q and returns the answer, with q's ID and question-name
// case. When q's context has no deadline, QueryTimeout applies.
//
// Errors wrap ErrBadQuery, ErrNoUpstream, ErrClosed or ErrAllFailed. With
// ErrAllFailed the returned message, if not nil, is the last SERVFAIL or
// REFUSED answer received: the caller may cache it briefly (RFC 2308 §7) or
// serve stale data instead (RFC 8767).
func (f *Forwarder) Exchange(ctx context.Context, q *dns.Msg) (*dns.Msg, error) {
	if f.closed.Load() {
		return nil, ErrClosed
	}
	if q == nil || len(q.Question) != 1 {
		return nil, ErrBadQuery
	}
	g := f.groupFor(q.Question[0].Name)
	if g == nil {
		f.m.exchanges.WithLabelValues("no_upstream").Inc()
		return nil, fmt.Errorf("%w: %s", ErrNoUpstream, q.Question[0].Name)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.cfg.QueryTimeout)
		defer cancel()
	}
	resp, err, shared := f.fl.do(ctx, keyOf(q), func(ctx context.Context) (*dns.Msg, error) {
		return f.resolve(ctx, g, q)
	})
	if shared && resp != nil {
		resp = resp.Copy()
	}
	if resp != nil {
		resp.Id = q.Id
		if len(resp.Question) == 1 {
			resp.Question[0].Name = q.Question[0].Name
		}
	}
	if err != nil {
		f.m.exchanges.WithLabelValues("failed").Inc()
	} else {
		f.m.exchanges.WithLabelValues("answered").Inc()
	}
	return resp, err
}

// groupFor finds the group of the longest zone containing name.
func (f *Forwarder) groupFor(name string) *group {
	name = strings.ToLower(dns.Fqdn(name))
	for off, end := 0, false; !end; off, end = dns.NextLabel(name, off) {
		if g := f.groups[name[off:]]; g != nil {
			return g
		}
	}
	return f.groups["."]
}

// resolve tries the group's upstreams in policy order.
func (f *Forwarder) resolve(ctx context.Context, g *group, q *dns.Msg) (*dns.Msg, error) {
	var (
		lastResp *dns.Msg
		lastErr  error = ErrNoUpstream
		tried    int
	)
	for _, u := range g.order(f.cfg.Policy) {
		if tried == f.cfg.MaxAttempts || ctx.Err() != nil {
			break
		}
		if !u.acquire() {
			u.errors.WithLabelValues(errReason(ErrOverloaded)).Inc()
			lastErr = fmt.Errorf("%s: %w", u.name, ErrOverloaded)
			continue
		}
		if !f.attempts.enter() {
			u.release()
			lastErr = ErrClosed
			break
		}
		tried++
		actx, cancel := context.WithTimeout(ctx, f.cfg.AttemptTimeout)
		stop := context.AfterFunc(f.base, cancel) // Close ends attempts in flight
		start := time.Now()
		r, err := u.exchange(actx, q)
		stop()
		cancel()
		f.attempts.leave()
		u.release()
		switch {
		case err != nil:
			if errors.Is(err, ErrTimeout) {
				u.observe(f.cfg.AttemptTimeout) // a timeout is as slow as it gets
			}
			if upstreamFault(err) {
				f.failed(u, err)
			}
			f.log.Debug("upstream attempt failed", "upstream", u.name, "qname", q.Question[0].Name, "error", err)
			lastErr = err
		case r.Rcode == dns.RcodeServerFailure || r.Rcode == dns.RcodeRefused:
			u.observe(time.Since(start))
			f.succeeded(u)
			lastResp = r
			lastErr = fmt.Errorf("%s: %w %s", u.name, errRcode, dns.RcodeToString[r.Rcode])
		default:
			u.observe(time.Since(start))
			f.succeeded(u)
			return r, nil
		}
	}
	if err := ctx.Err(); err != nil && tried > 0 {
		lastErr = fmt.Errorf("%w (last: %v)", ioError(ctx, err), lastErr)
	}
	return lastResp, fmt.Errorf("%w: %w", ErrAllFailed, lastErr)
}
