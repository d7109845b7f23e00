package cluster

import (
	"log/slog"
	"time"

	"github.com/hashicorp/raft"
	"github.com/kudurru/kudurru/fsm"
	"github.com/kudurru/kudurru/fsm/zone"
)

// scanLimit bounds how many log entries scanClusterID reads. The bootstrap
// command is the first command a cluster commits (index 3 in practice:
// configuration, the leader's no-op, then it); once the log is compacted a
// snapshot exists and carries the ID instead.
const scanLimit = 1024

// scanClusterID returns the cluster ID of the first bootstrap command in the
// log store, or "". It is used when Raft restored no snapshot.
func scanClusterID(logs raft.LogStore, log *slog.Logger) string {
	first, err := logs.FirstIndex()
	if err != nil {
		log.Warn("cannot read the log to find the cluster ID", "err", err)
		return ""
	}
	last, err := logs.LastIndex()
	if err != nil || first == 0 {
		return ""
	}
	for i := first; i <= last && i < first+scanLimit; i++ {
		var l raft.Log
		if err := logs.GetLog(i, &l); err != nil {
			log.Warn("cannot read a log entry while looking for the cluster ID", "index", i, "err", err)
			return ""
		}
		if l.Type != raft.LogCommand {
			continue
		}
		if c, err := fsm.DecodeCommand(l.Data); err == nil && c.Op == fsm.OpBootstrap {
			return c.ClusterID
		}
	}
	return ""
}

// coldStart decides what to do with the View loaded from local.db:
//
//   - the node's Raft state names a cluster and local.db holds the same
//     one: serve it now (FSM.Seed); Raft's View replaces it once it is at
//     least as new;
//   - they name different clusters: log and ignore it (I6); the writer
//     overwrites it with this cluster's state later;
//   - the node has no cluster ID yet: hold it back until the node learns
//     its cluster (from the join response, or from Raft), and serve it only
//     if that is the same cluster. A node that bootstraps a new cluster can
//     never match, so it drops it at once.
func (n *Node) coldStart(loaded *zone.View, hasState bool) {
	if loaded == nil {
		return
	}
	cid := n.ClusterID()
	lg := n.log.With("local_cluster_id", loaded.ClusterID, "index", loaded.Index, "zones", loaded.Len())
	switch {
	case cid != "" && loaded.ClusterID == cid:
		if n.seed(loaded) {
			lg.Info("serving the node-local copy from local.db until Raft catches up", "raft_index", n.fsm.RaftView().Index)
		} else {
			lg.Info("local.db is not newer than Raft's state; serving Raft's state", "raft_index", n.fsm.RaftView().Index)
		}
	case cid != "":
		lg.Error("local.db belongs to another cluster and is ignored; it will be overwritten with this cluster's state",
			"cluster_id", cid)
	case n.cfg.Bootstrap && !hasState:
		lg.Error("local.db is ignored: this node is creating a new cluster, so it cannot be that cluster's copy")
	default:
		lg.Info("local.db held back until this node learns which cluster it belongs to", "has_state", hasState)
		n.mu.Lock()
		n.pending = loaded
		n.mu.Unlock()
	}
}

// replayServed makes a node restarted after a crash serve at least what it
// served before: local.db may be up to a debounce older than that, and
// Raft's snapshot older still. It replays the node's own log from the View
// being served (or Raft's, when the served one is of no cluster yet) up to
// the served mark. See servedmark.go.
func (n *Node) replayServed(markCID string, mark uint64) {
	cid := n.ClusterID()
	if cid == "" || markCID != cid {
		return
	}
	base := n.fsm.Current()
	if base.ClusterID != cid {
		base = n.fsm.RaftView()
	}
	lg := n.log.With("served_mark", mark, "base_index", base.Index)
	v, err := replayToMark(n.store, withCID(base, cid), cid, mark)
	switch {
	case err != nil:
		lg.Warn("cannot replay the log up to the index served before the restart; serving older data until Raft catches up", "err", err)
	case v == nil:
	case v.ClusterID != cid:
		lg.Warn("replayed log does not belong to this cluster; ignored", "replayed_cluster_id", v.ClusterID)
	case n.seed(v):
		lg.Info("replayed the node's own log up to the index served before the restart", "index", v.Index, "zones", v.Len())
	}
}

