package cluster

import (
	"context"
	"fmt"
	"github.com/kudurru/kudurru/fsm"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kudurru/kudurru/fsm/zone"
	"go.etcd.io/bbolt"
)

// serialMonitor watches a node's publications and records any served
// index or zone serial that goes back.
type serialMonitor struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	errs []string
	seen int
}

func watchServed(n *Node, forbiddenCluster string) *serialMonitor {
	m := &serialMonitor{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		last := map[string]uint32{}
		var lastIdx uint64
		for {
			ch := n.FSM().Changed()
			v := n.Current()
			m.mu.Lock()
			m.seen++
			if v.Index < lastIdx {
				m.errs = append(m.errs, fmt.Sprintf("served index went back from %d to %d", lastIdx, v.Index))
			}
			if forbiddenCluster != "" && v.ClusterID == forbiddenCluster {
				m.errs = append(m.errs, fmt.Sprintf("served a View of cluster %s", forbiddenCluster))
			}
			lastIdx = max(lastIdx, v.Index)
			for _, z := range v.Zones() {
				if s, ok := last[z.Origin]; ok && zone.SerialGreater(s, z.Serial()) {
					m.errs = append(m.errs, fmt.Sprintf("zone %s serial went back from %d to %d at index %d", z.Origin, s, z.Serial(), v.Index))
				}
				last[z.Origin] = z.Serial()
			}
			m.mu.Unlock()
			select {
			case <-ch:
			case <-m.stop:
				return
			}
		}
	}()
	return m
}

