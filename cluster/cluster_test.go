package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/kudurru/kudurru/fsm"
)

const testZone = "example.test."

// TestThreeNodeCluster: bootstrap one node and join two; a write is visible
// on all three; the leader is killed and a new one takes writes within 5 s;
// the old leader restarts from its data dir and catches up.
func TestThreeNodeCluster(t *testing.T) {
	tc := newTestCluster(t)
	n1 := tc.bootstrap("n1")
	tc.join("n2", n1)
	tc.join("n3", n1)
	tc.waitVoters(3)

	tc.mustPropose(createZone(t, testZone))
	res := tc.mustPropose(setA(t, testZone, "www", "192.0.2.1"))
	if res.Serial < 2 {
		t.Errorf("serial after the first change = %d, want > 1", res.Serial)
	}
	nodes := tc.runningNodes()
	for _, n := range nodes {
		waitIndex(t, n, res.Index)
		if got := aRecord(n.Current(), testZone, "www"); got != "192.0.2.1" {
			t.Errorf("%s: www = %q, want 192.0.2.1", n.NodeID(), got)
		}
		if z := n.Current().Zone(testZone); z == nil || z.Serial() != res.Serial {
			t.Errorf("%s: zone serial differs from the committed one %d", n.NodeID(), res.Serial)
		}
	}
	assertSameHash(t, nodes)

	t.Run("status", func(t *testing.T) {
		l := tc.leader(5 * time.Second)
		for _, n := range nodes {
			st := n.Status()
			if !st.Ready || st.ClusterID != l.ClusterID() || st.LeaderID != l.NodeID() || st.LeaderAPI != l.APIAddr() {
				t.Errorf("%s: status %+v", n.NodeID(), st)
			}
			if st.ServingIndex < res.Index || st.AppliedIndex < res.Index || st.CommitIndex < res.Index {
				t.Errorf("%s: indexes %d/%d/%d below %d", n.NodeID(), st.ServingIndex, st.AppliedIndex, st.CommitIndex, res.Index)
			}
			if len(st.Members) != 3 {
				t.Fatalf("%s: %d members, want 3", n.NodeID(), len(st.Members))
			}
			for _, m := range st.Members {
				if m.Suffrage != "voter" || m.APIAddr == "" || m.RaftAddr == "" || m.Leader != (m.ID == l.NodeID()) {
					t.Errorf("%s: member %+v", n.NodeID(), m)
				}
			}
			if n == l && (st.State != "leader" || st.LastContactS != 0) {
				t.Errorf("leader status: state %q, last contact %v", st.State, st.LastContactS)
			}
			if n != l && (st.State != "follower" || st.LastContactS < 0) {
				t.Errorf("follower status: state %q, last contact %v", st.State, st.LastContactS)
			}
		}
	})

	t.Run("follower refuses writes", func(t *testing.T) {
		l := tc.leader(5 * time.Second)
		for _, n := range tc.runningNodes() {
			if n == l {
				continue
			}
			_, err := n.Propose(context.Background(), setA(t, testZone, "www", "192.0.2.99"))
			if !errors.Is(err, ErrNotLeader) {
				t.Errorf("%s: propose on a follower: %v, want ErrNotLeader", n.NodeID(), err)
			}
			if id, api := n.Leader(); id != l.NodeID() || api != l.APIAddr() {
				t.Errorf("%s: Leader() = %s %s, want %s %s", n.NodeID(), id, api, l.NodeID(), l.APIAddr())
			}
		}
	})

	t.Run("join again is harmless", func(t *testing.T) {
		tn := tc.nodes[1]
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		tn.node().cfg.Join = []string{n1.url()}
		if err := tn.node().JoinCluster(ctx); err != nil {
			t.Fatal(err)
		}
		tc.waitVoters(3)
	})

	// Kill the leader without a leadership transfer.
	var old *testNode
	l := tc.leader(5 * time.Second)
	waitEstablished(t, l)
	for _, n := range tc.runningNodes() {
		if n != l && n.Status().LeaderEstablished {
			t.Errorf("follower %s reports itself an established leader", n.NodeID())
		}
	}
	for _, tn := range tc.nodes {
		if tn.node() == l {
			old = tn
		}
	}
	killed := time.Now()
	old.kill()
	res2 := tc.mustPropose(setA(t, testZone, "www", "192.0.2.2"))
	if d := time.Since(killed); d > 5*time.Second {
		t.Errorf("first write after the leader was killed committed after %s, want < 5 s", d)
	}
	t.Logf("new leader committed a write %s after the old one was killed", time.Since(killed))
	waitEstablished(t, tc.leader(5*time.Second))
	if res2.Serial <= res.Serial {
		t.Errorf("serial %d after %d", res2.Serial, res.Serial)
	}

	n := old.mustStart(nil)
	waitIndex(t, n, res2.Index)
	if got := aRecord(n.Current(), testZone, "www"); got != "192.0.2.2" {
		t.Errorf("restarted %s: www = %q, want 192.0.2.2", n.NodeID(), got)
	}
	res3 := tc.mustPropose(setA(t, testZone, "api", "192.0.2.3"))
	for _, n := range tc.runningNodes() {
		waitIndex(t, n, res3.Index)
	}
	assertSameHash(t, tc.runningNodes())
	tc.waitVoters(3)
}

