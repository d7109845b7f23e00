package cluster

import (
	"slices"
	"time"

	"github.com/hashicorp/raft"
)

// runPromoter makes caught-up non-voters voters while this node leads (the
// Autopilot pattern): a joiner does not count toward quorum until it holds
// nearly the whole log, so adding it cannot stall commits.
func (n *Node) runPromoter() {
	t := time.NewTicker(n.cfg.PromoteInterval)
	defer t.Stop()
	marks := map[raft.ServerID]uint64{}
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		case <-n.wakePromoter:
		}
		if n.IsLeader() {
			n.promote(marks)
		} else {
			clear(marks)
		}
	}
}

// promote polls each non-voter's GET /v1/cluster and promotes it once it
// has applied the log up to the leader's last index when the promoter first
// saw it as a non-voter (past the entry that admitted it: raft does not
// export that entry's index) and its applied index is within PromoteMaxLag
// of the leader's last index. marks holds those first-seen indexes.
func (n *Node) promote(marks map[raft.ServerID]uint64) {
	v := n.fsm.RaftView()
	servers := n.configuration()
	for id := range marks {
		if !slices.ContainsFunc(servers, func(s raft.Server) bool { return s.ID == id && s.Suffrage == raft.Nonvoter }) {
			delete(marks, id)
		}
	}
	for _, s := range servers {
		if s.Suffrage != raft.Nonvoter || n.ctx.Err() != nil {
			continue
		}
		if _, ok := marks[s.ID]; !ok {
			marks[s.ID] = n.raft.LastIndex()
		}
		lg := n.log.With("peer", s.ID)
		m, ok := v.Member(string(s.ID))
		if !ok || m.APIAddr == "" {
			lg.Debug("non-voter has no API address yet")
			continue
		}
		st, err := n.fetchStatus(n.ctx, m.APIAddr)
		if err != nil {
			lg.Info("cannot poll a non-voter's status", "api_addr", m.APIAddr, "err", err)
			continue
		}
		if st.NodeID != string(s.ID) {
			lg.Warn("a non-voter's API address answers for another node", "api_addr", m.APIAddr, "answered", st.NodeID)
			continue
		}
		if st.ClusterID != "" && st.ClusterID != v.ClusterID {
			lg.Warn("a non-voter reports another cluster", "its_cluster_id", st.ClusterID)
			continue
		}
		last := n.raft.LastIndex()
		if st.AppliedIndex < marks[s.ID] || st.AppliedIndex+n.cfg.PromoteMaxLag < last {
			lg.Debug("non-voter still catching up", "applied_index", st.AppliedIndex, "mark", marks[s.ID], "last_index", last)
			continue
		}
		if err := n.waitFuture(n.ctx, n.raft.AddVoter(s.ID, s.Address, 0, n.cfg.ApplyTimeout)); err != nil {
			lg.Warn("cannot promote a non-voter", "err", err)
			continue
		}
		n.m.promotions.Inc()
		lg.Info("promoted a non-voter to voter", "applied_index", st.AppliedIndex, "last_index", last)
	}
}
