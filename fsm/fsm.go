package fsm

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/kudurru/kudurru/fsm/zone"
	"github.com/prometheus/client_golang/prometheus"
)

// Config configures an FSM.
type Config struct {
	Logger   *slog.Logger          // required
	Registry prometheus.Registerer // optional: metrics are registered here

	// BeforePublish, when set, is called with every View just before it
	// becomes visible to readers, under the FSM's publication lock. The
	// cluster package records the served index there, so that a node
	// restarted after a crash never serves older data than it did (I2).
	// It must be quick and must not call back into the FSM.
	BeforePublish func(*zone.View)
}

// FSM is the replicated state machine. See the package comment for which
// goroutine calls what.
type FSM struct {
	log *slog.Logger
	m   *metrics

	// state is Raft's own View: what Apply and Restore build on and what
	// Snapshot captures. Written only on the FSM goroutine.
	state atomic.Pointer[zone.View]

	// published is what readers see: state, or a newer node-local copy given
	// to Seed at cold start until state catches up with it.
	published atomic.Pointer[zone.View]

	beforePublish func(*zone.View)

	mu      sync.Mutex    // guards changed and serialises the check-then-publish of Seed and setState
	changed chan struct{} // closed and replaced at every publication
}

// New returns an FSM with an empty state.
func New(cfg Config) *FSM {
	f := &FSM{log: cfg.Logger, changed: make(chan struct{}), beforePublish: cfg.BeforePublish}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	f.log = f.log.With("component", "fsm")
	f.m = newMetrics(cfg.Registry)
	f.state.Store(zone.Empty)
	f.published.Store(zone.Empty)
	return f
}

// Current returns the View that queries are answered from. It never blocks.
func (f *FSM) Current() *zone.View { return f.published.Load() }

// RaftView returns the View built from the Raft log alone. It lags Current
// after a cold start until Raft has applied as far as the node-local copy.
func (f *FSM) RaftView() *zone.View { return f.state.Load() }

// Changed returns a channel that is closed the next time a View is
// published.
func (f *FSM) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

// WaitIndex blocks until the published View has applied index idx or ctx
// ends.
func (f *FSM) WaitIndex(ctx context.Context, idx uint64) error {
	for {
		ch := f.Changed()
		if f.Current().Index >= idx {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("wait for index %d (at %d): %w", idx, f.Current().Index, ctx.Err())
		}
	}
}

// Seed publishes a View loaded from node-local storage at cold start, when it
// is newer than what is published. The caller has checked that it belongs to
// this node's cluster. Raft's own state replaces it once its index is at
// least as high, so what is served never goes back.
func (f *FSM) Seed(v *zone.View) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if v == nil || v.Index <= f.published.Load().Index {
		return false
	}
	f.publishLocked(v)
	return true
}

// publishLocked makes v the current View and wakes waiters. f.mu is held.
func (f *FSM) publishLocked(v *zone.View) {
	if f.beforePublish != nil {
		f.beforePublish(v)
	}
	f.published.Store(v)
	f.m.observe(v)
	close(f.changed)
	f.changed = make(chan struct{})
}

// setState stores Raft's new state and publishes it unless a newer seeded
// View of the same cluster is being served. Raft's state of another cluster
// always wins (I6); an empty one (before the bootstrap entry) never replaces
// a seeded View.
func (f *FSM) setState(v *zone.View) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.state.Store(v)
	cur := f.published.Load()
	if v.Index >= cur.Index || (v.ClusterID != "" && v.ClusterID != cur.ClusterID) {
		f.publishLocked(v)
	}
}

// Apply applies one committed entry. Raft calls it on the FSM goroutine.
func (f *FSM) Apply(l *raft.Log) any {
	return f.ApplyBatch([]*raft.Log{l})[0]
}

// ApplyBatch applies committed entries in order and publishes one new View
// for the whole batch. It returns a *Result for each command entry and nil
// for configuration entries.
func (f *FSM) ApplyBatch(logs []*raft.Log) []any {
	start := time.Now()
	out := make([]any, len(logs))
	v := applyLogs(f.state.Load(), logs, func(i int, l *raft.Log, op string, res *Result) {
		out[i] = res
		if op == "undecodable" {
			f.log.Error("undecodable log entry skipped", "index", l.Index, "err", res.Err)
		}
		f.m.applied(op, res.Err)
	})
	f.setState(v)
	f.m.applyDuration.Observe(time.Since(start).Seconds())
	return out
}

// applyLogs applies entries in order to base and returns the new View,
// calling done for each command entry with its operation and result.
func applyLogs(base *zone.View, logs []*raft.Log, done func(i int, l *raft.Log, op string, res *Result)) *zone.View {
	b := base.Edit()
	for i, l := range logs {
		b.SetIndex(l.Index)
		if l.Type != raft.LogCommand {
			continue
		}
		res := &Result{Index: l.Index}
		c, err := DecodeCommand(l.Data)
		if err != nil {
			res.Err = err
			done(i, l, "undecodable", res)
			continue
		}
		// applyCommand writes to b only when it succeeds.
		res.Serial, res.Err = applyCommand(b, c)
		done(i, l, string(c.Op), res)
	}
	return b.View()
}

// Replay applies committed entries to base outside Raft and returns the
// View they lead to, exactly as Apply would build it. A node restarted
// after a crash uses it to rebuild, from its own log, the View it served
// before the crash (see the cluster package's served-index mark). The
// caller guarantees that the entries were committed.
func Replay(base *zone.View, logs []*raft.Log) *zone.View {
	return applyLogs(base, logs, func(int, *raft.Log, string, *Result) {})
}

// Snapshot captures the current Raft state. It returns at once: the
// encoding happens in Persist, concurrently with later Applies.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	return &snapshot{v: f.state.Load()}, nil
}

// Restore replaces the Raft state with a snapshot. A damaged snapshot, or
// one of a newer format, is refused and the state stays as it was.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	v, err := zone.ReadView(rc)
	if err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	}
	f.setState(v)
	f.log.Info("restored snapshot", "index", v.Index, "zones", v.Len(), "cluster_id", v.ClusterID)
	return nil
}

type snapshot struct{ v *zone.View }

// Persist writes the snapshot to the sink.
func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	if err := zone.WriteView(sink, s.v); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("persist snapshot: %w", err)
	}
	return sink.Close()
}

// Release is a no-op: the View is garbage collected.
func (s *snapshot) Release() {}
