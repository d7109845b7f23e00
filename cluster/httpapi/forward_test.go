package httpapi

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kudurru/kudurru/cluster/httpapi/apiv1"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

const zoneA = `{"name":"a.test","ns":["ns.a.test"],"records":["www IN A 192.0.2.1"]}`

// pair starts a leader and a follower that knows it.
func pair(t *testing.T, mod func(*Config)) (leader, follower *harness) {
	t.Helper()
	leader = start(t, newFake(t, "n1", true), mod)
	fb := newFake(t, "n2", false)
	fb.SetLeader("n1", leader.url)
	return leader, start(t, fb, mod)
}

func errCode(t *testing.T, body string) string {
	t.Helper()
	return decode[apiv1.ErrorBody](t, body).Error.Code
}

func TestForwardWriteToLeader(t *testing.T) {
	leader, follower := pair(t, func(c *Config) { c.Token = "tok" })
	auth := "Authorization: Bearer tok"

	code, hdr, body := follower.do("POST", "/v1/zones", zoneA, auth)
	if code != 201 || hdr.Get(apiv1.HeaderServedBy) != "n1" {
		t.Fatalf("forwarded create: %d %s (served by %q)", code, body, hdr.Get(apiv1.HeaderServedBy))
	}
	if n := len(leader.b.Proposed()); n != 1 {
		t.Fatalf("leader got %d proposals, want exactly 1", n)
	}
	if n := follower.b.ProposeCalls(); n != 0 {
		t.Fatalf("follower proposed %d times", n)
	}
	if v := testutil.ToFloat64(follower.s.m.forwards.WithLabelValues(fwdOK)); v != 1 {
		t.Fatalf("forwards ok = %v", v)
	}

	// The leader's answer is relayed as is, errors included.
	code, _, body = follower.do("POST", "/v1/zones", zoneA, auth)
	if code != 409 || errCode(t, body) != apiv1.CodeZoneExists {
		t.Fatalf("relayed conflict: %d %s", code, body)
	}

	// Bad input is refused by the follower and never reaches the leader.
	code, _, body = follower.do("PATCH", "/v1/zones/a.test/rrsets", `{"changes":[{"op":"add","name":"x","type":"A","records":["nope"]}]}`, auth)
	if code != 400 || len(leader.b.Proposed()) != 1 || testutil.ToFloat64(follower.s.m.forwards.WithLabelValues(fwdOK)) != 2 {
		t.Fatalf("bad input: %d %s; leader proposals %d", code, body, len(leader.b.Proposed()))
	}

	// Membership changes are forwarded too.
	code, _, body = follower.do("POST", "/v1/cluster/join", `{"node_id":"n3","raft_addr":"127.0.0.1:9","api_addr":"http://127.0.0.1:10"}`, auth)
	if code != 200 || !strings.Contains(body, `"leader_id":"n1"`) {
		t.Fatalf("forwarded join: %d %s", code, body)
	}
}

func TestForwardedReadConsistency(t *testing.T) {
	leader, follower := pair(t, nil)
	leader.do("POST", "/v1/zones", zoneA)

	if code, _, body := follower.do("GET", "/v1/zones/a.test", ""); code != 404 {
		t.Fatalf("local read on a follower that lacks the zone: %d %s", code, body)
	}
	code, hdr, body := follower.do("GET", "/v1/zones/a.test/rrsets?name=www&consistency=leader", "")
	if code != 200 || hdr.Get(apiv1.HeaderServedBy) != "n1" || !strings.Contains(body, "192.0.2.1") {
		t.Fatalf("leader read: %d %s (served by %q)", code, body, hdr.Get(apiv1.HeaderServedBy))
	}
	code, _, export := follower.do("GET", "/v1/zones/a.test/export?consistency=leader", "")
	if code != 200 || !strings.Contains(export, "$ORIGIN a.test.") {
		t.Fatalf("leader export: %d %s", code, export)
	}
}

func TestForwardHopLoopRefused(t *testing.T) {
	leader, follower := pair(t, nil)
	code, _, body := follower.do("POST", "/v1/zones", zoneA, apiv1.HeaderForwardedBy+": n9")
	if code != 503 || errCode(t, body) != apiv1.CodeNotLeader || !strings.Contains(body, "n9") {
		t.Fatalf("forwarded request at a follower: %d %s", code, body)
	}
	if len(leader.b.Proposed()) != 0 {
		t.Fatal("a twice-forwarded request reached the leader")
	}

	// A follower whose "leader" is another follower: the second refuses, the
	// first retries within LeaderWait and then reports leadership moving.
	other := start(t, newFake(t, "n3", false), nil)
	other.b.SetLeader("n1", leader.url)
	follower.b.SetLeader("n3", other.url)
	code, _, body = follower.do("DELETE", "/v1/zones/a.test", "")
	if code != 503 || errCode(t, body) != apiv1.CodeNotLeader {
		t.Fatalf("forward to a non-leader: %d %s", code, body)
	}
	if leader.b.ProposeCalls() != 0 || other.b.ProposeCalls() != 0 {
		t.Fatal("a refused forward was proposed")
	}
}

