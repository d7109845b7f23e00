package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/kudurru/kudurru/cluster/httpapi/apiv1"
	"github.com/kudurru/kudurru/fsm"
	"github.com/kudurru/kudurru/fsm/zone"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	code := m.Run()
	closeBenchCluster()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// tWriter sends each log line to t.Log.
type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func testLogger(t testing.TB) *slog.Logger {
	level := slog.LevelInfo
	if os.Getenv("KUDURRU_TEST_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: level}))
}

// testConfig returns timings short enough for tests yet long enough not to
// flap on two shared cores under -race.
func testConfig(id, dir string) Config {
	c := DefaultConfig()
	c.NodeID = id
	c.DataDir = dir
	c.RaftAddr = "127.0.0.1:0"
	c.HeartbeatTimeout = 400 * time.Millisecond
	c.ElectionTimeout = 400 * time.Millisecond
	c.LeaderLeaseTimeout = 200 * time.Millisecond
	c.CommitTimeout = 5 * time.Millisecond
	c.SnapshotInterval = time.Hour
	c.SnapshotThreshold = 1 << 20 // tests take snapshots themselves
	c.ApplyTimeout = 3 * time.Second
	c.LeaderWait = 2 * time.Second
	c.LocalDBDebounce = 10 * time.Millisecond
	c.PromoteInterval = 100 * time.Millisecond
	return c
}

// testCluster runs nodes in this process, each with a small HTTP server on
// 127.0.0.1 that exposes the two endpoints other nodes call:
// POST /v1/cluster/join (handed to the leader's AddMember directly, in place
// of the real API's forwarding) and GET /v1/cluster (Status).
type testCluster struct {
	t      testing.TB
	token  string
	logger *slog.Logger

	mu    sync.Mutex
	nodes []*testNode
}

type testNode struct {
	tc       *testCluster
	id       string
	dir      string
	srv      *httptest.Server
	raftAddr string // fixed at the first start, reused by restarts
	reg      *prometheus.Registry
	cur      atomic.Pointer[Node]
	cfgMod   func(*Config)
}

func newTestCluster(t testing.TB) *testCluster {
	return &testCluster{t: t, token: "s3cret", logger: testLogger(t)}
}

// addNode creates a node's data dir and API server without starting it.
func (tc *testCluster) addNode(id string) *testNode {
	tn := &testNode{tc: tc, id: id, dir: filepath.Join(tc.t.TempDir(), id)}
	tn.srv = httptest.NewServer(tn.handler())
	tc.t.Cleanup(tn.srv.Close)
	tc.t.Cleanup(func() { tn.stop() })
	tc.mu.Lock()
	tc.nodes = append(tc.nodes, tn)
	tc.mu.Unlock()
	return tn
}

func (tn *testNode) url() string { return tn.srv.URL }

// node returns the running Node, or nil.
func (tn *testNode) node() *Node { return tn.cur.Load() }

func (tn *testNode) config() Config {
	c := testConfig(tn.id, tn.dir)
	c.APIAddr = tn.srv.URL
	c.Token = tn.tc.token
	c.Logger = tn.tc.logger.With("test_node", tn.id)
	if tn.raftAddr != "" {
		c.RaftAddr = tn.raftAddr
	}
	tn.reg = prometheus.NewRegistry()
	c.Registry = tn.reg
	if tn.cfgMod != nil {
		tn.cfgMod(&c)
	}
	return c
}

// start starts the node with its config, changed by mod.
func (tn *testNode) start(mod func(*Config)) (*Node, error) {
	c := tn.config()
	if mod != nil {
		mod(&c)
	}
	n, err := New(c)
	if err != nil {
		return nil, err
	}
	tn.raftAddr = n.RaftAddr()
	tn.cur.Store(n)
	return n, nil
}

func (tn *testNode) mustStart(mod func(*Config)) *Node {
	tn.tc.t.Helper()
	n, err := tn.start(mod)
	if err != nil {
		tn.tc.t.Fatalf("start %s: %v", tn.id, err)
	}
	return n
}

// stop closes the node gracefully; kill closes it without leadership
// transfer, as close to a crash as an in-process node gets.
func (tn *testNode) stop() {
	if n := tn.cur.Swap(nil); n != nil {
		if err := n.Close(); err != nil {
			tn.tc.t.Errorf("close %s: %v", tn.id, err)
		}
	}
}

func (tn *testNode) kill() {
	if n := tn.cur.Swap(nil); n != nil {
		if err := n.shutdown(false); err != nil {
			tn.tc.t.Errorf("kill %s: %v", tn.id, err)
		}
	}
}

// running returns the running node with the given ID, or nil.
func (tc *testCluster) running(id string) *Node {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	for _, tn := range tc.nodes {
		if n := tn.node(); n != nil && tn.id == id {
			return n
		}
	}
	return nil
}

func (tc *testCluster) runningNodes() []*Node {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	var out []*Node
	for _, tn := range tc.nodes {
		if n := tn.node(); n != nil {
			out = append(out, n)
		}
	}
	return out
}

func (tn *testNode) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+pathJoin, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+tn.tc.token {
			writeAPIError(w, http.StatusUnauthorized, apiv1.CodeUnauthorized, "missing or wrong bearer token")
			return
		}
		var req JoinRequest
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil {
			writeAPIError(w, http.StatusBadRequest, apiv1.CodeInvalid, err.Error())
			return
		}
		n := tn.node()
		if n == nil {
			writeAPIError(w, http.StatusServiceUnavailable, apiv1.CodeShuttingDown, "node is down")
			return
		}
		target := n
		if id, _ := n.Leader(); id != "" && id != n.NodeID() {
			if target = tn.tc.running(id); target == nil {
				writeAPIError(w, http.StatusServiceUnavailable, apiv1.CodeLeaderUnreachable, "leader "+id+" is not running")
				return
			}
		}
		resp, err := target.AddMember(r.Context(), req)
		switch {
		case err == nil:
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(resp)
		case errors.Is(err, ErrOtherCluster):
			writeAPIError(w, http.StatusConflict, apiv1.CodeOtherCluster, err.Error())
		case errors.Is(err, ErrInvalid):
			writeAPIError(w, http.StatusBadRequest, apiv1.CodeInvalid, err.Error())
		default:
			writeAPIError(w, http.StatusServiceUnavailable, apiv1.CodeNoQuorum, err.Error())
		}
	})
	mux.HandleFunc("GET "+pathStatus, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+tn.tc.token {
			writeAPIError(w, http.StatusUnauthorized, apiv1.CodeUnauthorized, "missing or wrong bearer token")
			return
		}
		n := tn.node()
		if n == nil {
			writeAPIError(w, http.StatusServiceUnavailable, apiv1.CodeShuttingDown, "node is down")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(n.Status())
	})
	return mux
}