// assertSameHash checks that nodes at the same Raft index hold the same
// content. It waits until they all reach the highest index among them.
func assertSameHash(t *testing.T, nodes []*Node) {
	t.Helper()
	var top uint64
	for _, n := range nodes {
		top = max(top, n.FSM().RaftView().Index)
	}
	for _, n := range nodes {
		waitFor(t, 10*time.Second, "raft index", n.FSM().Changed, func() bool { return n.FSM().RaftView().Index >= top })
	}
	want := nodes[0].FSM().RaftView()
	for _, n := range nodes[1:] {
		got := n.FSM().RaftView()
		if got.Index == want.Index && got.Hash() != want.Hash() {
			t.Errorf("%s and %s differ at index %d", nodes[0].NodeID(), n.NodeID(), got.Index)
		}
	}
}

// TestNoQuorum: with two of three nodes down a write fails with ErrNoQuorum
// or ErrUnknownOutcome within a bounded time, never succeeds; a definitely
// failed write is absent after recovery.
func TestNoQuorum(t *testing.T) {
	for _, survivor := range []string{"leader", "follower"} {
		t.Run(survivor+" survives", func(t *testing.T) {
			tc := newTestCluster(t)
			n1 := tc.bootstrap("n1")
			tc.join("n2", n1)
			tc.join("n3", n1)
			tc.waitVoters(3)
			tc.mustPropose(createZone(t, testZone))
			l := tc.leader(5 * time.Second)

			var keep *testNode
			for _, tn := range tc.nodes {
				if (tn.node() == l) == (survivor == "leader") && keep == nil {
					keep = tn
				}
			}
			var down []*testNode
			for _, tn := range tc.nodes {
				if tn != keep {
					down = append(down, tn)
					tn.kill()
				}
			}
			n := keep.node()
			start := time.Now()
			bound := n.cfg.LeaderWait + n.cfg.ApplyTimeout + 2*n.cfg.ElectionTimeout
			var err error
			for {
				_, err = n.Propose(context.Background(), setA(t, testZone, "lost", "192.0.2.66"))
				// A follower still trusts the dead leader until its
				// heartbeat timeout: that answer is a definite failure too.
				if !errors.Is(err, ErrNotLeader) || time.Since(start) > bound {
					break
				}
				select {
				case <-n.leaderChangedCh():
				case <-time.After(bound):
				}
			}
			elapsed := time.Since(start)
			switch {
			case err == nil:
				t.Fatalf("a write without quorum succeeded")
			case errors.Is(err, ErrNoQuorum), errors.Is(err, ErrUnknownOutcome):
				t.Logf("write without quorum failed after %s: %v", elapsed, err)
			default:
				t.Fatalf("write without quorum: %v, want ErrNoQuorum or ErrUnknownOutcome", err)
			}
			if elapsed > bound {
				t.Errorf("failure took %s, bound %s", elapsed, bound)
			}
			if st := n.Status(); !st.Ready || st.LeaderID != "" {
				t.Errorf("isolated node status: ready %v, leader %q", st.Ready, st.LeaderID)
			}

			for _, tn := range down {
				tn.mustStart(nil)
			}
			res := tc.mustPropose(setA(t, testZone, "after", "192.0.2.67"))
			for _, n := range tc.runningNodes() {
				waitIndex(t, n, res.Index)
				got := aRecord(n.Current(), testZone, "lost")
				if errors.Is(err, ErrNoQuorum) && got != "" {
					t.Errorf("%s: a write that failed definitely is present: %s", n.NodeID(), got)
				}
				t.Logf("%s: after recovery the failed write is %q", n.NodeID(), got)
			}
			assertSameHash(t, tc.runningNodes())
		})
	}
}

