package cluster

import (
	"strings"
	"time"

	"github.com/hashicorp/raft"
	"github.com/kudurru/kudurru/fsm/zone"
)

// Status returns this node's view of the cluster. It never waits for other
// nodes.
func (n *Node) Status() Status {
	state := n.raft.State()
	cur := n.fsm.Current()
	s := Status{
		NodeID:       n.cfg.NodeID,
		ClusterID:    n.ClusterID(),
		State:        strings.ToLower(state.String()),
		Term:         n.raft.CurrentTerm(),
		AppliedIndex: n.raft.AppliedIndex(),
		ServingIndex: cur.Index,
		CommitIndex:  n.raft.CommitIndex(),
		Members:      []MemberStatus{},
	}
	s.LeaderEstablished = state == raft.Leader && n.establishedTerm.Load() == s.Term
	s.LeaderID, s.LeaderAPI = n.Leader()
	if state != raft.Leader {
		if t := n.raft.LastContact(); t.IsZero() {
			s.LastContactS = -1
		} else {
			s.LastContact = time.Since(t)
			s.LastContactS = s.LastContact.Seconds()
		}
	}
	s.Ready, s.ReadyReason = n.readiness(cur, s.ClusterID)
	for _, srv := range n.configuration() {
		m, _ := cur.Member(string(srv.ID))
		s.Members = append(s.Members, MemberStatus{
			ID:       string(srv.ID),
			RaftAddr: string(srv.Address),
			APIAddr:  m.APIAddr,
			Suffrage: strings.ToLower(srv.Suffrage.String()),
			Leader:   s.LeaderID != "" && string(srv.ID) == s.LeaderID,
		})
	}
	return s
}

// readiness says whether the node serves a View of its own cluster. A
// stale View still counts (reads are available without quorum); staleness
// shows in LeaderID and LastContactS.
func (n *Node) readiness(v *zone.View, cid string) (bool, string) {
	switch {
	case n.ctx.Err() != nil:
		return false, "the node is shutting down"
	case cid == "":
		return false, "the node does not belong to a cluster yet"
	case v.ClusterID != cid:
		return false, "no state of this cluster yet: waiting for Raft"
	}
	return true, ""
}
