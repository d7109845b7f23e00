// Package faults holds the nemeses of the partition suite: network
// partitions (one node, the leader alone, majority/minority halves, a
// majorities ring, a bridge), SIGKILL and restart, SIGSTOP/SIGCONT, a cold
// start of a minority after killing every node, a membership change under
// a partition, another cluster's data given to a node, and tc netem delay
// and loss. Each fault records its events in the history — with the set of
// nodes that are cut off from any majority after the event — heals what
// it did, and waits (bounded) for the cluster to recover before returning.
package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/kudurru/kudurru/jepsen-style-tests/harness"
	"github.com/kudurru/kudurru/jepsen-style-tests/model"
)

// ErrUnsupported means the machine cannot inject this fault (for example
// a kernel without sch_netem); the scenario is skipped, not failed.
var ErrUnsupported = errors.New("fault not supported on this machine")

// Fault injects one fault, or a sequence, and heals it before returning.
type Fault func(ctx context.Context, e *Env) error

// Env is what a fault works on.
type Env struct {
	C    *harness.Cluster
	Rec  *model.Recorder
	Logf func(format string, args ...any)
	Rand *rand.Rand
	// Hold is how long a fault stands before it is healed.
	Hold time.Duration
	// Settle bounds the wait for a leader and ready nodes after a heal.
	Settle time.Duration
}

// event records a nemesis event with the current minority.
func (e *Env) event(action, desc string, nodes []*harness.Node) {
	op := e.Rec.Nemesis(action, desc, harness.IDs(nodes), e.C.Minority())
	e.Logf("nemesis %s %s nodes=%v minority=%v", action, desc, op.Nodes, op.Minority)
}

// hold waits d or until ctx ends.
func hold(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// settle waits, bounded, for a leader and every serving member to be
// ready. A cluster that does not recover is logged, not fatal: the final
// checks judge it.
func (e *Env) settle(ctx context.Context) {
	if _, err := e.C.Leader(ctx, e.Settle); err != nil {
		e.Logf("settle: %v", err)
		return
	}
	var serving []*harness.Node
	for _, n := range e.C.Members() {
		if n.Serving() {
			serving = append(serving, n)
		}
	}
	if err := e.C.WaitReady(ctx, serving, e.Settle); err != nil {
		e.Logf("settle: %v", err)
	}
}

// leader returns the current leader.
func (e *Env) leader(ctx context.Context) (*harness.Node, error) {
	return e.C.Leader(ctx, e.Settle)
}

// follower returns a random serving member that is not the leader.
func (e *Env) follower(ctx context.Context) (*harness.Node, error) {
	l, err := e.leader(ctx)
	if err != nil {
		return nil, err
	}
	var fs []*harness.Node
	for _, n := range e.C.Members() {
		if n != l && n.Serving() {
			fs = append(fs, n)
		}
	}
	if len(fs) == 0 {
		return nil, errors.New("no follower")
	}
	return fs[e.Rand.IntN(len(fs))], nil
}

// shuffled returns the members in random order.
func (e *Env) shuffled() []*harness.Node {
	ms := e.C.Members()
	e.Rand.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
	return ms
}

// Sequence runs faults one after the other.
func Sequence(fs ...Fault) Fault {
	return func(ctx context.Context, e *Env) error {
		for _, f := range fs {
			if err := f(ctx, e); err != nil {
				return err
			}
		}
		return nil
	}
}

// partitionFor isolates the chosen groups for Hold, then heals.
func (e *Env) partitionFor(ctx context.Context, desc string, groups [][]*harness.Node, affected []*harness.Node) error {
	if err := e.C.Partition(ctx, groups); err != nil {
		return fmt.Errorf("partition %s: %w", desc, err)
	}
	e.event(model.NemPartition, desc, affected)
	if err := hold(ctx, e.Hold); err != nil {
		return err
	}
	if err := e.C.Heal(ctx); err != nil {
		return fmt.Errorf("heal: %w", err)
	}
	e.event(model.NemHeal, "remove every drop rule", affected)
	e.settle(ctx)
	return nil
}

func others(all []*harness.Node, not ...*harness.Node) []*harness.Node {
	var out []*harness.Node
	for _, n := range all {
		skip := false
		for _, x := range not {
			skip = skip || n == x
		}
		if !skip {
			out = append(out, n)
		}
	}
	return out
}