// TestRemoveMember removes a follower and checks both the configuration
// and the member entry are gone.
func TestRemoveMember(t *testing.T) {
	tc := newTestCluster(t)
	n1 := tc.bootstrap("n1")
	tc.join("n2", n1)
	tc.join("n3", n1)
	tc.waitVoters(3)
	l := tc.leader(5 * time.Second)
	var victim string
	for _, n := range tc.runningNodes() {
		if n != l {
			victim = n.NodeID()
			break
		}
	}
	ctx := context.Background()
	if err := l.RemoveMember(ctx, victim); err != nil {
		t.Fatal(err)
	}
	tc.waitVoters(2)
	if _, ok := l.Current().Member(victim); ok {
		t.Errorf("member %s still has an entry", victim)
	}
	if err := l.RemoveMember(ctx, victim); !errors.Is(err, ErrUnknownMember) {
		t.Errorf("second removal: %v, want ErrUnknownMember", err)
	}
	if err := l.RemoveMember(ctx, "nobody"); !errors.Is(err, ErrUnknownMember) {
		t.Errorf("removal of an unknown node: %v, want ErrUnknownMember", err)
	}
	for _, n := range tc.runningNodes() {
		if n != l && n.NodeID() != victim {
			if err := n.RemoveMember(ctx, victim); !errors.Is(err, ErrNotLeader) {
				t.Errorf("removal on a follower: %v, want ErrNotLeader", err)
			}
		}
	}
	// The two remaining voters still commit.
	tc.mustPropose(createZone(t, testZone))
}

// TestAddMemberValidation checks the leader's refusals.
func TestAddMemberValidation(t *testing.T) {
	tc := newTestCluster(t)
	n1 := tc.bootstrap("n1")
	l := n1.node()
	ctx := context.Background()
	good := JoinRequest{NodeID: "x1", RaftAddr: "127.0.0.1:1", APIAddr: "http://127.0.0.1:2"}
	cases := []struct {
		name string
		req  func(JoinRequest) JoinRequest
		want error
	}{
		{"empty node ID", func(r JoinRequest) JoinRequest { r.NodeID = ""; return r }, ErrInvalid},
		{"node ID with a slash", func(r JoinRequest) JoinRequest { r.NodeID = "a/b"; return r }, ErrInvalid},
		{"raft address without port", func(r JoinRequest) JoinRequest { r.RaftAddr = "127.0.0.1"; return r }, ErrInvalid},
		{"unspecified raft address", func(r JoinRequest) JoinRequest { r.RaftAddr = "0.0.0.0:7000"; return r }, ErrInvalid},
		{"API address not a URL", func(r JoinRequest) JoinRequest { r.APIAddr = "127.0.0.1:2"; return r }, ErrInvalid},
		{"other cluster", func(r JoinRequest) JoinRequest { r.ClusterID = "0123"; return r }, ErrOtherCluster},
		{"raft address of another member", func(r JoinRequest) JoinRequest { r.RaftAddr = l.RaftAddr(); return r }, ErrInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := len(l.configuration())
			_, err := l.AddMember(ctx, c.req(good))
			if !errors.Is(err, c.want) {
				t.Errorf("AddMember: %v, want %v", err, c.want)
			}
			if after := len(l.configuration()); after != before {
				t.Errorf("configuration changed from %d to %d servers", before, after)
			}
		})
	}
}

