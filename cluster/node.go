package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/kudurru/kudurru/fsm"
	"github.com/kudurru/kudurru/fsm/zone"
	"go.etcd.io/bbolt"
)

// Node is one member of a kudurru cluster: a Raft server over TCP with its
// bolt log store, file snapshots and the replicated FSM, plus the node-local
// copy of the served View (local.db). Its methods are safe for concurrent
// use. No Raft type appears in its API.
type Node struct {
	cfg      Config
	log      *slog.Logger
	fsm      *fsm.FSM
	raft     *raft.Raft
	trans    *raft.NetworkTransport
	store    *raftboltdb.BoltStore
	local    *localDB
	mark     *servedMark // index of the newest View served, for crash restarts
	m        *metrics
	http     *http.Client
	ownHTTP  bool   // http was made here: close its idle connections on Close
	raftAddr string // the advertised Raft address, read back from the transport
	hadState bool   // the data dir held Raft state at New

	// cid is the cluster ID learned outside the FSM: from the log at start,
	// or from a join response. The FSM's Raft View wins once it has one.
	cid atomic.Pointer[string]

	obs   *raft.Observer
	obsCh chan raft.Observation

	// establishedTerm is the last term in which this node, as leader,
	// completed establishLeadership: its FSM has applied every entry of
	// earlier terms (a barrier), so its View holds every write
	// acknowledged before it was elected.
	establishedTerm atomic.Uint64

	mu            sync.Mutex    // guards leaderChanged and pending
	leaderChanged chan struct{} // closed and replaced when leader or state changes
	pending       *zone.View    // local.db View waiting for the node to learn its cluster ID

	wakeDuties   chan struct{} // capacity 1: leader duties have something to check
	wakePromoter chan struct{} // capacity 1: a join happened, or the leader changed

	ctx    context.Context // cancelled when Close begins
	cancel context.CancelFunc

	closeMu   sync.RWMutex // guards closed against starting waiters during Close
	closed    bool
	loops     sync.WaitGroup // long-lived loops; stopped before Raft shuts down
	waiters   sync.WaitGroup // goroutines blocked on Raft futures; end when Raft answers
	closeOnce sync.Once
	closeErr  error
}

