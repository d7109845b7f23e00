package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

func TestDoT(t *testing.T) {
	p := newPKI(t)
	srv := startDoT(t, p, answerA("192.0.2.53"))
	_, port, _ := strings.Cut(srv.addr, ":")
	cases := []struct {
		name    string
		addr    string
		caFile  string
		wantSNI string
		wantErr bool
	}{
		{"name with ip", "tls://dns.test:" + port + "?ip=127.0.0.1", p.caFile, "dns.test", false},
		{"ip certificate", "tls://127.0.0.1:" + port, p.caFile, "", false},
		{"wrong name", "tls://wrong.test:" + port + "?ip=127.0.0.1", p.caFile, "wrong.test", true},
		{"unknown CA", "tls://dns.test:" + port + "?ip=127.0.0.1", "", "dns.test", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(map[string][]string{".": {tc.addr}})
			cfg.CAFile = tc.caFile
			f, _ := newForwarder(t, cfg, nil)
			before := len(srv.sniSeen())
			r, err := f.Exchange(context.Background(), query("dot.example.", dns.TypeA))
			if tc.wantErr {
				if err == nil {
					t.Fatal("Exchange succeeded with a certificate that should not verify")
				}
				t.Logf("refused: %v", err)
			} else if err != nil || len(r.Answer) != 1 {
				t.Fatalf("Exchange: %v, %v", r, err)
			}
			sni := srv.sniSeen()
			if len(sni) == before || sni[len(sni)-1] != tc.wantSNI {
				t.Errorf("SNI seen %q, want %q", sni[before:], tc.wantSNI)
			}
		})
	}
}

func TestDoTReusesConnection(t *testing.T) {
	p := newPKI(t)
	srv := startDoT(t, p, answerA("192.0.2.53"))
	cfg := testConfig(map[string][]string{".": {"tls://" + srv.addr}})
	cfg.CAFile = p.caFile
	f, _ := newForwarder(t, cfg, nil)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := f.Exchange(context.Background(), query(fmt.Sprintf("r%d.example.", i), dns.TypeA)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if got := srv.conns.Load(); got != 1 {
		t.Errorf("%d TLS handshakes for 20 queries, want 1", got)
	}
	if got := srv.queries.Load(); got != 20 {
		t.Errorf("server answered %d queries, want 20", got)
	}
}

func TestDoH(t *testing.T) {
	p := newPKI(t)
	srv := startDoH(t, p, answerA("192.0.2.80"))
	for _, method := range []string{"POST", "GET"} {
		t.Run(method, func(t *testing.T) {
			cfg := testConfig(map[string][]string{".": {srv.URL + "/dns-query"}})
			cfg.CAFile = p.caFile
			cfg.DoHMethod = method
			f, _ := newForwarder(t, cfg, nil)
			gets, posts, h2 := srv.gets.Load(), srv.posts.Load(), srv.h2.Load()
			q := query("DoH.Example.", dns.TypeA)
			r, err := f.Exchange(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			if r.Id != q.Id || r.Question[0].Name != "DoH.Example." || len(r.Answer) != 1 {
				t.Errorf("answer %v", r)
			}
			if method == "GET" && srv.gets.Load() != gets+1 || method == "POST" && srv.posts.Load() != posts+1 {
				t.Errorf("server saw GET %d POST %d, want one %s", srv.gets.Load()-gets, srv.posts.Load()-posts, method)
			}
			if srv.h2.Load() != h2+1 {
				t.Error("DoH did not use HTTP/2")
			}
		})
	}
	t.Run("name with ip parameter", func(t *testing.T) {
		_, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "https://"), ":")
		cfg := testConfig(map[string][]string{".": {"https://dns.test:" + port + "/dns-query?ip=127.0.0.1"}})
		cfg.CAFile = p.caFile
		f, _ := newForwarder(t, cfg, nil)
		if _, err := f.Exchange(context.Background(), query("x.example.", dns.TypeA)); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("unknown CA", func(t *testing.T) {
		f, _ := newForwarder(t, testConfig(map[string][]string{".": {srv.URL}}), nil)
		if _, err := f.Exchange(context.Background(), query("x.example.", dns.TypeA)); err == nil {
			t.Fatal("Exchange succeeded with an untrusted certificate")
		}
	})
}

func TestDoHBadAnswers(t *testing.T) {
	p := newPKI(t)
	srv := startDoH(t, p, answerA("192.0.2.80"))
	wrongQuestion := func(w http.ResponseWriter, r *http.Request) {
		m := new(dns.Msg)
		m.SetQuestion("other.example.", dns.TypeA)
		m.Response = true
		b, _ := m.Pack()
		w.Header().Set("Content-Type", dnsMessage)
		w.Write(b)
	}
	cases := []struct {
		name     string
		override http.HandlerFunc
	}{
		{"status 500", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) }},
		{"content type", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte("<html>"))
		}},
		{"not DNS", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", dnsMessage)
			w.Write([]byte{1, 2, 3})
		}},
		{"wrong question", wrongQuestion},
		{"redirect is not followed", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://example.invalid/dns-query", http.StatusFound)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv.override.Store(&tc.override)
			defer srv.override.Store(nil)
			cfg := testConfig(map[string][]string{".": {srv.URL}})
			cfg.CAFile = p.caFile
			f, _ := newForwarder(t, cfg, nil)
			_, err := f.Exchange(context.Background(), query("x.example.", dns.TypeA))
			if !errors.Is(err, ErrAllFailed) || !errors.Is(err, errBadReply) {
				t.Errorf("Exchange = %v, want ErrAllFailed wrapping a bad reply", err)
			}
		})
	}
	t.Run("timeout", func(t *testing.T) {
		release := make(chan struct{})
		block := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release })
		srv.override.Store(&block)
		defer func() { close(release); srv.override.Store(nil) }()
		cfg := testConfig(map[string][]string{".": {srv.URL}})
		cfg.CAFile = p.caFile
		cfg.AttemptTimeout = 100 * time.Millisecond
		f, _ := newForwarder(t, cfg, nil)
		if _, err := f.Exchange(context.Background(), query("x.example.", dns.TypeA)); !errors.Is(err, ErrTimeout) {
			t.Errorf("Exchange = %v, want ErrTimeout", err)
		}
	})
}

func TestDoHCloseDuringExchange(t *testing.T) {
	p := newPKI(t)
	srv := startDoH(t, p, answerA("192.0.2.80"))
	arrived, release := make(chan struct{}), make(chan struct{})
	block := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	srv.override.Store(&block)
	defer func() { close(release); srv.override.Store(nil) }()
	cfg := testConfig(map[string][]string{".": {srv.URL}})
	cfg.CAFile = p.caFile
	cfg.AttemptTimeout = 2 * time.Second
	f, err := New(cfg, testLogger(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := f.Exchange(context.Background(), query("x.example.", dns.TypeA))
		done <- err
	}()
	<-arrived
	f.Close()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Exchange during Close = %v, want it cancelled", err)
	}
}
