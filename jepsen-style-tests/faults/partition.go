package faults

import (
	"context"
	"fmt"

	"github.com/kudurru/kudurru/jepsen-style-tests/harness"
)

// PartitionFollower cuts one random follower off from every other node.
func PartitionFollower(ctx context.Context, e *Env) error {
	f, err := e.follower(ctx)
	if err != nil {
		return err
	}
	return e.partitionFor(ctx, "isolate follower "+f.ID, [][]*harness.Node{{f}, others(e.C.Nodes(), f)}, []*harness.Node{f})
}

// PartitionLeader cuts the leader off from every other node.
func PartitionLeader(ctx context.Context, e *Env) error {
	l, err := e.leader(ctx)
	if err != nil {
		return err
	}
	return e.partitionFor(ctx, "isolate leader "+l.ID, [][]*harness.Node{{l}, others(e.C.Nodes(), l)}, []*harness.Node{l})
}

// PartitionHalves splits the members into a minority that holds the
// leader and a majority.
func PartitionHalves(ctx context.Context, e *Env) error {
	l, err := e.leader(ctx)
	if err != nil {
		return err
	}
	rest := others(e.shuffled(), l)
	size := len(e.C.Members())/2 - 1 // minority: the leader and size others
	minority := append([]*harness.Node{l}, rest[:size]...)
	majority := rest[size:]
	desc := fmt.Sprintf("minority %v (with the leader) | majority %v", harness.IDs(minority), harness.IDs(majority))
	return e.partitionFor(ctx, desc, [][]*harness.Node{minority, majority}, minority)
}

// PartitionRing arranges the members in a ring in which every node sees
// only its two neighbours: each sees a majority (itself and two others of
// five) but no two see the same one.
func PartitionRing(ctx context.Context, e *Env) error {
	ms := e.shuffled()
	if len(ms) < 5 {
		return fmt.Errorf("a majorities ring needs 5 nodes, have %d", len(ms))
	}
	var groups [][]*harness.Node
	for i := range ms {
		groups = append(groups, []*harness.Node{ms[i], ms[(i+1)%len(ms)]})
	}
	return e.partitionFor(ctx, fmt.Sprintf("majorities ring %v", harness.IDs(ms)), groups, ms)
}

// PartitionBridge splits the members into two halves joined by one node
// that sees both.
func PartitionBridge(ctx context.Context, e *Env) error {
	ms := e.shuffled()
	if len(ms) < 5 {
		return fmt.Errorf("a bridge needs 5 nodes, have %d", len(ms))
	}
	h := len(ms) / 2
	a, b := ms[:h+1], ms[h:] // ms[h] is in both
	desc := fmt.Sprintf("%v | %v bridged by %s", harness.IDs(ms[:h]), harness.IDs(ms[h+1:]), ms[h].ID)
	return e.partitionFor(ctx, desc, [][]*harness.Node{a, b}, ms)
}

// Netem adds delay and loss on every member's link for Hold. It returns
// ErrUnsupported where the kernel has no sch_netem.
func Netem(ctx context.Context, e *Env) error {
	ms := e.C.Members()
	spec := []string{"delay", "40ms", "20ms", "loss", "2%"}
	for _, n := range ms {
		if err := e.C.Netem(ctx, n, spec...); err != nil {
			_ = e.C.ClearNetem(ctx)
			return fmt.Errorf("%w: tc netem: %v", ErrUnsupported, err)
		}
	}
	e.event("netem", "delay 40ms±20ms, loss 2% on every node", ms)
	if err := hold(ctx, e.Hold); err != nil {
		return err
	}
	if err := e.C.ClearNetem(ctx); err != nil {
		return err
	}
	e.event("heal", "netem removed", ms)
	e.settle(ctx)
	return nil
}
