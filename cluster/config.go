package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
)

// Config configures a Node. Build it from DefaultConfig and check it with
// Validate (New does so too).
type Config struct {
	// NodeID is this node's Raft server ID: stable across restarts, unique
	// in the cluster. Letters, digits, '.', '_' and '-', at most 64.
	NodeID string
	// DataDir holds raft.db (log and stable store), snapshots/ and local.db.
	DataDir string
	// RaftAddr is the address the Raft transport binds, host:port. A port of
	// 0 takes one from the kernel; Node.RaftAddr reads back the real one.
	RaftAddr string
	// RaftAdvertise is the address other nodes dial, when it differs from
	// RaftAddr (required when RaftAddr binds all interfaces).
	RaftAdvertise string
	// APIAddr is the base URL of this node's HTTP API, e.g.
	// http://10.0.0.1:8053. It is stored in the replicated state so other
	// nodes can forward writes to the leader and the leader can poll joiners.
	APIAddr string
	// Bootstrap creates a new cluster with this node as its only voter when
	// the data dir holds no Raft state. Ignored on restart.
	Bootstrap bool
	// Join lists API base URLs of existing members, tried in turn by
	// JoinCluster.
	Join []string
	// Token is the bearer token sent with join requests and status polls.
	Token string

	// ApplyTimeout bounds how long a write waits for its commit; past it the
	// outcome is unknown.
	ApplyTimeout time.Duration
	// LeaderWait bounds how long a write waits for a leader to be elected
	// before it fails with ErrNoQuorum.
	LeaderWait time.Duration
	// LocalDBDebounce is the minimum time between two refreshes of local.db.
	LocalDBDebounce time.Duration
	// PromoteInterval is how often the leader checks non-voters for
	// promotion (it also checks at once after a join).
	PromoteInterval time.Duration
	// PromoteMaxLag is how many log entries a non-voter may be behind the
	// leader's last index and still be promoted to voter.
	PromoteMaxLag uint64

	// Raft tuning; see hashicorp/raft Config. Validate requires
	// LeaderLeaseTimeout <= HeartbeatTimeout <= ElectionTimeout.
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	CommitTimeout      time.Duration
	SnapshotInterval   time.Duration
	SnapshotThreshold  uint64
	TrailingLogs       uint64
	MaxAppendEntries   int // entries per AppendEntries and per group commit

	Logger     *slog.Logger          // nil: discard
	Registry   prometheus.Registerer // nil: metrics are not registered; else a registry of this Node alone (the fsm's metrics panic on a second registration)
	HTTPClient *http.Client          // for join requests and status polls; nil: a client with a 5 s timeout
}

// DefaultConfig returns defaults for a LAN cluster. NodeID and DataDir have
// no default.
func DefaultConfig() Config {
	return Config{
		RaftAddr:           "127.0.0.1:8054",
		APIAddr:            "http://127.0.0.1:8053",
		ApplyTimeout:       5 * time.Second,
		LeaderWait:         3 * time.Second,
		LocalDBDebounce:    250 * time.Millisecond,
		PromoteInterval:    time.Second,
		PromoteMaxLag:      64,
		HeartbeatTimeout:   time.Second,
		ElectionTimeout:    time.Second,
		LeaderLeaseTimeout: 500 * time.Millisecond,
		CommitTimeout:      10 * time.Millisecond, // raft's 50 ms makes a follower see an idle-time write 50-100 ms late
		SnapshotInterval:   2 * time.Minute,
		SnapshotThreshold:  8192,
		TrailingLogs:       10240,
		MaxAppendEntries:   64,
	}
}

var nodeIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Validate checks every field and the relations between them. Errors name
// the field and its value.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !nodeIDPattern.MatchString(c.NodeID) {
		bad("NodeID %q: want 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", c.NodeID)
	}
	if c.DataDir == "" {
		bad("DataDir is empty")
	}
	if err := checkHostPort(c.RaftAddr); err != nil {
		bad("RaftAddr %q: %v", c.RaftAddr, err)
	}
	if c.RaftAdvertise != "" {
		if err := checkHostPort(c.RaftAdvertise); err != nil {
			bad("RaftAdvertise %q: %v", c.RaftAdvertise, err)
		} else if host, port, _ := net.SplitHostPort(c.RaftAdvertise); isUnspecified(host) || port == "0" {
			bad("RaftAdvertise %q: other nodes cannot dial an unspecified address or port 0", c.RaftAdvertise)
		}
	} else if host, _, err := net.SplitHostPort(c.RaftAddr); err == nil && isUnspecified(host) {
		bad("RaftAddr %q binds every interface: set RaftAdvertise to the address other nodes dial", c.RaftAddr)
	}
	if err := checkBaseURL(c.APIAddr); err != nil {
		bad("APIAddr %q: %v", c.APIAddr, err)
	}
	for i, j := range c.Join {
		if err := checkBaseURL(j); err != nil {
			bad("Join[%d] %q: %v", i, j, err)
		}
	}
	if c.Bootstrap && len(c.Join) > 0 {
		bad("Bootstrap is set together with Join %q: a node either creates a cluster or joins one", c.Join)
	}
	positive := []struct {
		name string
		d    time.Duration
		min  time.Duration
	}{
		{"ApplyTimeout", c.ApplyTimeout, time.Millisecond},
		{"LeaderWait", c.LeaderWait, time.Millisecond},
		{"LocalDBDebounce", c.LocalDBDebounce, time.Millisecond},
		{"PromoteInterval", c.PromoteInterval, time.Millisecond},
		{"HeartbeatTimeout", c.HeartbeatTimeout, 5 * time.Millisecond},
		{"ElectionTimeout", c.ElectionTimeout, 5 * time.Millisecond},
		{"LeaderLeaseTimeout", c.LeaderLeaseTimeout, 5 * time.Millisecond},
		{"CommitTimeout", c.CommitTimeout, time.Millisecond},
		{"SnapshotInterval", c.SnapshotInterval, 5 * time.Millisecond},
	}
	for _, p := range positive {
		if p.d < p.min {
			bad("%s %s: must be at least %s", p.name, p.d, p.min)
		}
	}
	if c.LeaderLeaseTimeout > c.HeartbeatTimeout {
		bad("LeaderLeaseTimeout %s is larger than HeartbeatTimeout %s", c.LeaderLeaseTimeout, c.HeartbeatTimeout)
	}
	if c.ElectionTimeout < c.HeartbeatTimeout {
		bad("ElectionTimeout %s is smaller than HeartbeatTimeout %s", c.ElectionTimeout, c.HeartbeatTimeout)
	}
	if c.SnapshotThreshold == 0 {
		bad("SnapshotThreshold 0: must be positive")
	}
	if c.MaxAppendEntries < 1 || c.MaxAppendEntries > 1024 {
		bad("MaxAppendEntries %d: must be between 1 and 1024", c.MaxAppendEntries)
	}
	if len(errs) > 0 {
		return fmt.Errorf("cluster config: %w", errors.Join(errs...))
	}
	return nil
}

// raftConfig returns the hashicorp/raft configuration for c.
func (c Config) raftConfig() *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(c.NodeID)
	rc.HeartbeatTimeout = c.HeartbeatTimeout
	rc.ElectionTimeout = c.ElectionTimeout
	rc.LeaderLeaseTimeout = c.LeaderLeaseTimeout
	rc.CommitTimeout = c.CommitTimeout
	rc.SnapshotInterval = c.SnapshotInterval
	rc.SnapshotThreshold = c.SnapshotThreshold
	rc.TrailingLogs = c.TrailingLogs
	rc.MaxAppendEntries = c.MaxAppendEntries
	// BatchApplyCh stays off: it makes Apply's enqueue timeout meaningless.
	// Group commit still happens: the leader loop drains every Apply that
	// is waiting into one batch, and the FSM applies it with ApplyBatch.
	rc.BatchApplyCh = false
	return rc
}

func checkHostPort(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return err
	}
	if host == "" {
		return errors.New("missing host")
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("bad port: %v", err)
	}
	return nil
}

func isUnspecified(host string) bool {
	ip := net.ParseIP(host)
	return host == "" || ip != nil && ip.IsUnspecified()
}

func checkBaseURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errors.New("want an http:// or https:// URL")
	}
	if u.Host == "" {
		return errors.New("missing host")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return errors.New("a base URL has no query or fragment")
	}
	return nil
}
