package resolver_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kudurru/kudurru/fsm/zone"
	"github.com/kudurru/kudurru/resolver"
	"github.com/kudurru/kudurru/resolver/resolvertest"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// Upstream modes.
const (
	upAnswer   int32 = iota // answer from the records
	upServfail              // SERVFAIL everything
)

// testUpstream is an authoritative-looking miekg/dns server on a
// kernel-chosen 127.0.0.1 UDP port that answers from a fixed record set and
// counts the queries it gets.
type testUpstream struct {
	addr    string
	srv     *dns.Server
	queries atomic.Int64
	mode    atomic.Int32
	// seen receives the name of every question, while it has room.
	seen chan string

	mu   sync.Mutex
	data map[string][]dns.RR // by lower-case owner; guarded by mu
}

// startUpstream serves records (zone file syntax) on UDP until the test
// ends or stop is called. Names without records get NXDOMAIN with an SOA of
// upstream.test.
func startUpstream(t *testing.T, records ...string) *testUpstream {
	t.Helper()
	u := &testUpstream{data: map[string][]dns.RR{}, seen: make(chan string, 64)}
	for _, s := range records {
		u.add(resolvertest.RR(t, s))
	}
	started := make(chan struct{})
	u.srv = &dns.Server{Addr: "127.0.0.1:0", Net: "udp", Handler: dns.HandlerFunc(u.serve),
		NotifyStartedFunc: func() { close(started) }}
	errc := make(chan error, 1)
	go func() { errc <- u.srv.ListenAndServe() }()
	select {
	case <-started:
	case err := <-errc:
		t.Fatalf("upstream: %v", err)
	}
	u.addr = u.srv.PacketConn.LocalAddr().String()
	t.Cleanup(func() { u.stop(); <-errc })
	return u
}

func (u *testUpstream) add(rr dns.RR) {
	u.mu.Lock()
	defer u.mu.Unlock()
	k := strings.ToLower(rr.Header().Name)
	u.data[k] = append(u.data[k], rr)
}

// url is the upstream address as dns.forward takes it.
func (u *testUpstream) url() string { return "udp://" + u.addr }

// stop takes the upstream down: its port is closed.
func (u *testUpstream) stop() { u.srv.Shutdown() }

func (u *testUpstream) serve(w dns.ResponseWriter, r *dns.Msg) {
	u.queries.Add(1)
	q := r.Question[0]
	select {
	case u.seen <- strings.ToLower(q.Name):
	default:
	}
	m := new(dns.Msg)
	m.SetReply(r)
	m.RecursionAvailable = true
	if o := r.IsEdns0(); o != nil {
		m.SetEdns0(4096, o.Do())
	}
	if u.mode.Load() == upServfail {
		m.Rcode = dns.RcodeServerFailure
		w.WriteMsg(m)
		return
	}
	u.mu.Lock()
	rrs := u.data[strings.ToLower(q.Name)]
	u.mu.Unlock()
	for _, rr := range rrs {
		if rr.Header().Rrtype == q.Qtype || rr.Header().Rrtype == dns.TypeCNAME {
			c := dns.Copy(rr)
			c.Header().Name = q.Name
			m.Answer = append(m.Answer, c)
		}
	}
	if len(rrs) == 0 {
		m.Rcode = dns.RcodeNameError
	}
	if len(m.Answer) == 0 {
		soa, _ := dns.NewRR("upstream.test. 300 IN SOA ns.upstream.test. host.upstream.test. 1 3600 600 86400 60")
		m.Ns = append(m.Ns, soa)
	}
	w.WriteMsg(m)
}

// fwdOptions adjusts startForwarder.
type fwdOptions struct {
	zones  resolver.Zones
	blobs  resolver.BlobStore
	reg    *prometheus.Registry
	log    *slog.Logger
	config func(*resolver.Config)
}

// startForwarder starts a server on 127.0.0.1 that forwards "." to ups and
// closes it when the test ends. Health checks are off, timeouts short.
func startForwarder(t *testing.T, o fwdOptions, ups ...*testUpstream) *resolver.Server {
	t.Helper()
	if o.zones == nil {
		o.zones = resolvertest.NewZones(readyView())
	}
	var urls []string
	for _, u := range ups {
		urls = append(urls, u.url())
	}
	var reg prometheus.Registerer
	if o.reg != nil {
		reg = o.reg
	}
	return resolvertest.Start(t, o.zones, resolvertest.Options{
		Registry: reg,
		Logger:   o.log,
		Blobs:    o.blobs,
		Config: func(c *resolver.Config) {
			c.Forward = []resolver.ForwardZone{{Zone: ".", Upstreams: urls}}
			c.Upstream.HealthCheckInterval = 0
			c.Upstream.Policy = "sequential"
			c.Upstream.AttemptTimeout = 300 * time.Millisecond
			c.Upstream.QueryTimeout = time.Second
			if o.config != nil {
				o.config(c)
			}
		},
	})
}

// readyView is a View holding zs with applied index 1: the state of a node
// that has heard from Raft (at index 0 nothing is forwarded).
func readyView(zs ...*zone.Zone) *zone.View {
	b := resolvertest.View(zs...).Edit()
	b.SetIndex(1)
	return b.View()
}

// memBlobs is a BlobStore in memory.
type memBlobs struct {
	mu sync.Mutex
	m  map[string][]byte // guarded by mu
}

func (b *memBlobs) PutBlob(name string, data []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string][]byte{}
	}
	b.m[name] = bytes.Clone(data)
	return nil
}

func (b *memBlobs) GetBlob(name string) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.m[name]), nil
}

// logBuffer collects log lines for assertions and sends them to t.Log.
type logBuffer struct {
	t  testing.TB
	mu sync.Mutex
	b  strings.Builder // guarded by mu
}

func newLogBuffer(t testing.TB) (*logBuffer, *slog.Logger) {
	lb := &logBuffer{t: t}
	return lb, slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.b.Write(p)
	l.mu.Unlock()
	l.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// ask sends a query over UDP (with EDNS 1232 unless edns is 0) and returns
// the reply.
func ask(t *testing.T, addr, name string, qtype uint16, edns uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	if edns > 0 {
		m.SetEdns0(edns, false)
	}
	return resolvertest.Exchange(t, "udp", addr, m)
}

// firstA returns the address of the first A record of r, or "".
func firstA(r *dns.Msg) string {
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			return a.A.String()
		}
	}
	return ""
}

// counterValue reads a counter (or gauge) from a registry by name and
// labels ("" for none), 0 when absent.
func counterValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.Metric {
			for _, lp := range m.Label {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue metric
				}
			}
			if m.Counter != nil {
				return m.Counter.GetValue()
			}
			return m.Gauge.GetValue()
		}
	}
	return 0
}

// newTestZone is new.test., a zone the tests create after names under it
// were answered from upstream.
const newTestZone = `
$TTL 60
@     IN SOA ns1 hostmaster 1 7200 3600 1209600 60
@     IN NS  ns1
ns1   IN A   198.51.100.53
www   IN A   198.51.100.1
`
