package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
	"github.com/kudurru/kudurru/fsm"
	"github.com/kudurru/kudurru/fsm/zone"
)

// runObserver turns Raft's observations (leader and state changes) into the
// node's wake-ups. Observations are delivered without blocking and may be
// dropped when the channel is full; every consumer re-reads Raft's state
// when woken, so a dropped one only delays a wake-up to the next.
func (n *Node) runObserver() {
	var last raft.ServerID
	for {
		select {
		case <-n.ctx.Done():
			return
		case o := <-n.obsCh:
			switch d := o.Data.(type) {
			case raft.LeaderObservation:
				if d.LeaderID != last {
					last = d.LeaderID
					if d.LeaderID != "" {
						n.m.leaderChanges.Inc()
						n.log.Info("leader changed", "leader", d.LeaderID, "term", n.raft.CurrentTerm())
					} else {
						n.log.Info("no leader", "term", n.raft.CurrentTerm())
					}
				}
			case raft.RaftState:
				n.log.Debug("raft state changed", "state", d.String(), "term", n.raft.CurrentTerm())
			}
			n.notifyChanged()
			wake(n.wakeDuties)
			wake(n.wakePromoter)
		}
	}
}

// runLeaderDuties runs establishLeadership once per term in which this node
// leads, retrying after a failure.
func (n *Node) runLeaderDuties() {
	var doneTerm uint64
	var retry <-chan time.Time
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-n.wakeDuties:
		case <-retry:
			retry = nil
		}
		if n.raft.State() != raft.Leader {
			continue
		}
		term := n.raft.CurrentTerm()
		if term == doneTerm {
			continue
		}
		if err := n.establishLeadership(); err != nil {
			if n.ctx.Err() == nil {
				n.log.Warn("leader setup failed; retrying", "term", term, "err", err)
				retry = time.After(n.cfg.HeartbeatTimeout)
			}
			continue
		}
		doneTerm = term
		n.establishedTerm.Store(term)
		n.notifyChanged()
		wake(n.wakePromoter)
	}
}

// establishLeadership brings the replicated state up to what a leader
// needs: the cluster ID (created by the first leader of a new cluster), its
// own API address among the members, and no member entries for servers
// that left the configuration.
func (n *Node) establishLeadership() error {
	ctx, cancel := context.WithTimeout(n.ctx, 2*n.cfg.ApplyTimeout)
	defer cancel()
	// After the barrier the FSM has applied every entry of earlier terms,
	// so what it says about the cluster ID and members is current.
	if err := n.waitFuture(ctx, n.raft.Barrier(n.cfg.ApplyTimeout)); err != nil {
		return fmt.Errorf("barrier: %w", err)
	}
	if n.fsm.RaftView().ClusterID == "" {
		id, err := newClusterID()
		if err != nil {
			return err
		}
		res, err := n.Propose(ctx, &fsm.Command{Op: fsm.OpBootstrap, ClusterID: id})
		if err != nil {
			return fmt.Errorf("propose cluster ID: %w", err)
		}
		if res.Err != nil {
			return fmt.Errorf("propose cluster ID: %w", res.Err)
		}
		n.log.Info("created the cluster ID", "cluster_id", id, "index", res.Index)
	}
	self := n.cfg.NodeID
	if m, ok := n.fsm.RaftView().Member(self); !ok || m.APIAddr != n.cfg.APIAddr {
		res, err := n.Propose(ctx, &fsm.Command{Op: fsm.OpPutMember, Member: zone.Member{ID: self, APIAddr: n.cfg.APIAddr}})
		if err != nil {
			return fmt.Errorf("record own API address: %w", err)
		}
		if res.Err != nil {
			return fmt.Errorf("record own API address: %w", res.Err)
		}
		n.log.Info("recorded this node's API address", "api_addr", n.cfg.APIAddr, "index", res.Index)
	}
	// Read the View before the configuration: a member entry is written
	// only after its server was added, so every entry in this View whose
	// server is missing from the newer configuration was really removed.
	v := n.fsm.RaftView()
	inConf := make(map[string]bool)
	for _, s := range n.configuration() {
		inConf[string(s.ID)] = true
		if _, ok := v.Member(string(s.ID)); !ok {
			n.log.Warn("a member has no API address in the replicated state; it is recorded when that node joins again",
				"peer", s.ID, "suffrage", s.Suffrage.String())
		}
	}
	for _, m := range v.Members() {
		if inConf[m.ID] {
			continue
		}
		res, err := n.Propose(ctx, &fsm.Command{Op: fsm.OpRemoveMember, Member: zone.Member{ID: m.ID}})
		if err != nil {
			return fmt.Errorf("remove stale member %s: %w", m.ID, err)
		}
		n.log.Info("removed the API address of a node that left the configuration", "peer", m.ID, "index", res.Index)
	}
	n.log.Info("leadership established", "term", n.raft.CurrentTerm(), "cluster_id", n.ClusterID())
	return nil
}

// newClusterID returns 16 random bytes in hex.
func newClusterID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("cluster ID: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// notifyChanged closes the channel LeaderChanged returned and starts a new
// one: the leader, this node's state, or its establishment as leader
// changed.
func (n *Node) notifyChanged() {
	n.mu.Lock()
	close(n.leaderChanged)
	n.leaderChanged = make(chan struct{})
	n.mu.Unlock()
}