// New opens the node's data dir and starts Raft. A node with no Raft state
// and Bootstrap set creates a cluster with itself as the only voter; one
// with Join set waits for JoinCluster; a node with state rejoins its
// cluster by itself. See DESIGN.md for what New serves before Raft has a
// quorum.
func New(cfg Config) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	log := cfg.Logger.With("component", "cluster", "node_id", cfg.NodeID)
	hl := newHclog(cfg.Logger.With("component", "raft", "node_id", cfg.NodeID), "")

	var undo []func()
	fail := func(err error) (*Node, error) {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
		return nil, err
	}

	store, err := raftboltdb.New(raftboltdb.Options{
		Path:        filepath.Join(cfg.DataDir, "raft.db"),
		BoltOptions: &bbolt.Options{Timeout: time.Second},
	})
	if err != nil {
		return fail(fmt.Errorf("open raft.db in %s: %w", cfg.DataDir, err))
	}
	undo = append(undo, func() { _ = store.Close() })
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.DataDir, 2, hl)
	if err != nil {
		return fail(fmt.Errorf("open snapshot store: %w", err))
	}
	var adv net.Addr
	if cfg.RaftAdvertise != "" {
		if adv, err = net.ResolveTCPAddr("tcp", cfg.RaftAdvertise); err != nil {
			return fail(fmt.Errorf("resolve RaftAdvertise %q: %w", cfg.RaftAdvertise, err))
		}
	}
	trans, err := raft.NewTCPTransportWithLogger(cfg.RaftAddr, adv, 3, 10*time.Second, hl)
	if err != nil {
		return fail(fmt.Errorf("raft transport on %s: %w", cfg.RaftAddr, err))
	}
	undo = append(undo, func() { _ = trans.Close() })
	hasState, err := raft.HasExistingState(store, store, snaps)
	if err != nil {
		return fail(fmt.Errorf("read raft state: %w", err))
	}
	local, loaded, err := openLocalDB(filepath.Join(cfg.DataDir, "local.db"), log)
	if err != nil {
		return fail(err)
	}
	undo = append(undo, func() { _ = local.close() })

	mark, err := openServedMark(filepath.Join(cfg.DataDir, servedMarkFile))
	if err != nil {
		return fail(err)
	}
	undo = append(undo, func() { _ = mark.close() })
	markCID, markIndex, err := mark.read()
	if err != nil {
		log.Warn("ignoring the served mark", "err", err)
	}

	f := fsm.New(fsm.Config{Logger: cfg.Logger.With("node_id", cfg.NodeID), Registry: cfg.Registry, BeforePublish: mark.write})
	rc := cfg.raftConfig()
	rc.Logger = hl
	switch {
	case !hasState && cfg.Bootstrap:
		conf := raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: rc.LocalID, Address: trans.LocalAddr()}}}
		if err := raft.BootstrapCluster(rc, store, store, snaps, trans, conf); err != nil {
			return fail(fmt.Errorf("bootstrap: %w", err))
		}
		log.Info("bootstrapped a new cluster with this node as its only voter")
	case hasState && cfg.Bootstrap:
		log.Info("data dir already holds Raft state; Bootstrap ignored")
	case !hasState && len(cfg.Join) == 0:
		log.Warn("no Raft state and neither Bootstrap nor Join: this node serves nothing until another adds it to a cluster")
	}
	r, err := raft.NewRaft(rc, f, store, store, snaps, trans)
	if err != nil {
		return fail(fmt.Errorf("start raft: %w", err))
	}
	undo = append(undo, func() { _ = r.Shutdown().Error() })

	n := &Node{
		cfg: cfg, log: log, fsm: f, raft: r, trans: trans, store: store, local: local, mark: mark,
		raftAddr:      string(trans.LocalAddr()),
		hadState:      hasState,
		obsCh:         make(chan raft.Observation, 256),
		leaderChanged: make(chan struct{}),
		wakeDuties:    make(chan struct{}, 1),
		wakePromoter:  make(chan struct{}, 1),
		http:          cfg.HTTPClient,
	}
	if n.http == nil {
		n.http = &http.Client{Timeout: 5 * time.Second, Transport: http.DefaultTransport.(*http.Transport).Clone()}
		n.ownHTTP = true
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.m = newMetrics(r)
	if err := n.m.register(cfg.Registry); err != nil {
		n.cancel()
		return fail(fmt.Errorf("register metrics: %w", err))
	}

	cid := f.RaftView().ClusterID
	if cid == "" {
		cid = scanClusterID(store, log)
	}
	n.cid.Store(&cid)
	n.coldStart(loaded, hasState)
	n.replayServed(markCID, markIndex)

	n.obs = raft.NewObserver(n.obsCh, false, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.LeaderObservation, raft.RaftState:
			return true
		}
		return false
	})
	r.RegisterObserver(n.obs)
	n.startLoop(n.runObserver)
	n.startLoop(n.runLeaderDuties)
	n.startLoop(n.runPromoter)
	n.startLoop(n.runLocalWriter)
	wake(n.wakeDuties)

	log.Info("node started", "raft_addr", n.raftAddr, "api_addr", cfg.APIAddr, "data_dir", cfg.DataDir,
		"cluster_id", n.ClusterID(), "has_state", hasState, "serving_index", f.Current().Index)
	return n, nil
}

func (n *Node) startLoop(fn func()) {
	n.loops.Add(1)
	go func() {
		defer n.loops.Done()
		fn()
	}()
}

// goWaiter runs fn on a tracked goroutine unless the node is closing.
func (n *Node) goWaiter(fn func()) bool {
	n.closeMu.RLock()
	defer n.closeMu.RUnlock()
	if n.closed {
		return false
	}
	n.waiters.Add(1)
	go func() {
		defer n.waiters.Done()
		fn()
	}()
	return true
}

func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Close stops the node: it stops its loops, hands leadership to another
// voter when it leads (bounded by Raft's election timeout), shuts Raft down,
// writes local.db a last time and closes the stores. It is idempotent; a
// second call returns the first call's result.
func (n *Node) Close() error { return n.shutdown(true) }

// shutdown is Close; without transfer it stops as abruptly as it can (a
// crash, for tests), though the stores are still closed cleanly.
func (n *Node) shutdown(transfer bool) error {
	n.closeOnce.Do(func() {
		start := time.Now()
		n.closeMu.Lock()
		n.closed = true
		n.closeMu.Unlock()
		n.cancel()
		n.loops.Wait()
		n.raft.DeregisterObserver(n.obs)
		var errs []error
		if transfer && n.raft.State() == raft.Leader && n.otherVoters() > 0 {
			if err := n.raft.LeadershipTransfer().Error(); err != nil {
				n.log.Warn("leadership transfer before shutdown failed", "err", err)
			}
		}
		if err := n.raft.Shutdown().Error(); err != nil {
			errs = append(errs, fmt.Errorf("raft shutdown: %w", err))
		}
		n.trans.CloseStreams()
		n.waiters.Wait()
		if transfer { // a crash (tests) loses what the debounce had not written yet
			if _, err := n.flushLocal(); err != nil {
				errs = append(errs, fmt.Errorf("final local.db refresh: %w", err))
			}
		}
		if err := n.store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close raft.db: %w", err))
		}
		if err := n.local.close(); err != nil {
			errs = append(errs, fmt.Errorf("close local.db: %w", err))
		}
		if err := n.mark.close(); err != nil {
			errs = append(errs, fmt.Errorf("close served mark: %w", err))
		}
		if n.ownHTTP {
			n.http.CloseIdleConnections()
		}
		n.closeErr = errors.Join(errs...)
		n.log.Info("node stopped", "seconds", time.Since(start).Seconds(), "serving_index", n.fsm.Current().Index)
	})
	return n.closeErr
}

