package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
	"github.com/kudurru/kudurru/fsm"
	"github.com/kudurru/kudurru/fsm/zone"
)

// Propose replicates cmd and waits until it is committed and applied on
// this node. It runs only on the leader; a caller on another node forwards
// the write to the leader's API (Leader gives its address).
//
// The outcome is one of:
//   - a *fsm.Result with a nil error: committed. Result.Err, when set, is
//     the command's own definite outcome: it is in the log and changed
//     nothing (the zone did not exist, say);
//   - ErrNotLeader: another node leads (or leadership moved before Raft
//     took the entry); nothing was written;
//   - ErrNoQuorum: no leader was elected within LeaderWait; nothing was
//     written;
//   - ErrShutdown: the node is closing; nothing was written;
//   - ErrInvalid: the command cannot be encoded; nothing was written;
//   - ErrUnknownOutcome: Raft took the entry but lost leadership or timed
//     out before it committed: it may or may not be applied later. Never
//     report this as success.
func (n *Node) Propose(ctx context.Context, cmd *fsm.Command) (*fsm.Result, error) {
	start := time.Now()
	res, err := n.propose(ctx, cmd)
	n.m.observePropose(outcomeOf(res, err), time.Since(start))
	return res, err
}

func (n *Node) propose(ctx context.Context, cmd *fsm.Command) (*fsm.Result, error) {
	if cmd == nil {
		return nil, fmt.Errorf("%w: nil command", ErrInvalid)
	}
	data, err := cmd.Encode()
	if err != nil {
		return nil, fmt.Errorf("%w: encode %s command: %v", ErrInvalid, cmd.Op, err)
	}
	if err := n.awaitLeadership(ctx); err != nil {
		return nil, fmt.Errorf("%s: %w", cmd.Op, err)
	}
	f := n.raft.Apply(data, n.cfg.ApplyTimeout)
	if err := n.waitFuture(ctx, f); err != nil {
		if errors.Is(err, raft.ErrLeadershipTransferInProgress) {
			// Nothing was written. Give the transfer a chance to finish, so
			// that the caller's forward goes to the new leader.
			n.waitLeaderChange(ctx)
		}
		return nil, fmt.Errorf("%s: %w", cmd.Op, err)
	}
	res, ok := f.Response().(*fsm.Result)
	if !ok {
		return nil, fmt.Errorf("%s: %w: the state machine answered %T", cmd.Op, ErrUnknownOutcome, f.Response())
	}
	return res, nil
}

// awaitLeadership returns nil once this node leads, ErrNotLeader when
// another node does, and ErrNoQuorum when no leader is elected within
// LeaderWait.
func (n *Node) awaitLeadership(ctx context.Context) error {
	deadline := time.NewTimer(n.cfg.LeaderWait)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond) // safety net: observations can be dropped
	defer tick.Stop()
	for {
		ch := n.leaderChangedCh()
		switch n.raft.State() {
		case raft.Leader:
			return nil
		case raft.Shutdown:
			return ErrShutdown
		}
		if id, _ := n.Leader(); id != "" {
			return fmt.Errorf("%w: the leader is %s", ErrNotLeader, id)
		}
		select {
		case <-ch:
		case <-tick.C:
		case <-deadline.C:
			return fmt.Errorf("%w: no leader elected within %s", ErrNoQuorum, n.cfg.LeaderWait)
		case <-ctx.Done():
			return fmt.Errorf("%w: no leader yet: %v", ErrNoQuorum, ctx.Err())
		case <-n.ctx.Done():
			return ErrShutdown
		}
	}
}

// waitLeaderChange waits up to LeaderWait for the next leadership change.
func (n *Node) waitLeaderChange(ctx context.Context) {
	t := time.NewTimer(n.cfg.LeaderWait)
	defer t.Stop()
	select {
	case <-n.leaderChangedCh():
	case <-t.C:
	case <-ctx.Done():
	case <-n.ctx.Done():
	}
}

// waitFuture waits for a Raft future for at most ApplyTimeout and maps its
// error onto the package's sentinels. Raft bounds only the enqueue of an
// Apply by its timeout; the wait for the commit is bounded here.
func (n *Node) waitFuture(ctx context.Context, f raft.Future) error {
	done := make(chan error, 1)
	if !n.goWaiter(func() { done <- f.Error() }) {
		return fmt.Errorf("%w: the node is shutting down", ErrUnknownOutcome)
	}
	t := time.NewTimer(n.cfg.ApplyTimeout)
	defer t.Stop()
	select {
	case err := <-done:
		return mapRaftError(err)
	case <-t.C:
		return fmt.Errorf("%w: not committed within %s", ErrUnknownOutcome, n.cfg.ApplyTimeout)
	case <-ctx.Done():
		return fmt.Errorf("%w: stopped waiting for the commit: %v", ErrUnknownOutcome, ctx.Err())
	case <-n.ctx.Done():
		return fmt.Errorf("%w: the node is shutting down", ErrUnknownOutcome)
	}
}

// mapRaftError sorts Raft's errors into definite failures and unknown
// outcomes (NOTES: an entry Raft took may commit after its leader lost
// leadership).
func mapRaftError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader):
		return fmt.Errorf("%w: leadership moved before the entry was accepted; nothing was written", ErrNotLeader)
	case errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return fmt.Errorf("%w: leadership transfer in progress; nothing was written (%w)", ErrNotLeader, err)
	case errors.Is(err, raft.ErrRaftShutdown):
		return fmt.Errorf("%w: raft is shut down; nothing was written", ErrShutdown)
	case errors.Is(err, raft.ErrLeadershipLost):
		return fmt.Errorf("%w: leadership lost before the entry was committed", ErrUnknownOutcome)
	case errors.Is(err, raft.ErrEnqueueTimeout):
		// In raft v1.8 this comes before the entry is handed to the leader
		// loop, so it is in fact definite; it is reported as unknown, the
		// safe side, in case a later raft also returns it after enqueue.
		return fmt.Errorf("%w: the leader did not take the entry in time", ErrUnknownOutcome)
	default:
		return fmt.Errorf("%w: %v", ErrUnknownOutcome, err)
	}
}

// LeaderView returns a View that reflects every write committed before the
// call (a linearizable read, for ?consistency=leader). It runs only on the
// leader and costs one round trip to a quorum (a Raft barrier).
func (n *Node) LeaderView(ctx context.Context) (*zone.View, error) {
	if err := n.awaitLeadership(ctx); err != nil {
		return nil, err
	}
	if err := n.waitFuture(ctx, n.raft.Barrier(n.cfg.ApplyTimeout)); err != nil {
		if errors.Is(err, ErrUnknownOutcome) {
			return nil, fmt.Errorf("%w: leader read: %v", ErrNoQuorum, err)
		}
		return nil, fmt.Errorf("leader read: %w", err)
	}
	return n.fsm.Current(), nil
}
