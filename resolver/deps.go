package resolver

import (
	"log/slog"

	"github.com/kudurru/kudurru/fsm/zone"
	"github.com/prometheus/client_golang/prometheus"
)

// Zones gives the server the zones to answer from.
type Zones interface {
	// Current returns the newest published View. The server calls it once
	// per query, on the query's goroutine and concurrently from many
	// goroutines: it must be fast, take no lock that a writer holds, and
	// return a View that is never modified afterwards. A nil View serves no
	// zone.
	Current() *zone.View
}

// Status tells the health name about this node.
type Status interface {
	// NodeStatus returns the node's identity and replication state. The
	// server calls it for each query of the health name, concurrently from
	// many goroutines; it must be fast and must not block.
	NodeStatus() NodeStatus
}

// NodeStatus is what the health name reports about a node.
type NodeStatus struct {
	NodeID       string // the node's Raft server ID
	RaftState    string // "leader", "follower", "candidate", "shutdown", …
	AppliedIndex uint64 // the last Raft index applied to the FSM
}

// Deps are the runtime collaborators of a Server.
type Deps struct {
	// Zones is required.
	Zones Zones
	// Status answers the health name; without it the name reports the
	// configured server ID and the View's index only.
	Status Status
	// Logger receives the server's logs (component=dns); nil discards them.
	Logger *slog.Logger
	// Registry receives the server's metrics; nil keeps them private. Give
	// each Server its own registry: registering twice fails.
	Registry prometheus.Registerer
	// Blobs keeps the forwarding cache across restarts (cachepersist.go);
	// nil turns cache persistence off.
	Blobs BlobStore
}
