package resolver

import (
	"log/slog"
	"net"
	"testing"

	"github.com/kudurru/kudurru/fsm/zone"
	"github.com/miekg/dns"
)

// benchWriter is a dns.ResponseWriter that keeps the last reply.
type benchWriter struct {
	addr net.Addr
	last []byte
}

func (w *benchWriter) LocalAddr() net.Addr  { return w.addr }
func (w *benchWriter) RemoteAddr() net.Addr { return w.addr }
func (w *benchWriter) WriteMsg(m *dns.Msg) error {
	b, err := m.Pack()
	w.last = b
	return err
}
func (w *benchWriter) Write(b []byte) (int, error) {
	w.last = append(w.last[:0], b...)
	return len(b), nil
}
func (w *benchWriter) Close() error        { return nil }
func (w *benchWriter) TsigStatus() error   { return nil }
func (w *benchWriter) TsigTimersOnly(bool) {}
func (w *benchWriter) Hijack()             {}

type benchZones struct{}

var benchView = func() *zone.View { b := zone.Empty.Edit(); b.SetIndex(1); return b.View() }()

func (benchZones) Current() *zone.View { return benchView }

// BenchmarkForwardCacheHit measures the query chain for a name answered
// from the cache: the hot path of a caching forwarder, without sockets.
func BenchmarkForwardCacheHit(b *testing.B) {
	up := &dns.Server{Addr: "127.0.0.1:0", Net: "udp", Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg).SetReply(r)
		m.RecursionAvailable = true
		a, _ := dns.NewRR(r.Question[0].Name + " 300 IN A 192.0.2.1")
		m.Answer = []dns.RR{a}
		w.WriteMsg(m)
	})}
	started := make(chan struct{})
	up.NotifyStartedFunc = func() { close(started) }
	done := make(chan error, 1)
	go func() { done <- up.ListenAndServe() }()
	<-started
	defer func() { up.Shutdown(); <-done }()

	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.Forward = []ForwardZone{{Zone: ".", Upstreams: []string{"udp://" + up.PacketConn.LocalAddr().String()}}}
	cfg.Upstream.HealthCheckInterval = 0
	cfg.Cache.PrefetchHits = 0
	s, err := New(cfg, Deps{Zones: benchZones{}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	q := new(dns.Msg)
	q.SetQuestion("www.upstream.test.", dns.TypeA)
	q.SetEdns0(1232, false)
	w := &benchWriter{addr: &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5353}}
	serve := func() {
		rw := new(responseWriter)
		rw.init(w, q, false, 1, cfg.EDNSUDPSize)
		s.serveMsg(rw, q)
	}
	serve() // the miss: fills the cache
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		serve()
	}
	if r := new(dns.Msg); r.Unpack(w.last) != nil || len(r.Answer) != 1 || r.IsEdns0() == nil {
		b.Fatalf("reply %x", w.last)
	}
}
