package upstream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestCoalescing(t *testing.T) {
	release := make(chan struct{})
	srv := startDNS(t, func(w dns.ResponseWriter, r *dns.Msg) {
		<-release
		answerA("192.0.2.7")(w, r)
	})
	cfg := testConfig(map[string][]string{".": {srv.url("udp")}})
	cfg.AttemptTimeout = 5 * time.Second
	cfg.QueryTimeout = 5 * time.Second
	f, _ := newForwarder(t, cfg, nil)
	const n = 100
	var joined sync.WaitGroup
	joined.Add(n - 1)
	f.fl.joined = joined.Done

	type result struct {
		r   *dns.Msg
		err error
		id  uint16
		q   string
	}
	results := make(chan result, n)
	for i := range n {
		go func() {
			name := "coalesce.example."
			if i%2 == 1 {
				name = "CoAlEsCe.ExAmPlE."
			}
			q := query(name, dns.TypeA)
			q.Id = uint16(i)
			r, err := f.Exchange(context.Background(), q)
			results <- result{r, err, uint16(i), name}
		}()
	}
	joined.Wait() // 99 callers wait on the first one's upstream query
	close(release)
	for range n {
		res := <-results
		if res.err != nil {
			t.Fatalf("Exchange: %v", res.err)
		}
		if res.r.Id != res.id || res.r.Question[0].Name != res.q || len(res.r.Answer) != 1 {
			t.Errorf("answer id=%d name=%q, want id=%d name=%q", res.r.Id, res.r.Question[0].Name, res.id, res.q)
		}
	}
	if got := srv.udpQueries.Load(); got != 1 {
		t.Errorf("upstream saw %d queries for %d identical concurrent misses, want 1", got, n)
	}
	if got := testutil.ToFloat64(f.m.coalesced); got != n-1 {
		t.Errorf("coalesced_total = %v, want %d", got, n-1)
	}

	t.Run("DO and CD are part of the key", func(t *testing.T) {
		srv.udpQueries.Store(0)
		f.fl.joined = nil
		var wg sync.WaitGroup
		for _, v := range []struct{ do, cd bool }{{false, false}, {true, false}, {false, true}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				q := query("split.example.", dns.TypeA)
				q.CheckingDisabled = v.cd
				if v.do {
					q.SetEdns0(1232, true)
				}
				if _, err := f.Exchange(context.Background(), q); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if got := srv.udpQueries.Load(); got != 3 {
			t.Errorf("upstream saw %d queries, want 3 (one per DO/CD variant)", got)
		}
	})
}

func TestCoalescedLeaderCancelled(t *testing.T) {
	var calls sync.WaitGroup
	calls.Add(1)
	first := make(chan struct{})
	var once sync.Once
	srv := startDNS(t, func(w dns.ResponseWriter, r *dns.Msg) {
		gotFirst := false
		once.Do(func() { gotFirst = true; close(first) })
		if gotFirst {
			return // the leader's query is never answered
		}
		answerA("192.0.2.8")(w, r)
	})
	cfg := testConfig(map[string][]string{".": {srv.url("udp")}})
	cfg.AttemptTimeout = 2 * time.Second
	f, _ := newForwarder(t, cfg, nil)
	joined := make(chan struct{})
	f.fl.joined = func() { close(joined) }

	leaderCtx, cancelLeader := context.WithCancel(context.Background())
	leaderErr := make(chan error, 1)
	go func() {
		_, err := f.Exchange(leaderCtx, query("lead.example.", dns.TypeA))
		leaderErr <- err
	}()
	<-first
	follower := make(chan error, 1)
	go func() {
		r, err := f.Exchange(context.Background(), query("lead.example.", dns.TypeA))
		if err == nil && len(r.Answer) != 1 {
			err = fmt.Errorf("answer %v", r)
		}
		follower <- err
	}()
	<-joined
	f.fl.joined = nil
	cancelLeader()
	if err := <-leaderErr; !errors.Is(err, context.Canceled) {
		t.Errorf("leader: %v, want context.Canceled", err)
	}
	if err := <-follower; err != nil {
		t.Errorf("follower inherited the leader's cancellation: %v", err)
	}
}