func writeAPIError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(apiv1.ErrorBody{Error: apiv1.Error{Code: code, Message: msg}})
}

// bootstrap starts a node that creates the cluster and waits until it
// leads with a cluster ID and its own member entry.
func (tc *testCluster) bootstrap(id string) *testNode {
	tc.t.Helper()
	tn := tc.addNode(id)
	n := tn.mustStart(func(c *Config) { c.Bootstrap = true })
	waitFor(tc.t, 10*time.Second, "bootstrap leader with cluster ID", n.FSM().Changed, func() bool {
		_, ok := n.FSM().RaftView().Member(id)
		return n.IsLeader() && n.ClusterID() != "" && ok
	})
	return tn
}

// join starts a node with Join naming via and runs JoinCluster.
func (tc *testCluster) join(id string, via ...*testNode) *testNode {
	tc.t.Helper()
	tn := tc.addNode(id)
	n := tn.mustStart(func(c *Config) {
		for _, v := range via {
			c.Join = append(c.Join, v.url())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.JoinCluster(ctx); err != nil {
		tc.t.Fatalf("join %s: %v", id, err)
	}
	return tn
}

// waitFor waits until cond holds, re-checking whenever the channel from
// changed is closed; changed may be nil when no event exists, and then it
// polls every 10 ms. It fails the test after timeout.
func waitFor(t testing.TB, timeout time.Duration, what string, changed func() <-chan struct{}, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		var ch <-chan struct{}
		if changed != nil {
			ch = changed()
		} else {
			c := make(chan struct{})
			time.AfterFunc(10*time.Millisecond, func() { close(c) })
			ch = c
		}
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
	}
}

// leader waits until a running node leads and returns it, waking on any
// running node's leadership changes.
func (tc *testCluster) leader(timeout time.Duration) *Node {
	tc.t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		nodes := tc.runningNodes()
		cases := []reflect.SelectCase{{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(deadline.C)}}
		for _, n := range nodes {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(n.leaderChangedCh())})
		}
		for _, n := range nodes {
			if n.IsLeader() {
				return n
			}
		}
		// A node stopped or started meanwhile has no event here: re-list
		// the nodes at least every 100 ms.
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(time.After(100 * time.Millisecond))})
		if i, _, _ := reflect.Select(cases); i == 0 {
			tc.t.Fatalf("no leader within %s", timeout)
		}
	}
}