// TestJoinOtherCluster: a node whose data dir belongs to another cluster
// refuses to join, and the cluster does not admit it.
func TestJoinOtherCluster(t *testing.T) {
	a := newTestCluster(t)
	a1 := a.bootstrap("a1")
	a.mustPropose(createZone(t, testZone))

	b := newTestCluster(t)
	b1 := b.bootstrap("b1")
	bID := b1.node().ClusterID()
	b.mustPropose(createZone(t, "other.test."))
	b1.stop()

	n := b1.mustStart(func(c *Config) { c.Join = []string{a1.url()} })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := n.JoinCluster(ctx)
	if !errors.Is(err, ErrOtherCluster) {
		t.Fatalf("JoinCluster: %v, want ErrOtherCluster", err)
	}
	t.Logf("refused as expected: %v", err)
	if ctx.Err() != nil {
		t.Errorf("the refusal was retried until the deadline")
	}
	for _, s := range a1.node().configuration() {
		if s.ID == raft.ServerID("b1") {
			t.Errorf("cluster A admitted b1: %+v", s)
		}
	}
	if n.ClusterID() != bID || n.Current().Zone("other.test.") == nil {
		t.Errorf("b1 lost its own state")
	}
}

// TestCloseIdempotent: Close twice, and calls after Close fail cleanly.
func TestCloseIdempotent(t *testing.T) {
	tc := newTestCluster(t)
	tn := tc.bootstrap("n1")
	n := tn.node()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := n.Propose(context.Background(), createZone(t, testZone)); !errors.Is(err, ErrShutdown) {
		t.Errorf("Propose after Close: %v, want ErrShutdown", err)
	}
	if st := n.Status(); st.Ready || st.State != "shutdown" {
		t.Errorf("status after Close: %+v", st)
	}
	tn.cur.Store(nil)
}

// TestCommittedRejection: a command that changes nothing is committed with
// Result.Err, which is not a Propose error.
func TestCommittedRejection(t *testing.T) {
	tc := newTestCluster(t)
	tc.bootstrap("n1")
	l := tc.leader(5 * time.Second)
	res, err := l.Propose(context.Background(), setA(t, "missing.test.", "www", "192.0.2.1"))
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res.Err, fsm.ErrZoneNotFound) || res.Index == 0 {
		t.Errorf("result %+v, want a committed ErrZoneNotFound", res)
	}
	if _, err := l.Propose(context.Background(), nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("nil command: %v, want ErrInvalid", err)
	}
	// Many concurrent writes all commit, each exactly once.
	tc.mustPropose(createZone(t, testZone))
	errs := make(chan error, 50)
	for i := range 50 {
		go func() {
			res, err := l.Propose(context.Background(), setA(t, testZone, fmt.Sprintf("h%d", i), "192.0.2.1"))
			if err == nil && res.Err != nil {
				err = res.Err
			}
			errs <- err
		}()
	}
	for range 50 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if z := l.Current().Zone(testZone); z.Names() != 52 {
		t.Errorf("zone has %d names, want 52", z.Names())
	}
}

// waitEstablished waits until n reports itself an established leader: the
// barrier of its term has applied every earlier entry.
func waitEstablished(t *testing.T, n *Node) {
	t.Helper()
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	for {
		ch := n.LeaderChanged()
		if n.Status().LeaderEstablished {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("%s not an established leader within 5 s (state %s)", n.NodeID(), n.Status().State)
		}
	}
}
