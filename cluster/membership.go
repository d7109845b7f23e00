package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/hashicorp/raft"
	"github.com/kudurru/kudurru/fsm"
	"github.com/kudurru/kudurru/fsm/zone"
)

// AddMember admits a node on the leader (the handler of POST
// /v1/cluster/join). A new node is added as a non-voter and its API
// address recorded; the promoter makes it a voter once it has caught up.
// Joining again is harmless: a member with the same address is left as it
// is, one with a new Raft address keeps its suffrage. It returns
// ErrNotLeader on another node, ErrNoQuorum when there is no leader,
// ErrOtherCluster when the joiner holds data of another cluster,
// ErrInvalid for a malformed request, and fsm.ErrNotBootstrapped (retry)
// while the new cluster's ID is not committed yet.
func (n *Node) AddMember(ctx context.Context, req JoinRequest) (JoinResponse, error) {
	if err := validateJoin(req); err != nil {
		return JoinResponse{}, err
	}
	if err := n.awaitLeadership(ctx); err != nil {
		return JoinResponse{}, fmt.Errorf("add member %s: %w", req.NodeID, err)
	}
	cid := n.fsm.RaftView().ClusterID
	if cid == "" {
		return JoinResponse{}, fmt.Errorf("add member %s: %w: the cluster ID is not committed yet; retry", req.NodeID, fsm.ErrNotBootstrapped)
	}
	if req.ClusterID != "" && req.ClusterID != cid {
		return JoinResponse{}, fmt.Errorf("%w: node %s holds data of cluster %s, and this is cluster %s; start it with an empty data dir to join",
			ErrOtherCluster, req.NodeID, req.ClusterID, cid)
	}
	lg := n.log.With("peer", req.NodeID, "raft_addr", req.RaftAddr, "api_addr", req.APIAddr)
	id, addr := raft.ServerID(req.NodeID), raft.ServerAddress(req.RaftAddr)
	var existing *raft.Server
	for _, s := range n.configuration() {
		switch {
		case s.ID == id:
			existing = &s
		case s.Address == addr:
			return JoinResponse{}, fmt.Errorf("%w: raft address %s is already used by member %s; remove that member first", ErrInvalid, addr, s.ID)
		}
	}
	switch {
	case existing == nil:
		if err := n.waitFuture(ctx, n.raft.AddNonvoter(id, addr, 0, n.cfg.ApplyTimeout)); err != nil {
			return JoinResponse{}, fmt.Errorf("add %s as non-voter: %w", id, err)
		}
		lg.Info("added a non-voter; it becomes a voter once it has caught up")
	case id == raft.ServerID(n.cfg.NodeID) && existing.Address != addr:
		return JoinResponse{}, fmt.Errorf("%w: node ID %s is the leader's own, at %s", ErrInvalid, id, existing.Address)
	case existing.Address != addr:
		f := n.raft.AddNonvoter(id, addr, 0, n.cfg.ApplyTimeout)
		if existing.Suffrage == raft.Voter {
			f = n.raft.AddVoter(id, addr, 0, n.cfg.ApplyTimeout)
		}
		if err := n.waitFuture(ctx, f); err != nil {
			return JoinResponse{}, fmt.Errorf("update the raft address of %s: %w", id, err)
		}
		lg.Info("updated a member's raft address", "old_raft_addr", existing.Address, "suffrage", existing.Suffrage.String())
	default:
		lg.Info("a member joined again; its configuration is unchanged", "suffrage", existing.Suffrage.String())
	}
	if m, ok := n.fsm.RaftView().Member(req.NodeID); !ok || m.APIAddr != req.APIAddr {
		res, err := n.Propose(ctx, &fsm.Command{Op: fsm.OpPutMember, Member: zone.Member{ID: req.NodeID, APIAddr: req.APIAddr}})
		if err == nil && res.Err != nil {
			err = res.Err
		}
		if err != nil {
			return JoinResponse{}, fmt.Errorf("record the API address of %s: %w", id, err)
		}
	}
	wake(n.wakePromoter)
	return JoinResponse{ClusterID: cid, LeaderID: n.cfg.NodeID}, nil
}

func validateJoin(req JoinRequest) error {
	if !nodeIDPattern.MatchString(req.NodeID) {
		return fmt.Errorf("%w: node_id %q: want 1 to 64 letters, digits, '.', '_' or '-'", ErrInvalid, req.NodeID)
	}
	if err := checkHostPort(req.RaftAddr); err != nil {
		return fmt.Errorf("%w: raft_addr %q: %v", ErrInvalid, req.RaftAddr, err)
	}
	if host, port, _ := net.SplitHostPort(req.RaftAddr); isUnspecified(host) || port == "0" {
		return fmt.Errorf("%w: raft_addr %q cannot be dialled", ErrInvalid, req.RaftAddr)
	}
	if err := checkBaseURL(req.APIAddr); err != nil {
		return fmt.Errorf("%w: api_addr %q: %v", ErrInvalid, req.APIAddr, err)
	}
	return nil
}

// RemoveMember takes a node out of the cluster on the leader: it removes
// the server from the Raft configuration and its entry from the members.
// A leader removing itself records the removal first and then steps down;
// its Raft stops (ShutdownOnRemove). It returns ErrUnknownMember when the
// node is neither in the configuration nor among the members.
func (n *Node) RemoveMember(ctx context.Context, nodeID string) error {
	if err := n.awaitLeadership(ctx); err != nil {
		return fmt.Errorf("remove member %s: %w", nodeID, err)
	}
	inConf := false
	for _, s := range n.configuration() {
		inConf = inConf || s.ID == raft.ServerID(nodeID)
	}
	_, inView := n.fsm.RaftView().Member(nodeID)
	if !inConf && !inView {
		return fmt.Errorf("%w: %q", ErrUnknownMember, nodeID)
	}
	removeEntry := func() error {
		if !inView {
			return nil
		}
		res, err := n.Propose(ctx, &fsm.Command{Op: fsm.OpRemoveMember, Member: zone.Member{ID: nodeID}})
		if err == nil && res.Err != nil {
			err = res.Err
		}
		if err != nil {
			return fmt.Errorf("remove the member entry of %s: %w", nodeID, err)
		}
		return nil
	}
	removeServer := func() error {
		if !inConf {
			return nil
		}
		if err := n.waitFuture(ctx, n.raft.RemoveServer(raft.ServerID(nodeID), 0, n.cfg.ApplyTimeout)); err != nil {
			return fmt.Errorf("remove %s from the raft configuration: %w", nodeID, err)
		}
		return nil
	}
	steps := []func() error{removeServer, removeEntry}
	if nodeID == n.cfg.NodeID {
		steps = []func() error{removeEntry, removeServer}
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	n.log.Info("removed a member", "peer", nodeID)
	return nil
}

// errPermanent marks a join error that retrying cannot fix.
var errPermanent = errors.New("join refused")