// waitVoters waits until the leader's configuration has want voters and
// no non-voters.
func (tc *testCluster) waitVoters(want int) {
	tc.t.Helper()
	l := tc.leader(10 * time.Second)
	waitFor(tc.t, 20*time.Second, fmt.Sprintf("%d voters", want), l.FSM().Changed, func() bool {
		voters, others := 0, 0
		for _, s := range l.configuration() {
			if s.Suffrage == raft.Voter {
				voters++
			} else {
				others++
			}
		}
		return voters == want && others == 0
	})
}

// mustPropose proposes on the current leader until the command commits. It
// retries definite failures (no leader yet, leadership moved) and unknown
// outcomes (elections while nodes come back); the test commands are
// idempotent, except a zone creation, whose retry may find its own zone.
func (tc *testCluster) mustPropose(cmd *fsm.Command) *fsm.Result {
	tc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	retried := false
	for {
		res, err := tc.leader(10*time.Second).Propose(ctx, cmd)
		if (errors.Is(err, ErrNotLeader) || errors.Is(err, ErrNoQuorum) || errors.Is(err, ErrUnknownOutcome)) && ctx.Err() == nil {
			tc.t.Logf("propose %s: %v; retrying", cmd.Op, err)
			retried = true
			continue
		}
		if err != nil {
			tc.t.Fatalf("propose %s: %v", cmd.Op, err)
		}
		if res.Err != nil && !(retried && errors.Is(res.Err, fsm.ErrZoneExists)) {
			tc.t.Fatalf("propose %s: committed with error: %v", cmd.Op, res.Err)
		}
		return res
	}
}

func waitIndex(t testing.TB, n *Node, idx uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := n.FSM().WaitIndex(ctx, idx); err != nil {
		t.Fatalf("%s: %v", n.NodeID(), err)
	}
}

func mustRR(t testing.TB, s string) dns.RR {
	t.Helper()
	rr, err := dns.NewRR(s)
	if err != nil {
		t.Fatalf("parse %q: %v", s, err)
	}
	return rr
}

func createZone(t testing.TB, origin string) *fsm.Command {
	return &fsm.Command{Op: fsm.OpCreateZone, Zone: origin, Records: []dns.RR{
		mustRR(t, origin+" 3600 IN SOA ns1."+origin+" hostmaster."+origin+" 1 7200 3600 1209600 300"),
		mustRR(t, origin+" 3600 IN NS ns1."+origin),
		mustRR(t, "ns1."+origin+" 3600 IN A 192.0.2.53"),
	}}
}

func setA(t testing.TB, origin, name, ip string) *fsm.Command {
	return &fsm.Command{Op: fsm.OpChange, Zone: origin, Changes: []zone.Change{{
		Op: zone.OpReplace, Name: name + "." + origin, Type: dns.TypeA, TTL: 300,
		RRs: []dns.RR{mustRR(t, name+"."+origin+" 300 IN A "+ip)},
	}}}
}

// aRecord returns the address of name's A record in v, or "".
func aRecord(v *zone.View, origin, name string) string {
	z := v.Zone(origin)
	if z == nil {
		return ""
	}
	s := z.Get(name + "." + origin).RRset(dns.TypeA)
	if s == nil || len(s.RRs) == 0 {
		return ""
	}
	return s.RRs[0].(*dns.A).A.String()
}

func deleteZone(origin string) *fsm.Command {
	return &fsm.Command{Op: fsm.OpDeleteZone, Zone: origin}
}
