package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kudurru/kudurru/jepsen-style-tests/harness"
	"github.com/kudurru/kudurru/jepsen-style-tests/model"
	"github.com/kudurru/kudurru/jepsen-style-tests/traffic"
)

// localDB is the node-local copy of the served View in a data dir.
const localDB = "local.db"

// foreignCluster boots a one-node cluster of its own on a hidden node,
// gives it the suite's zone with a marker record, stops it cleanly (which
// writes its local.db) and returns the path of that local.db, the marker
// and the other cluster's ID.
func (e *Env) foreignCluster(ctx context.Context) (path, marker, cid string, err error) {
	x, err := e.C.AddNode(ctx, true)
	if err != nil {
		return "", "", "", err
	}
	if err := e.C.Start(x, true, nil); err != nil {
		return "", "", "", err
	}
	defer func() {
		if x.Running() {
			_ = x.Kill()
		}
	}()
	api := e.C.API()
	marker = fmt.Sprintf("foreign-%d", e.Rand.Uint32())
	ok := false
	for i := 0; i < 100 && !ok && ctx.Err() == nil; i++ {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = api.CreateZone(rctx, x.APIURL(), e.C.Zone(), []string{"ns1." + e.C.Zone()})
		cancel()
		ok = err == nil
		if !ok {
			_ = hold(ctx, 200*time.Millisecond)
		}
	}
	if !ok {
		return "", "", "", fmt.Errorf("foreign cluster %s: create zone: %w (see %s)", x.ID, err, x.LogPath)
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	res := api.Patch(rctx, x.APIURL(), e.C.Zone(), []traffic.Change{
		{Op: "replace", Name: traffic.MarkerKey, Type: "TXT", Records: []string{traffic.Quote(marker)}},
	})
	st, serr := api.Status(rctx, x.APIURL())
	cancel()
	if res.Outcome != model.OK || serr != nil {
		return "", "", "", fmt.Errorf("foreign cluster %s: write marker: %s %s %v", x.ID, res.Code, res.Err, serr)
	}
	if err := x.Terminate(15 * time.Second); err != nil {
		return "", "", "", err
	}
	path = filepath.Join(x.DataDir, localDB)
	if _, err := os.Stat(path); err != nil {
		return "", "", "", fmt.Errorf("foreign cluster %s left no %s: %w", x.ID, localDB, err)
	}
	return path, marker, st.ClusterID, nil
}

// ForeignData tests I6 twice. First, every member is stopped, one gets the
// other cluster's local.db in place of its own and is started alone (its
// Raft state names this cluster, its local.db another): it must serve
// nothing from that file. Then the rest are started. Second, a brand-new
// node whose data dir holds only the other cluster's local.db joins: it
// must drop the file once it learns which cluster it joined.
func ForeignData(ctx context.Context, e *Env) error {
	path, marker, cid, err := e.foreignCluster(ctx)
	if err != nil {
		return err
	}
	foreign := func(n *harness.Node) {
		now := e.Rec.Now()
		e.Rec.Add(model.Op{Kind: model.KindNemesis, Process: -1, Nemesis: model.NemForeign, Value: marker, Code: cid,
			Nodes: []string{n.ID}, Minority: e.C.Minority(), Invoke: now, Complete: now, Outcome: model.OK})
		e.Logf("nemesis foreign: %s got the local.db of cluster %s (marker %s)", n.ID, cid, marker)
	}
	ms := e.shuffled()
	for _, n := range ms {
		if err := n.Terminate(15 * time.Second); err != nil {
			return err
		}
	}
	e.event(model.NemStop, "stop every node", ms)
	victim, rest := ms[0], ms[1:]
	if err := victim.ReplaceFile(localDB, path); err != nil {
		return err
	}
	foreign(victim)
	if err := e.C.Start(victim, false, nil); err != nil {
		return err
	}
	e.event(model.NemStart, "start "+victim.ID+" alone on another cluster's local.db", []*harness.Node{victim})
	if err := hold(ctx, e.Hold); err != nil {
		return err
	}
	for _, n := range rest {
		if err := e.C.Start(n, false, nil); err != nil {
			return err
		}
	}
	e.event(model.NemStart, fmt.Sprintf("start the rest %v", harness.IDs(rest)), rest)
	e.settle(ctx)

	fresh, err := e.C.AddNode(ctx, false)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(fresh.DataDir, 0o755); err != nil {
		return err
	}
	if err := fresh.ReplaceFile(localDB, path); err != nil {
		return err
	}
	foreign(fresh)
	if err := e.C.Join(ctx, fresh, e.C.Members()); err != nil {
		return err
	}
	e.event(model.NemJoin, "join "+fresh.ID+" with only another cluster's local.db", []*harness.Node{fresh})
	if err := hold(ctx, e.Hold/2); err != nil {
		return err
	}
	e.settle(ctx)
	return nil
}
