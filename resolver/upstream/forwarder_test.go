package upstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestExchangeUDP(t *testing.T) {
	srv := startDNS(t, answerA("192.0.2.1"))
	f, _ := newForwarder(t, testConfig(map[string][]string{".": {srv.url("udp")}}), nil)
	q := query("WwW.Example.", dns.TypeA)
	r, err := f.Exchange(context.Background(), q)
	if err != nil {
		t.Fatalf("Exchange: %v", err)
	}
	if r.Id != q.Id || r.Question[0].Name != "WwW.Example." || len(r.Answer) != 1 {
		t.Errorf("answer id=%#x question=%q answers=%d, want id=%#x, the query's name, 1 answer",
			r.Id, r.Question[0].Name, len(r.Answer), q.Id)
	}
	if srv.udpQueries.Load() != 1 || srv.tcpQueries.Load() != 0 {
		t.Errorf("server saw %d UDP and %d TCP queries, want 1 and 0", srv.udpQueries.Load(), srv.tcpQueries.Load())
	}
}

func TestExchangeBadInput(t *testing.T) {
	f, _ := newForwarder(t, testConfig(map[string][]string{"corp.example.": {"udp://127.0.0.1:9"}}), nil)
	cases := []struct {
		name string
		q    *dns.Msg
		want error
	}{
		{"nil", nil, ErrBadQuery},
		{"no question", new(dns.Msg), ErrBadQuery},
		{"name outside every zone", query("www.example.", dns.TypeA), ErrNoUpstream},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := f.Exchange(context.Background(), tc.q); !errors.Is(err, tc.want) {
				t.Errorf("Exchange = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestRetryNextUpstream(t *testing.T) {
	cases := []struct {
		name    string
		first   dns.HandlerFunc
		errText string // logged reason, for the record
	}{
		{"timeout", silent, "timed out"},
		{"SERVFAIL", rcodeHandler(dns.RcodeServerFailure), "SERVFAIL"},
		{"REFUSED", rcodeHandler(dns.RcodeRefused), "REFUSED"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bad := startDNS(t, tc.first)
			good := startDNS(t, answerA("192.0.2.2"))
			cfg := testConfig(map[string][]string{".": {bad.url("udp"), good.url("udp")}})
			cfg.AttemptTimeout = 200 * time.Millisecond
			f, _ := newForwarder(t, cfg, nil)
			r, err := f.Exchange(context.Background(), query("retry.example.", dns.TypeA))
			if err != nil {
				t.Fatalf("Exchange: %v", err)
			}
			if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
				t.Errorf("answer %v, want the second upstream's", r)
			}
			if bad.udpQueries.Load() != 1 || good.udpQueries.Load() != 1 {
				t.Errorf("queries: first %d, second %d; want 1 each", bad.udpQueries.Load(), good.udpQueries.Load())
			}
		})
	}
}

func TestAllFailed(t *testing.T) {
	t.Run("all SERVFAIL returns the last answer", func(t *testing.T) {
		a := startDNS(t, rcodeHandler(dns.RcodeServerFailure))
		b := startDNS(t, rcodeHandler(dns.RcodeRefused))
		f, _ := newForwarder(t, testConfig(map[string][]string{".": {a.url("udp"), b.url("udp")}}), nil)
		r, err := f.Exchange(context.Background(), query("dead.example.", dns.TypeA))
		if !errors.Is(err, ErrAllFailed) {
			t.Fatalf("Exchange error %v, want ErrAllFailed", err)
		}
		if r == nil || r.Rcode != dns.RcodeRefused || r.Id != 0x4242 {
			t.Errorf("answer %v, want the last (REFUSED) answer with the query's ID", r)
		}
	})
	t.Run("all time out", func(t *testing.T) {
		a := startDNS(t, silent)
		cfg := testConfig(map[string][]string{".": {a.url("udp")}})
		cfg.AttemptTimeout = 100 * time.Millisecond
		f, _ := newForwarder(t, cfg, nil)
		r, err := f.Exchange(context.Background(), query("dead.example.", dns.TypeA))
		if !errors.Is(err, ErrAllFailed) || !errors.Is(err, ErrTimeout) || r != nil {
			t.Errorf("Exchange = %v, %v; want nil and ErrAllFailed wrapping ErrTimeout", r, err)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		a := startDNS(t, silent)
		a.stop() // port closed: ICMP port unreachable, so failure is fast
		f, _ := newForwarder(t, testConfig(map[string][]string{".": {a.url("udp")}}), nil)
		start := time.Now()
		if _, err := f.Exchange(context.Background(), query("dead.example.", dns.TypeA)); !errors.Is(err, ErrAllFailed) {
			t.Errorf("Exchange = %v, want ErrAllFailed", err)
		}
		t.Logf("failed after %s", time.Since(start))
	})
	t.Run("query deadline bounds the attempts", func(t *testing.T) {
		a, b := startDNS(t, silent), startDNS(t, silent)
		cfg := testConfig(map[string][]string{".": {a.url("udp"), b.url("udp")}})
		cfg.AttemptTimeout = time.Second
		f, _ := newForwarder(t, cfg, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := f.Exchange(ctx, query("slow.example.", dns.TypeA))
		if !errors.Is(err, ErrAllFailed) || !errors.Is(err, ErrTimeout) {
			t.Errorf("Exchange = %v, want ErrAllFailed wrapping ErrTimeout", err)
		}
		if d := time.Since(start); d > 900*time.Millisecond {
			t.Errorf("Exchange took %s, beyond its 150ms deadline", d)
		}
		if b.udpQueries.Load() != 0 {
			t.Errorf("second upstream queried after the deadline")
		}
	})
}

func TestTruncatedRetriesOverTCP(t *testing.T) {
	srv := startDNS(t, func(w dns.ResponseWriter, r *dns.Msg) {
		if _, tcp := w.RemoteAddr().(*net.TCPAddr); !tcp {
			m := new(dns.Msg)
			m.SetReply(r)
			m.Truncated = true
			w.WriteMsg(m)
			return
		}
		answerA("192.0.2.3")(w, r)
	})
	f, reg := newForwarder(t, testConfig(map[string][]string{".": {srv.url("udp")}}), nil)
	r, err := f.Exchange(context.Background(), query("big.example.", dns.TypeA))
	if err != nil {
		t.Fatal(err)
	}
	if r.Truncated || len(r.Answer) != 1 {
		t.Errorf("answer TC=%v with %d records, want the full TCP answer", r.Truncated, len(r.Answer))
	}
	if srv.udpQueries.Load() != 1 || srv.tcpQueries.Load() != 1 {
		t.Errorf("server saw %d UDP and %d TCP queries, want 1 and 1", srv.udpQueries.Load(), srv.tcpQueries.Load())
	}
	if got := testutil.ToFloat64(f.m.tcpFallbacks.WithLabelValues(srv.url("udp"))); got != 1 {
		t.Errorf("tcp_fallbacks_total = %v, want 1", got)
	}
	_ = reg
}

func TestMismatchedRepliesDropped(t *testing.T) {
	bogus := func(r *dns.Msg, edit func(m *dns.Msg)) *dns.Msg {
		m := new(dns.Msg)
		m.SetReply(r)
		m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: r.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.IPv4(203, 0, 113, 66)}}
		edit(m)
		return m
	}
	spoofs := []func(m *dns.Msg){
		func(m *dns.Msg) { m.Id++ },                                // wrong ID
		func(m *dns.Msg) { m.Question[0].Name = "evil.example." },  // wrong name
		func(m *dns.Msg) { m.Question[0].Qtype = dns.TypeAAAA },    // wrong type
		func(m *dns.Msg) { m.Question[0].Qclass = dns.ClassCHAOS }, // wrong class
		func(m *dns.Msg) { m.Response = false },                    // not a response
		func(m *dns.Msg) { m.Question = nil },                      // no question
	}
	t.Run("spoofs then the real answer", func(t *testing.T) {
		srv := startDNS(t, func(w dns.ResponseWriter, r *dns.Msg) {
			for _, s := range spoofs {
				w.WriteMsg(bogus(r, s))
			}
			w.Write([]byte{0xde, 0xad}) // not even a header
			answerA("192.0.2.4")(w, r)
		})
		f, _ := newForwarder(t, testConfig(map[string][]string{".": {srv.url("udp")}}), nil)
		r, err := f.Exchange(context.Background(), query("spoof.example.", dns.TypeA))
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Answer[0].(*dns.A).A.String(); got != "192.0.2.4" {
			t.Errorf("accepted a spoofed answer: %s", got)
		}
		if got := testutil.ToFloat64(f.m.dropped.WithLabelValues(srv.url("udp"))); got != float64(len(spoofs)+1) {
			t.Errorf("replies_dropped_total = %v, want %d", got, len(spoofs)+1)
		}
	})
	t.Run("only spoofs: timeout", func(t *testing.T) {
		srv := startDNS(t, func(w dns.ResponseWriter, r *dns.Msg) {
			for _, s := range spoofs {
				w.WriteMsg(bogus(r, s))
			}
		})
		cfg := testConfig(map[string][]string{".": {srv.url("udp")}})
		cfg.AttemptTimeout = 200 * time.Millisecond
		f, _ := newForwarder(t, cfg, nil)
		if _, err := f.Exchange(context.Background(), query("spoof.example.", dns.TypeA)); !errors.Is(err, ErrTimeout) {
			t.Errorf("Exchange = %v, want a timeout", err)
		}
	})
	t.Run("tcp: wrong question is not delivered", func(t *testing.T) {
		srv := startDNS(t, func(w dns.ResponseWriter, r *dns.Msg) {
			w.WriteMsg(bogus(r, spoofs[1]))
		})
		cfg := testConfig(map[string][]string{".": {srv.url("tcp")}})
		cfg.AttemptTimeout = 200 * time.Millisecond
		f, _ := newForwarder(t, cfg, nil)
		if _, err := f.Exchange(context.Background(), query("spoof.example.", dns.TypeA)); !errors.Is(err, ErrTimeout) {
			t.Errorf("Exchange = %v, want a timeout", err)
		}
	})
}

func TestFreshPortAndRandomIDPerQuery(t *testing.T) {
	var (
		mu    sync.Mutex
		ports = map[int]bool{}
		ids   = map[uint16]bool{}
	)
	srv := startDNS(t, func(w dns.ResponseWriter, r *dns.Msg) {
		mu.Lock()
		ports[w.RemoteAddr().(*net.UDPAddr).Port] = true
		ids[r.Id] = true
		mu.Unlock()
		answerA("192.0.2.5")(w, r)
	})
	f, _ := newForwarder(t, testConfig(map[string][]string{".": {srv.url("udp")}}), nil)
	const n = 20
	for i := range n {
		q := query(fmt.Sprintf("q%d.example.", i), dns.TypeA)
		q.Id = 7 // the client's ID never reaches the upstream
		r, err := f.Exchange(context.Background(), q)
		if err != nil || r.Id != 7 {
			t.Fatalf("Exchange %d: %v, id %v", i, err, r)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	// Ephemeral ports may repeat over many queries, but not within 20.
	if len(ports) < n-1 {
		t.Errorf("%d distinct source ports for %d queries", len(ports), n)
	}
	if len(ids) < n-1 {
		t.Errorf("%d distinct IDs for %d queries: the ID is not random per query", len(ids), n)
	}
}

func TestForwardZones(t *testing.T) {
	def := startDNS(t, answerA("192.0.2.10"))
	corp := startDNS(t, answerA("192.0.2.20"))
	lab := startDNS(t, answerA("192.0.2.30"))
	f, _ := newForwarder(t, testConfig(map[string][]string{
		".":                 {def.url("udp")},
		"Corp.Example":      {corp.url("udp")},
		"lab.corp.example.": {lab.url("udp")},
	}), nil)
	cases := []struct{ qname, want string }{
		{"www.example.", "192.0.2.10"},
		{"corp.example.", "192.0.2.20"},
		{"WWW.CORP.EXAMPLE.", "192.0.2.20"},
		{"x.lab.corp.example.", "192.0.2.30"},
		{"notcorp.example.", "192.0.2.10"},
		{"corp.example.org.", "192.0.2.10"},
		{".", "192.0.2.10"},
	}
	for _, tc := range cases {
		t.Run(tc.qname, func(t *testing.T) {
			r, err := f.Exchange(context.Background(), query(tc.qname, dns.TypeA))
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Answer[0].(*dns.A).A.String(); got != tc.want {
				t.Errorf("answered by %s, want %s", got, tc.want)
			}
		})
	}
}

func TestInflightCap(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	blocking := startDNS(t, func(w dns.ResponseWriter, r *dns.Msg) {
		arrived <- struct{}{}
		<-release
		answerA("192.0.2.1")(w, r)
	})
	other := startDNS(t, answerA("192.0.2.2"))

	run := func(t *testing.T, addrs []string) (first chan error, f *Forwarder) {
		cfg := testConfig(map[string][]string{".": addrs})
		cfg.MaxInflight = 1
		cfg.AttemptTimeout = 2 * time.Second
		f, _ = newForwarder(t, cfg, nil)
		first = make(chan error, 1)
		go func() {
			_, err := f.Exchange(context.Background(), query("slow.example.", dns.TypeA))
			first <- err
		}()
		<-arrived // the first query holds the only slot of the blocking upstream
		return first, f
	}
	t.Run("excess goes to the next upstream", func(t *testing.T) {
		first, f := run(t, []string{blocking.url("udp"), other.url("udp")})
		r, err := f.Exchange(context.Background(), query("other.example.", dns.TypeA))
		if err != nil || r.Answer[0].(*dns.A).A.String() != "192.0.2.2" {
			t.Errorf("second query: %v, %v; want the other upstream's answer", r, err)
		}
		release <- struct{}{}
		if err := <-first; err != nil {
			t.Errorf("first query: %v", err)
		}
	})
	t.Run("no room anywhere fails fast", func(t *testing.T) {
		first, f := run(t, []string{blocking.url("udp")})
		start := time.Now()
		_, err := f.Exchange(context.Background(), query("other.example.", dns.TypeA))
		if !errors.Is(err, ErrAllFailed) || !errors.Is(err, ErrOverloaded) {
			t.Errorf("second query: %v, want ErrAllFailed wrapping ErrOverloaded", err)
		}
		if d := time.Since(start); d > 100*time.Millisecond {
			t.Errorf("overloaded query took %s, want an immediate failure", d)
		}
		release <- struct{}{}
		if err := <-first; err != nil {
			t.Errorf("first query: %v", err)
		}
	})
}

func TestClose(t *testing.T) {
	srv := startDNS(t, answerA("192.0.2.1"))
	cfg := testConfig(map[string][]string{".": {srv.url("tcp")}})
	cfg.HealthCheckInterval = 10 * time.Millisecond
	cfg.HealthCheckMaxInterval = 20 * time.Millisecond
	f, reg := newForwarder(t, cfg, nil)
	if _, err := f.Exchange(context.Background(), query("x.example.", dns.TypeA)); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := f.Close(); err != nil {
			t.Fatalf("Close #%d: %v", i+1, err)
		}
	}
	if _, err := f.Exchange(context.Background(), query("x.example.", dns.TypeA)); !errors.Is(err, ErrClosed) {
		t.Errorf("Exchange after Close = %v, want ErrClosed", err)
	}
	f.Start() // no-op after Close
	if mfs, _ := reg.Gather(); len(mfs) != 0 {
		t.Errorf("metrics still registered after Close: %d families", len(mfs))
	}
}

func TestCloseDuringExchange(t *testing.T) {
	arrived := make(chan struct{})
	srv := startDNS(t, func(w dns.ResponseWriter, r *dns.Msg) { close(arrived) })
	cfg := testConfig(map[string][]string{".": {srv.url("tcp")}})
	cfg.AttemptTimeout = 2 * time.Second
	f, _ := newForwarder(t, cfg, nil)
	done := make(chan error, 1)
	go func() {
		_, err := f.Exchange(context.Background(), query("x.example.", dns.TypeA))
		done <- err
	}()
	<-arrived
	f.Close()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "all upstreams failed") {
		t.Errorf("Exchange during Close = %v, want a failure", err)
	}
}
