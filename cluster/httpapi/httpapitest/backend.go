// Package httpapitest provides a fake httpapi.Backend for tests of the
// admin API and its clients: a real fsm.FSM without Raft, where Propose
// applies a command at the next index at once. It is a single-process
// stand-in, not a cluster: use real nodes for replication tests.
package httpapitest

import (
	"context"
	"fmt"
	"sync"

	"github.com/hashicorp/raft"
	"github.com/kudurru/kudurru/cluster"
	"github.com/kudurru/kudurru/fsm"
	"github.com/kudurru/kudurru/fsm/zone"
)

// ClusterID is the cluster ID of every Backend.
const ClusterID = "c-test"

// Backend is a fake node. Its methods are safe for concurrent use.
type Backend struct {
	id  string
	fsm *fsm.FSM

	mu            sync.Mutex // guards everything below
	leader        bool
	leaderID      string
	leaderAPI     string
	index         uint64
	proposals     []*fsm.Command
	calls         int   // Propose calls, leader or not
	proposeErr    error // returned by Propose (after recording the call) when set
	ready         bool
	reason        string
	commitLag     uint64 // Status reports a commit index this far ahead of the View
	unestablished bool   // Status reports a leader not yet established in its term
	members       map[string]cluster.JoinRequest
	changed       chan struct{} // closed and replaced by SetLeader
}

// New returns a bootstrapped Backend with node ID id, leading when leader
// is true (and then knowing itself as the leader).
func New(id string, leader bool) *Backend {
	b := &Backend{id: id, fsm: fsm.New(fsm.Config{}), leader: leader, ready: true, members: map[string]cluster.JoinRequest{}, changed: make(chan struct{})}
	if leader {
		b.leaderID = id
	}
	if _, err := b.Apply(&fsm.Command{Op: fsm.OpBootstrap, ClusterID: ClusterID}); err != nil {
		panic(err) // a bootstrap command always encodes
	}
	return b
}

// Apply applies a command as a committed entry, bypassing leadership.
func (b *Backend) Apply(c *fsm.Command) (*fsm.Result, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.applyLocked(c)
}

func (b *Backend) applyLocked(c *fsm.Command) (*fsm.Result, error) {
	data, err := c.Encode()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", cluster.ErrInvalid, err)
	}
	b.index++
	return b.fsm.Apply(&raft.Log{Index: b.index, Type: raft.LogCommand, Data: data}).(*fsm.Result), nil
}

// NodeID returns the node's ID.
func (b *Backend) NodeID() string { return b.id }

// Current returns the FSM's View.
func (b *Backend) Current() *zone.View { return b.fsm.Current() }

// IsLeader reports whether this fake leads.
func (b *Backend) IsLeader() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.leader
}

// Leader returns the leader set with SetLeader.
func (b *Backend) Leader() (string, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.leaderID, b.leaderAPI
}

// SetLeader sets the known leader; this fake leads when id is its own.
func (b *Backend) SetLeader(id, apiURL string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.leaderID, b.leaderAPI = id, apiURL
	b.leader = id == b.id
	close(b.changed)
	b.changed = make(chan struct{})
}

// LeaderChanged returns a channel closed by the next SetLeader.
func (b *Backend) LeaderChanged() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.changed
}

// Propose records the call and, on a leader, applies c.
func (b *Backend) Propose(ctx context.Context, c *fsm.Command) (*fsm.Result, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls++
	if !b.leader {
		return nil, cluster.ErrNotLeader
	}
	b.proposals = append(b.proposals, c)
	if b.proposeErr != nil {
		return nil, b.proposeErr
	}
	return b.applyLocked(c)
}

// Proposed returns the commands proposed on this fake as leader.
func (b *Backend) Proposed() []*fsm.Command {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*fsm.Command(nil), b.proposals...)
}

// ProposeCalls counts Propose calls, leader or not.
func (b *Backend) ProposeCalls() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls
}

// SetProposeErr makes Propose fail with err (nil: succeed again).
func (b *Backend) SetProposeErr(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.proposeErr = err
}

// SetReady sets what Status reports as readiness.
func (b *Backend) SetReady(ready bool, reason string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ready, b.reason = ready, reason
}

// SetUnestablished makes Status report a leader that has not yet applied
// every entry of earlier terms since its election.
func (b *Backend) SetUnestablished(v bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.unestablished = v
}

// SetCommitLag makes Status report a commit index lag entries ahead of the
// View, as on a newly elected leader that has not applied everything yet.
func (b *Backend) SetCommitLag(lag uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.commitLag = lag
}

// Status describes the fake as a one-node cluster.
func (b *Backend) Status() cluster.Status {
	b.mu.Lock()
	defer b.mu.Unlock()
	state := "follower"
	if b.leader {
		state = "leader"
	}
	return cluster.Status{
		NodeID: b.id, ClusterID: ClusterID, State: state, Term: 1, LeaderID: b.leaderID, LeaderAPI: b.leaderAPI,
		AppliedIndex: b.index, ServingIndex: b.fsm.Current().Index, CommitIndex: b.index + b.commitLag,
		LeaderEstablished: b.leader && !b.unestablished,
		Ready:             b.ready, ReadyReason: b.reason,
		Members: []cluster.MemberStatus{{ID: b.id, RaftAddr: "127.0.0.1:8054", APIAddr: b.leaderAPI, Suffrage: "voter", Leader: b.leader}},
	}
}

// AddMember records a member; it refuses a joiner of another cluster.
func (b *Backend) AddMember(ctx context.Context, r cluster.JoinRequest) (cluster.JoinResponse, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.leader {
		return cluster.JoinResponse{}, cluster.ErrNotLeader
	}
	if r.ClusterID != "" && r.ClusterID != ClusterID {
		return cluster.JoinResponse{}, cluster.ErrOtherCluster
	}
	b.members[r.NodeID] = r
	return cluster.JoinResponse{ClusterID: ClusterID, LeaderID: b.id}, nil
}

// RemoveMember forgets a member added with AddMember.
func (b *Backend) RemoveMember(ctx context.Context, id string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.leader {
		return cluster.ErrNotLeader
	}
	if _, ok := b.members[id]; !ok {
		return cluster.ErrUnknownMember
	}
	delete(b.members, id)
	return nil
}
