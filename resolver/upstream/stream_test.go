package upstream

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

func TestTCPPipelining(t *testing.T) {
	var (
		mu    sync.Mutex
		conns = map[string]bool{}
	)
	srv := startDNS(t, func(w dns.ResponseWriter, r *dns.Msg) {
		mu.Lock()
		conns[w.RemoteAddr().String()] = true
		mu.Unlock()
		answerA("192.0.2.9")(w, r)
	})
	f, _ := newForwarder(t, testConfig(map[string][]string{".": {srv.url("tcp")}}), nil)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("pipe%d.example.", i)
			r, err := f.Exchange(context.Background(), query(name, dns.TypeA))
			if err != nil {
				t.Errorf("Exchange %s: %v", name, err)
				return
			}
			if r.Question[0].Name != name {
				t.Errorf("answer for %s delivered to %s", r.Question[0].Name, name)
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(conns) != 1 {
		t.Errorf("%d TCP connections for 50 queries, want 1 reused", len(conns))
	}
}

func TestTCPServerClosesConnection(t *testing.T) {
	// The server closes each connection after 2 queries: later queries
	// must move to a new connection without failing.
	srv := &dnsServer{t: t, h: answerA("192.0.2.9"), tcpMaxQueries: 2}
	srv.startOn("127.0.0.1:0")
	t.Cleanup(srv.stop)
	f, _ := newForwarder(t, testConfig(map[string][]string{".": {srv.url("tcp")}}), nil)
	for i := range 7 {
		if _, err := f.Exchange(context.Background(), query(fmt.Sprintf("c%d.example.", i), dns.TypeA)); err != nil {
			t.Fatalf("query %d: %v", i, err)
		}
	}
	if got := srv.tcpQueries.Load(); got != 7 {
		t.Errorf("server answered %d queries, want 7", got)
	}
}

func TestTCPIdleClose(t *testing.T) {
	srv := startDNS(t, answerA("192.0.2.9"))
	cfg := testConfig(map[string][]string{".": {srv.url("tcp")}})
	cfg.IdleTimeout = 50 * time.Millisecond
	f, _ := newForwarder(t, cfg, nil)
	if _, err := f.Exchange(context.Background(), query("idle.example.", dns.TypeA)); err != nil {
		t.Fatal(err)
	}
	st := f.groups["."].ups[0].primary.(*streamTransport)
	st.mu.Lock()
	pc := st.cur
	st.mu.Unlock()
	select {
	case <-pc.done: // closed by the idle timer
	case <-time.After(5 * time.Second):
		t.Fatal("idle connection not closed")
	}
	if _, err := f.Exchange(context.Background(), query("again.example.", dns.TypeA)); err != nil {
		t.Fatalf("query after idle close: %v", err)
	}
}

func TestTCPDialFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens: connection refused
	f, _ := newForwarder(t, testConfig(map[string][]string{".": {"tcp://" + addr}}), nil)
	if _, err := f.Exchange(context.Background(), query("x.example.", dns.TypeA)); err == nil {
		t.Fatal("Exchange to a closed port succeeded")
	}
}