func (m *serialMonitor) finish(t *testing.T) {
	t.Helper()
	close(m.stop)
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.errs {
		t.Error(e)
	}
	t.Logf("watched %d publications", m.seen)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// singleNodeCluster creates a one-node cluster holding one zone, stops it,
// and returns its node (stopped) and cluster ID.
func singleNodeCluster(t *testing.T, id, origin string) (*testNode, string) {
	tc := newTestCluster(t)
	tn := tc.bootstrap(id)
	tc.mustPropose(createZone(t, origin))
	tc.mustPropose(setA(t, origin, "www", "198.51.100.1"))
	cid := tn.node().ClusterID()
	tn.stop()
	return tn, cid
}

// TestColdStart: stop all three nodes and restart one alone: it serves
// every acknowledged write from local.db at once, although Raft alone has
// only its last snapshot and no quorum to re-commit the rest. A local.db of
// another cluster is refused. Serials never go back.
func TestColdStart(t *testing.T) {
	tc := newTestCluster(t)
	n1 := tc.bootstrap("n1")
	n2 := tc.join("n2", n1)
	n3 := tc.join("n3", n1)
	tc.waitVoters(3)
	aID := n1.node().ClusterID()

	acked := map[string]string{}
	tc.mustPropose(createZone(t, testZone))
	tc.mustPropose(createZone(t, "gone.test."))
	for i := range 5 {
		name, ip := fmt.Sprintf("a%d", i), fmt.Sprintf("192.0.2.%d", i+1)
		tc.mustPropose(setA(t, testZone, name, ip))
		acked[name] = ip
	}
	snapIndex := tc.leader(5 * time.Second).FSM().RaftView().Index
	for _, n := range tc.runningNodes() {
		waitIndex(t, n, snapIndex)
		if err := n.Snapshot(); err != nil {
			t.Fatalf("%s: %v", n.NodeID(), err)
		}
	}
	// Acknowledged after the snapshots: only the log and local.db have them.
	for i := range 10 {
		name, ip := fmt.Sprintf("b%d", i), fmt.Sprintf("192.0.2.%d", i+100)
		tc.mustPropose(setA(t, testZone, name, ip))
		acked[name] = ip
	}
	last := tc.mustPropose(deleteZone("gone.test."))
	for _, n := range tc.runningNodes() {
		waitIndex(t, n, last.Index)
	}

	before := map[string]*zone.View{}
	for _, tn := range []*testNode{n1, n2, n3} {
		n := tn.node()
		tn.stop()
		before[tn.id] = n.Current()
	}

	// Another cluster's local.db in n3's data dir is refused.
	x1, xID := singleNodeCluster(t, "x1", "foreign.test.")
	copyFile(t, filepath.Join(x1.dir, "local.db"), filepath.Join(n3.dir, "local.db"))
	n := n3.mustStart(nil)
	if v := n.Current(); v.ClusterID == xID || v.Zone("foreign.test.") != nil {
		t.Errorf("n3 serves the other cluster's local.db")
	}
	if n.ClusterID() != aID {
		t.Errorf("n3 cluster ID = %q, want %q", n.ClusterID(), aID)
	}
	// It serves its own state instead: the snapshot plus its own log
	// replayed up to the index it served before it stopped.
	if v := n.Current(); v.Index != before["n3"].Index || v.ClusterID != aID || v.Hash() != before["n3"].Hash() {
		t.Errorf("n3 serves index %d of cluster %q, want its own %d (snapshot at %d)", v.Index, v.ClusterID, before["n3"].Index, snapIndex)
	}
	n3.stop()

	// n1 alone: no quorum, yet every acknowledged write is served.
	start := time.Now()
	n = n1.mustStart(nil)
	mon := watchServed(n, xID)
	v := n.Current()
	t.Logf("n1 restarted alone in %s: serving index %d, raft index %d", time.Since(start), v.Index, n.FSM().RaftView().Index)
	if v.Index != before["n1"].Index || v.ClusterID != aID {
		t.Fatalf("n1 serves index %d of %q, want %d of %q", v.Index, v.ClusterID, before["n1"].Index, aID)
	}
	if rv := n.FSM().RaftView(); rv.Index >= v.Index {
		t.Errorf("raft alone is at %d, not behind local.db's %d: the test shows nothing", rv.Index, v.Index)
	}
	for name, ip := range acked {
		if got := aRecord(v, testZone, name); got != ip {
			t.Errorf("n1 after cold start: %s = %q, want %q", name, got, ip)
		}
	}
	if v.Zone("gone.test.") != nil {
		t.Errorf("n1 after cold start serves a deleted zone")
	}
	if got, want := v.Zone(testZone).Serial(), before["n1"].Zone(testZone).Serial(); got != want {
		t.Errorf("serial after cold start %d, want %d", got, want)
	}
	if m, ok := v.Member("n2"); !ok || m.APIAddr != n2.url() {
		t.Errorf("members not restored: %+v %v", m, ok)
	}
	if st := n.Status(); !st.Ready || st.LeaderID != "" || st.ServingIndex != v.Index {
		t.Errorf("n1 status: %+v", st)
	}

	// The others come back: Raft's View takes over without going back.
	n2.mustStart(nil)
	n3.mustStart(nil)
	res := tc.mustPropose(setA(t, testZone, "c0", "192.0.2.200"))
	acked["c0"] = "192.0.2.200"
	for _, n := range tc.runningNodes() {
		waitIndex(t, n, res.Index)
		for name, ip := range acked {
			if got := aRecord(n.Current(), testZone, name); got != ip {
				t.Errorf("%s after recovery: %s = %q, want %q", n.NodeID(), name, got, ip)
			}
		}
	}
	mon.finish(t)
	assertSameHash(t, tc.runningNodes())

	// n3's local.db now holds this cluster's state.
	n = n3.node()
	n3.stop()
	if cid, idx := n.local.holds(); cid != aID || idx < res.Index {
		t.Errorf("n3 local.db holds %q at %d, want %q at >= %d", cid, idx, aID, res.Index)
	}
}

// TestJoinWithLocalDB: a node without Raft state holds its local.db back
// until the join says which cluster it is in; a copy of the same cluster is
// served then, one of another cluster never.
func TestJoinWithLocalDB(t *testing.T) {
	a1, aID := singleNodeCluster(t, "a1", testZone)
	x1, xID := singleNodeCluster(t, "x1", "foreign.test.")
	a1.mustStart(nil)
	tc := a1.tc
	waitFor(t, 10*time.Second, "a1 leads again", a1.node().FSM().Changed, func() bool {
		return a1.node().IsLeader() && a1.node().Current().Zone(testZone) != nil
	})
	aIndex := a1.node().Current().Index

	t.Run("other cluster", func(t *testing.T) {
		tn := tc.addNode("a2")
		copyFile(t, filepath.Join(x1.dir, "local.db"), filepath.Join(tn.dir, "local.db"))
		n := tn.mustStart(func(c *Config) { c.Join = []string{a1.url()} })
		mon := watchServed(n, xID)
		if st := n.Status(); st.Ready || n.Current().ClusterID != "" {
			t.Errorf("a node that has not joined serves %q (status %+v)", n.Current().ClusterID, st)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := n.JoinCluster(ctx); err != nil {
			t.Fatal(err)
		}
		waitIndex(t, n, aIndex)
		if n.Current().ClusterID != aID || n.Current().Zone("foreign.test.") != nil {
			t.Errorf("a2 serves %q", n.Current().ClusterID)
		}
		mon.finish(t)
	})

	t.Run("same cluster", func(t *testing.T) {
		tn := tc.addNode("a3")
		a1.stop() // copy a closed file
		copyFile(t, filepath.Join(a1.dir, "local.db"), filepath.Join(tn.dir, "local.db"))
		a1.mustStart(nil)
		n := tn.mustStart(func(c *Config) { c.Join = []string{a1.url()} })
		mon := watchServed(n, "")
		defer mon.finish(t)
		if n.Current().ClusterID != "" {
			t.Errorf("served before the join")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := n.JoinCluster(ctx); err != nil {
			t.Fatal(err)
		}
		if v := n.Current(); v.ClusterID != aID || v.Index < aIndex {
			t.Errorf("after the join a3 serves index %d of %q, want >= %d of %q", v.Index, v.ClusterID, aIndex, aID)
		}
	})
	tc.waitVoters(3)
}

// TestDamagedLocalDB: a damaged local.db, or one of a newer layout, is
// moved aside and the node starts and serves from Raft.
func TestDamagedLocalDB(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, path string)
		aside  string // suffix of the moved file; "" when nothing is moved
	}{
		{"garbage", func(t *testing.T, path string) {
			b := make([]byte, 64<<10)
			for i := range b {
				b[i] = byte(i*7 + 3)
			}
			writeFile(t, path, b)
		}, "damaged"},
		{"truncated", func(t *testing.T, path string) {
			b, _ := os.ReadFile(path)
			writeFile(t, path, b[:len(b)/3])
		}, "damaged"},
		{"zone value damaged", func(t *testing.T, path string) {
			editBolt(t, path, func(tx *bbolt.Tx) error {
				zb := tx.Bucket(bucketZones)
				v := append([]byte{}, zb.Get([]byte(testZone))...)
				v[len(v)/2] ^= 0xff
				return zb.Put([]byte(testZone), v)
			})
		}, "damaged"},
		{"members damaged", func(t *testing.T, path string) {
			editBolt(t, path, func(tx *bbolt.Tx) error {
				return tx.Bucket(bucketMeta).Put(keyMembers, []byte("{"))
			})
		}, "damaged"},
		{"newer layout", func(t *testing.T, path string) {
			editBolt(t, path, func(tx *bbolt.Tx) error {
				return tx.Bucket(bucketMeta).Put(keyLayout, []byte{0, 0, 0, 2})
			})
		}, "newer"},
		{"empty file", func(t *testing.T, path string) { writeFile(t, path, nil) }, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tn, cid := singleNodeCluster(t, "n1", testZone)
			path := filepath.Join(tn.dir, "local.db")
			c.damage(t, path)
			n := tn.mustStart(nil)
			moved, _ := filepath.Glob(path + ".*")
			switch {
			case c.aside == "" && len(moved) != 0:
				t.Errorf("moved aside: %v", moved)
			case c.aside != "" && (len(moved) != 1 || !strings.Contains(moved[0], "."+c.aside+"-")):
				t.Errorf("moved aside: %v, want one %s file", moved, c.aside)
			}
			waitFor(t, 10*time.Second, "raft state served", n.FSM().Changed, func() bool {
				return aRecord(n.Current(), testZone, "www") == "198.51.100.1"
			})
			idx := n.Current().Index
			tn.stop()
			l, v, err := openLocalDB(path, testLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			defer l.close()
			if v == nil || v.ClusterID != cid || v.Index != idx || aRecord(v, testZone, "www") != "198.51.100.1" {
				t.Errorf("local.db was not rewritten: %+v", v)
			}
		})
	}
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func editBolt(t *testing.T, path string, fn func(*bbolt.Tx) error) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
}

// TestCrashRestartNeverServesOlder is the I2 case the partition suite
// found: local.db lags the served View by up to its debounce, so a node
// restarted after a crash must replay its own log up to the served mark
// before it answers, instead of serving the older local.db copy.
func TestCrashRestartNeverServesOlder(t *testing.T) {
	tc := newTestCluster(t)
	// local.db is written once, then not again for an hour: everything
	// after that first write exists only in raft.db and the served mark.
	tn := tc.addNode("n1")
	tn.cfgMod = func(c *Config) { c.LocalDBDebounce = time.Hour }
	n0 := tn.mustStart(func(c *Config) { c.Bootstrap = true })
	waitFor(t, 10*time.Second, "bootstrap leader", n0.FSM().Changed, func() bool {
		return n0.IsLeader() && n0.ClusterID() != ""
	})
	tc.mustPropose(createZone(t, "crash.test."))
	var last *fsm.Result
	for i := range 20 {
		last = tc.mustPropose(setA(t, "crash.test.", fmt.Sprintf("h%d", i), "192.0.2.1"))
	}
	before := tn.node().Current()
	if before.Index < last.Index {
		t.Fatalf("served index %d below the last write %d", before.Index, last.Index)
	}
	beforeSerial := before.Zone("crash.test.").Serial()
	tn.kill()

	// Restart: check what is served before Raft has had any chance to elect
	// itself and re-apply the log.
	n := tn.mustStart(nil)
	got := n.Current()
	if got.Index < before.Index {
		t.Fatalf("after the crash the node serves index %d, before it served %d", got.Index, before.Index)
	}
	if z := got.Zone("crash.test."); z == nil || z.Serial() != beforeSerial || aRecord(got, "crash.test.", "h19") != "192.0.2.1" {
		t.Fatalf("after the crash: zone %v, want serial %d with h19", z, beforeSerial)
	}
	if got.Hash() != before.Hash() {
		t.Fatal("replayed View differs from the one served before the crash")
	}
}