func TestForwardFailures(t *testing.T) {
	t.Run("no leader", func(t *testing.T) {
		f := start(t, newFake(t, "n2", false), nil)
		begin := time.Now()
		code, _, body := f.do("POST", "/v1/zones", zoneA)
		if code != 503 || errCode(t, body) != apiv1.CodeNoQuorum {
			t.Fatalf("%d %s", code, body)
		}
		if d := time.Since(begin); d > f.s.cfg.LeaderWait+time.Second {
			t.Fatalf("no-quorum answer took %s", d)
		}
	})
	t.Run("leader unreachable", func(t *testing.T) {
		f := start(t, newFake(t, "n2", false), nil)
		f.b.SetLeader("n1", "http://"+closedAddr(t))
		code, _, body := f.do("POST", "/v1/zones", zoneA)
		if code != 503 || errCode(t, body) != apiv1.CodeLeaderUnreachable || !strings.Contains(body, "nothing was sent") {
			t.Fatalf("%d %s", code, body)
		}
	})
	t.Run("no reply after sending", func(t *testing.T) {
		f := start(t, newFake(t, "n2", false), nil)
		f.b.SetLeader("n1", "http://"+mute(t))
		code, _, body := f.do("POST", "/v1/zones", zoneA)
		if code != 504 || errCode(t, body) != apiv1.CodeOutcomeUnknown || !strings.Contains(body, "may or may not") {
			t.Fatalf("%d %s", code, body)
		}
		if v := testutil.ToFloat64(f.s.m.forwards.WithLabelValues(fwdUnknown)); v != 1 {
			t.Fatalf("forwards unknown = %v (an unknown outcome must not be retried)", v)
		}
	})
	t.Run("leader appears while waiting", func(t *testing.T) {
		leader := start(t, newFake(t, "n1", true), nil)
		f := start(t, newFake(t, "n2", false), func(c *Config) { c.LeaderWait = 5 * time.Second })
		elect := time.AfterFunc(50*time.Millisecond, func() { f.b.SetLeader("n1", leader.url) })
		defer elect.Stop()
		if code, _, body := f.do("POST", "/v1/zones", zoneA); code != 201 {
			t.Fatalf("%d %s", code, body)
		}
	})
}

// waitingBackend is a fake that implements IndexWaiter.
type waitingBackend struct {
	*fakeBackend
	waited chan uint64
}

func (w waitingBackend) WaitIndex(ctx context.Context, idx uint64) error {
	w.waited <- idx
	return nil
}

func TestForwardWaitsForLocalIndex(t *testing.T) {
	leader := start(t, newFake(t, "n1", true), nil)
	fb := waitingBackend{newFake(t, "n2", false), make(chan uint64, 1)}
	fb.SetLeader("n1", leader.url)
	s, err := New(testConfig(), fb)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := &harness{t: t, s: s, url: s.URL(), tr: &http.Transport{}}
	defer h.tr.CloseIdleConnections()
	code, _, body := h.do("POST", "/v1/zones", zoneA)
	if code != 201 {
		t.Fatalf("%d %s", code, body)
	}
	if got, want := <-fb.waited, decode[apiv1.WriteResult](t, body).Index; got != want {
		t.Fatalf("waited for index %d, want %d", got, want)
	}
}

// closedAddr returns a loopback address where nothing listens.
func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// mute starts a server that reads each request in full and closes the
// connection without answering: a leader lost after receiving a write.
func mute(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if req, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
				_, _ = io.Copy(io.Discard, req.Body)
			}
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

// TestForwardGivesUpWhenLeaderChanges: a write forwarded to a leader that
// stops answering (cut off, frozen) ends with 504 outcome_unknown as soon as
// the follower sees another leader, not after the forward timeout.
func TestForwardGivesUpWhenLeaderChanges(t *testing.T) {
	// The "leader" accepts the connection and reads the request, then never
	// answers, like a frozen process.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan struct{})
	var held sync.WaitGroup
	held.Add(1)
	go func() {
		defer held.Done()
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = http.ReadRequest(bufio.NewReader(c))
		close(got)
		_, _ = io.Copy(io.Discard, c) // until the follower hangs up
	}()
	defer func() { ln.Close(); held.Wait() }()

	fb := newFake(t, "n2", false)
	fb.SetLeader("n1", "http://"+ln.Addr().String())
	follower := start(t, fb, func(c *Config) { c.ForwardTimeout = time.Minute; c.ProposeTimeout = 30 * time.Second })
	go func() {
		<-got
		fb.SetLeader("n3", "http://127.0.0.1:1") // the follower hears of a new leader
	}()
	began := time.Now()
	code, _, body := follower.do("POST", "/v1/zones", zoneA)
	if code != 504 || errCode(t, body) != apiv1.CodeOutcomeUnknown || !strings.Contains(body, "Leadership moved") {
		t.Fatalf("forward to a frozen leader: %d %s", code, body)
	}
	if d := time.Since(began); d > 10*time.Second {
		t.Fatalf("gave up after %s, want well under the one-minute forward timeout", d)
	}
}