func (n *Node) otherVoters() int {
	c := 0
	for _, s := range n.configuration() {
		if s.Suffrage == raft.Voter && s.ID != raft.ServerID(n.cfg.NodeID) {
			c++
		}
	}
	return c
}

// configuration returns the latest Raft configuration (possibly not yet
// committed), or nil once Raft has shut down.
func (n *Node) configuration() []raft.Server {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return nil
	}
	return f.Configuration().Servers
}

// HadState reports whether the data dir held Raft state when New ran. Such
// a node is a member already and rejoins its cluster by itself; with Join
// configured, the caller may still run JoinCluster — in the background,
// since it waits for a leader — to check that the addresses given belong to
// the same cluster (ErrOtherCluster otherwise). A node without state must
// join before it serves anything.
func (n *Node) HadState() bool { return n.hadState }

// NodeID returns this node's Raft server ID.
func (n *Node) NodeID() string { return n.cfg.NodeID }

// RaftAddr returns the Raft address other nodes dial.
func (n *Node) RaftAddr() string { return n.raftAddr }

// APIAddr returns the base URL of this node's HTTP API.
func (n *Node) APIAddr() string { return n.cfg.APIAddr }

// FSM returns the replicated state machine.
func (n *Node) FSM() *fsm.FSM { return n.fsm }

// Current returns the View this node serves. It never blocks.
func (n *Node) Current() *zone.View { return n.fsm.Current() }

// WaitIndex blocks until the served View has applied index idx or ctx
// ends (the httpapi IndexWaiter).
func (n *Node) WaitIndex(ctx context.Context, idx uint64) error { return n.fsm.WaitIndex(ctx, idx) }

// ClusterID returns the ID of the cluster this node belongs to, or "" when
// it does not know yet (a node that has not joined).
func (n *Node) ClusterID() string {
	if id := n.fsm.RaftView().ClusterID; id != "" {
		return id
	}
	return *n.cid.Load()
}

// IsLeader reports whether this node is the Raft leader.
func (n *Node) IsLeader() bool { return n.raft.State() == raft.Leader }

// Leader returns the ID of the leader and the base URL of its API, or empty
// strings when there is no known leader. The API address is empty when the
// leader's OpPutMember has not been applied here yet.
func (n *Node) Leader() (id, apiAddr string) {
	_, lid := n.raft.LeaderWithID()
	if lid == "" {
		return "", ""
	}
	if lid == raft.ServerID(n.cfg.NodeID) {
		return n.cfg.NodeID, n.cfg.APIAddr
	}
	m, _ := n.fsm.Current().Member(string(lid))
	return string(lid), m.APIAddr
}

// leaderChangedCh returns a channel closed at the next leadership or state
// change.
func (n *Node) leaderChangedCh() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.leaderChanged
}

// LeaderChanged returns a channel closed at the next change of leader or of
// this node's Raft state, and when this node, as leader, is established in
// its term (Status.LeaderEstablished). Callers re-read Leader and call it
// again.
func (n *Node) LeaderChanged() <-chan struct{} { return n.leaderChangedCh() }

// WaitLeader blocks until a leader is known and returns its ID.
func (n *Node) WaitLeader(ctx context.Context) (string, error) {
	tick := time.NewTicker(100 * time.Millisecond) // safety net: observations can be dropped
	defer tick.Stop()
	for {
		ch := n.leaderChangedCh()
		if id, _ := n.Leader(); id != "" {
			return id, nil
		}
		select {
		case <-ch:
		case <-tick.C:
		case <-ctx.Done():
			return "", fmt.Errorf("wait for a leader: %w", ctx.Err())
		case <-n.ctx.Done():
			return "", ErrShutdown
		}
	}
}

// Snapshot asks Raft to take a snapshot now and waits for it.
func (n *Node) Snapshot() error {
	if err := n.raft.Snapshot().Error(); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	return nil
}

// PutBlob stores node-local bytes under name in local.db (for example the
// DNS cache dump). Blobs are not replicated.
func (n *Node) PutBlob(name string, data []byte) error { return n.local.putBlob(name, data) }

// GetBlob returns the bytes stored under name, or nil when there are none.
func (n *Node) GetBlob(name string) ([]byte, error) { return n.local.getBlob(name) }