// withCID returns base, or for the empty View an empty View that names the
// cluster (so the replay check of cluster IDs passes; the replayed bootstrap
// entry sets the same ID).
func withCID(base *zone.View, cid string) *zone.View {
	if base.ClusterID != "" {
		return base
	}
	b := base.Edit()
	b.SetClusterID(cid)
	return b.View()
}

// seed publishes v when it is newer than the served View. FSM.Seed is a
// check-then-publish that can race with Raft publishing a newer View on the
// FSM goroutine; re-seeding Raft's own View afterwards makes sure the newer
// one ends up served.
func (n *Node) seed(v *zone.View) bool {
	if !n.fsm.Seed(v) {
		return false
	}
	for range 3 {
		rv := n.fsm.RaftView()
		if rv.ClusterID != v.ClusterID || n.fsm.Current().Index >= rv.Index {
			break
		}
		n.fsm.Seed(rv)
	}
	return true
}

// learnClusterID records the cluster ID a join response gave, and settles a
// held-back local.db copy.
func (n *Node) learnClusterID(id string) {
	if id == "" {
		return
	}
	if n.ClusterID() == "" {
		n.cid.Store(&id)
	}
	n.resolvePending()
}

// resolvePending serves the held-back local.db View once the node's cluster
// ID is known and matches it, and drops it when it does not.
func (n *Node) resolvePending() {
	cid := n.ClusterID()
	if cid == "" {
		return
	}
	n.mu.Lock()
	v := n.pending
	n.pending = nil
	n.mu.Unlock()
	if v == nil {
		return
	}
	lg := n.log.With("local_cluster_id", v.ClusterID, "index", v.Index, "cluster_id", cid)
	if v.ClusterID != cid {
		lg.Error("local.db belongs to another cluster and is ignored; it will be overwritten with this cluster's state")
		return
	}
	if n.seed(v) {
		lg.Info("serving the node-local copy from local.db until Raft catches up")
	}
}

// runLocalWriter refreshes local.db after publications, at most once per
// LocalDBDebounce — or per four times the last refresh's duration when that
// is longer, so that a huge zone does not keep the disk busy.
func (n *Node) runLocalWriter() {
	for {
		ch := n.fsm.Changed()
		n.resolvePending()
		d, err := n.flushLocal()
		if err == nil { // on error, retry after the pause without waiting for a change
			select {
			case <-n.ctx.Done():
				return
			case <-ch:
			}
		}
		t := time.NewTimer(max(n.cfg.LocalDBDebounce, 4*d))
		select {
		case <-n.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// flushLocal writes the served View to local.db when it belongs to this
// node's cluster and is newer than what the file holds. It returns how long
// the write took.
func (n *Node) flushLocal() (time.Duration, error) {
	v := n.fsm.Current()
	cid := n.ClusterID()
	if v.ClusterID == "" || v.ClusterID != cid {
		return 0, nil
	}
	if hc, hi := n.local.holds(); hc == v.ClusterID && hi >= v.Index {
		return 0, nil
	}
	start := time.Now()
	written, err := n.local.refresh(v)
	d := time.Since(start)
	n.m.localWriteTime.Observe(d.Seconds())
	if err != nil {
		n.m.localWriteErrors.Inc()
		n.log.Error("cannot refresh local.db", "index", v.Index, "err", err)
		return d, err
	}
	n.m.localWrites.Inc()
	n.log.Debug("refreshed local.db", "index", v.Index, "zones_written", written, "seconds", d.Seconds())
	return d, nil
}
