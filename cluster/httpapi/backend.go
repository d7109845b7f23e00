package httpapi

import (
	"context"

	"github.com/kudurru/kudurru/cluster"
	"github.com/kudurru/kudurru/fsm"
	"github.com/kudurru/kudurru/fsm/zone"
)

// Backend is what the API needs from the node. The cluster's Node implements
// it; tests use a fake. Every method is called from HTTP handler goroutines,
// concurrently, and must be safe for that.
type Backend interface {
	// NodeID returns this node's ID.
	NodeID() string
	// Current returns the View this node serves: local, possibly stale. It
	// must not block.
	Current() *zone.View
	// IsLeader reports whether this node is the Raft leader now.
	IsLeader() bool
	// Leader returns the leader's ID and the base URL of its API
	// (http://host:port); both are empty when no leader is known.
	Leader() (id, apiAddr string)
	// Propose commits a command through Raft and returns its result once it
	// is applied on this node. Only the leader may propose: elsewhere it
	// fails with cluster.ErrNotLeader. cluster.ErrNoQuorum is a definite
	// failure; cluster.ErrUnknownOutcome (and a ctx that ends) means the
	// command may or may not have been committed.
	Propose(ctx context.Context, c *fsm.Command) (*fsm.Result, error)
	// Status describes the node and the cluster as this node sees them. It
	// is polled by other nodes and must be cheap.
	Status() cluster.Status
	// AddMember adds a node to the cluster. Leader only.
	AddMember(ctx context.Context, r cluster.JoinRequest) (cluster.JoinResponse, error)
	// RemoveMember removes a node from the cluster. Leader only.
	RemoveMember(ctx context.Context, id string) error
}

// IndexWaiter is optionally implemented by a Backend whose View can be
// awaited. After relaying a write it forwarded, the API waits (briefly) for
// the local View to reach the write's index, so that a client reading from
// the node it wrote to sees its write.
type IndexWaiter interface {
	// WaitIndex blocks until the View returned by Current has applied index
	// at least index, or ctx ends.
	WaitIndex(ctx context.Context, index uint64) error
}

// LeaderWatcher is an optional Backend extension. While a write forwarded to
// the leader is in flight, a change of leader means the old one may never
// answer (it was cut off or stopped); the API then gives up at once with
// "outcome unknown" instead of waiting out the forward timeout.
type LeaderWatcher interface {
	// LeaderChanged returns a channel closed at the next change of leader.
	LeaderChanged() <-chan struct{}
}
