package cluster

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/kudurru/kudurru/fsm"
	"github.com/kudurru/kudurru/fsm/zone"
	"go.etcd.io/bbolt"
)

// applier builds real Views by feeding commands to an FSM, as Raft would.
type applier struct {
	t   *testing.T
	f   *fsm.FSM
	idx uint64
}

func newApplier(t *testing.T, cid string) *applier {
	a := &applier{t: t, f: fsm.New(fsm.Config{})}
	a.apply(&fsm.Command{Op: fsm.OpBootstrap, ClusterID: cid})
	return a
}

func (a *applier) apply(cmds ...*fsm.Command) *zone.View {
	a.t.Helper()
	var logs []*raft.Log
	for _, c := range cmds {
		data, err := c.Encode()
		if err != nil {
			a.t.Fatal(err)
		}
		a.idx++
		logs = append(logs, &raft.Log{Index: a.idx, Type: raft.LogCommand, Data: data})
	}
	for i, r := range a.f.ApplyBatch(logs) {
		if res := r.(*fsm.Result); res.Err != nil {
			a.t.Fatalf("command %d: %v", i, res.Err)
		}
	}
	return a.f.RaftView()
}

func sameContent(t *testing.T, got, want *zone.View) {
	t.Helper()
	if got == nil {
		t.Fatal("no View")
	}
	if got.ClusterID != want.ClusterID || got.Index != want.Index {
		t.Errorf("cluster %q index %d, want %q %d", got.ClusterID, got.Index, want.ClusterID, want.Index)
	}
	if g, w := strings.Join(got.ZoneNames(), ","), strings.Join(want.ZoneNames(), ","); g != w {
		t.Errorf("zones %s, want %s", g, w)
	}
	for _, z := range want.Zones() {
		a, _ := zone.EncodeZone(z)
		b, _ := zone.EncodeZone(got.Zone(z.Origin))
		if string(a) != string(b) {
			t.Errorf("zone %s differs", z.Origin)
		}
	}
	if len(got.Members()) != len(want.Members()) {
		t.Errorf("members %v, want %v", got.Members(), want.Members())
	}
}

func TestLocalDBRefresh(t *testing.T) {
	path := filepath.Join(t.TempDir(), "local.db")
	log := testLogger(t)
	l, v, err := openLocalDB(path, log)
	if err != nil || v != nil {
		t.Fatalf("new file: %v, %v", v, err)
	}
	a := newApplier(t, "c1")
	v1 := a.apply(createZone(t, "a.test."), createZone(t, "b.test."), createZone(t, "c.test."),
		&fsm.Command{Op: fsm.OpPutMember, Member: zone.Member{ID: "n1", APIAddr: "http://127.0.0.1:1"}})
	steps := []struct {
		name  string
		view  *zone.View
		wrote int
	}{
		{"first write", v1, 3},
		{"same View", v1, 0},
		{"one zone changed", a.apply(setA(t, "b.test.", "www", "192.0.2.1")), 1},
		{"members changed only", a.apply(&fsm.Command{Op: fsm.OpPutMember, Member: zone.Member{ID: "n2", APIAddr: "http://127.0.0.1:2"}}), 0},
		{"zone deleted", a.apply(deleteZone("c.test.")), 0},
		{"zone created again", a.apply(createZone(t, "c.test.")), 1},
		{"zone deleted for good", a.apply(deleteZone("a.test.")), 0},
	}
	for _, s := range steps {
		n, err := l.refresh(s.view)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if n != s.wrote {
			t.Errorf("%s: wrote %d zones, want %d", s.name, n, s.wrote)
		}
	}
	last := steps[len(steps)-1].view
	l.close()
	l, v, err = openLocalDB(path, log)
	if err != nil {
		t.Fatal(err)
	}
	sameContent(t, v, last)
	// Tombstones survive too: the loaded View is Raft's, byte for byte.
	if v.Hash() != last.Hash() {
		t.Error("loaded View's hash differs from the View written")
	}
	// Loaded zones are matched by serial: nothing to rewrite for the same
	// content coming from Raft.
	if n, err := l.refresh(a.apply(setA(t, "b.test.", "x", "192.0.2.9"))); err != nil || n != 1 {
		t.Errorf("after reload: wrote %d zones (%v), want 1", n, err)
	}
	// Another cluster's View replaces everything.
	b := newApplier(t, "c2")
	other := b.apply(createZone(t, "z.test."))
	if n, err := l.refresh(other); err != nil || n != 1 {
		t.Errorf("other cluster: wrote %d zones (%v), want 1", n, err)
	}
	l.close()
	l, v, err = openLocalDB(path, log)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	sameContent(t, v, other)
}

func TestLocalDBBlobs(t *testing.T) {
	l, _, err := openLocalDB(filepath.Join(t.TempDir(), "local.db"), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	if b, err := l.getBlob("cache"); err != nil || b != nil {
		t.Errorf("missing blob: %q, %v", b, err)
	}
	if err := l.putBlob("cache", []byte("dump")); err != nil {
		t.Fatal(err)
	}
	if b, err := l.getBlob("cache"); err != nil || string(b) != "dump" {
		t.Errorf("blob: %q, %v", b, err)
	}
	if err := l.putBlob("", nil); err == nil {
		t.Error("empty blob name accepted")
	}
}

func TestLocalDBLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "local.db")
	l, _, err := openLocalDB(path, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	_, _, err = openLocalDB(path, testLogger(t))
	if !errors.Is(err, bbolt.ErrTimeout) {
		t.Errorf("second open: %v, want a lock timeout", err)
	}
	if moved, _ := filepath.Glob(path + ".*"); len(moved) != 0 {
		t.Errorf("a locked file was moved aside: %v", moved)
	}
}
