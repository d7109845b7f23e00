package cluster

import (
	"errors"
	"time"
)

// Errors of the write path. A caller maps them to what it tells its client:
// ErrNoQuorum and ErrNotLeader are definite failures (nothing was committed);
// ErrUnknownOutcome means the entry may or may not have been committed.
var (
	ErrNotLeader      = errors.New("this node is not the leader")
	ErrNoQuorum       = errors.New("no quorum: the cluster has no leader that a majority follows")
	ErrUnknownOutcome = errors.New("outcome unknown: the write may or may not have been committed")
	ErrOtherCluster   = errors.New("data directory belongs to another cluster")
	ErrShutdown       = errors.New("node is shutting down")
	ErrUnknownMember  = errors.New("no such cluster member")
	ErrInvalid        = errors.New("invalid request") // a malformed join request or command: nothing was done
)

// JoinRequest asks the leader to add a node to the cluster.
type JoinRequest struct {
	NodeID    string `json:"node_id"`
	RaftAddr  string `json:"raft_addr"`
	APIAddr   string `json:"api_addr"`             // base URL of the joiner's HTTP API
	ClusterID string `json:"cluster_id,omitempty"` // the joiner's existing cluster ID, if its data dir has one
}

// JoinResponse is the leader's answer to a join.
type JoinResponse struct {
	ClusterID string `json:"cluster_id"`
	LeaderID  string `json:"leader_id"`
}

// MemberStatus describes one member of the Raft configuration.
type MemberStatus struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	APIAddr  string `json:"api_addr,omitempty"`
	Suffrage string `json:"suffrage"` // "voter" or "nonvoter"
	Leader   bool   `json:"leader"`
}

// Status is a node's view of the cluster.
type Status struct {
	NodeID       string        `json:"node_id"`
	ClusterID    string        `json:"cluster_id"`
	State        string        `json:"state"` // Raft state: leader, follower, candidate, shutdown
	Term         uint64        `json:"term"`
	LeaderID     string        `json:"leader_id"`
	LeaderAPI    string        `json:"leader_api,omitempty"`
	AppliedIndex uint64        `json:"applied_index"` // Raft's own applied index
	ServingIndex uint64        `json:"serving_index"` // index of the View answering queries
	CommitIndex  uint64        `json:"commit_index"`
	LastContact  time.Duration `json:"-"`
	LastContactS float64       `json:"last_contact_seconds"` // since the last contact with the leader; 0 on the leader, -1 before any contact
	// LeaderEstablished is set on a leader that has applied every entry
	// of earlier terms since its election (a barrier), so that its View
	// holds every acknowledged write. Until then a new leader's View, and
	// its commit index, may lag what the previous leader acknowledged.
	LeaderEstablished bool           `json:"-"`
	Ready             bool           `json:"ready"`
	ReadyReason       string         `json:"ready_reason,omitempty"`
	Members           []MemberStatus `json:"members"`
}
