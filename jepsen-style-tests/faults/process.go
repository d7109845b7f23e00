package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/kudurru/kudurru/jepsen-style-tests/harness"
	"github.com/kudurru/kudurru/jepsen-style-tests/model"
)

// killRestart SIGKILLs n, keeps it down for Hold/2, and restarts it on its
// data dir.
func (e *Env) killRestart(ctx context.Context, n *harness.Node, role string) error {
	if err := n.Kill(); err != nil {
		return err
	}
	e.event(model.NemKill, "SIGKILL "+role+" "+n.ID, []*harness.Node{n})
	if err := hold(ctx, e.Hold/2); err != nil {
		return err
	}
	if err := e.C.Start(n, false, nil); err != nil {
		return err
	}
	e.event(model.NemStart, "restart "+n.ID, []*harness.Node{n})
	e.settle(ctx)
	return nil
}

// KillFollower SIGKILLs a random follower and restarts it.
func KillFollower(ctx context.Context, e *Env) error {
	f, err := e.follower(ctx)
	if err != nil {
		return err
	}
	return e.killRestart(ctx, f, "follower")
}

// KillLeader SIGKILLs the leader and restarts it.
func KillLeader(ctx context.Context, e *Env) error {
	l, err := e.leader(ctx)
	if err != nil {
		return err
	}
	return e.killRestart(ctx, l, "leader")
}

// PauseLeader freezes the leader with SIGSTOP for Hold, then SIGCONT.
func PauseLeader(ctx context.Context, e *Env) error {
	l, err := e.leader(ctx)
	if err != nil {
		return err
	}
	if err := l.Pause(); err != nil {
		return err
	}
	e.event(model.NemPause, "SIGSTOP leader "+l.ID, []*harness.Node{l})
	if err := hold(ctx, e.Hold); err != nil {
		return err
	}
	if err := l.Resume(); err != nil {
		return err
	}
	e.event(model.NemResume, "SIGCONT "+l.ID, []*harness.Node{l})
	e.settle(ctx)
	return nil
}

// ColdStart SIGKILLs every member, restarts a minority of them (one of
// three, two of five) alone for Hold — they have no quorum and must answer
// DNS from their local copy — then restarts the rest.
func ColdStart(ctx context.Context, e *Env) error {
	ms := e.shuffled()
	for _, n := range ms {
		if err := n.Kill(); err != nil {
			return err
		}
	}
	e.event(model.NemKill, "SIGKILL every node", ms)
	if err := hold(ctx, time.Second); err != nil {
		return err
	}
	minority, rest := ms[:(len(ms)-1)/2], ms[(len(ms)-1)/2:]
	for _, n := range minority {
		if err := e.C.Start(n, false, nil); err != nil {
			return err
		}
	}
	e.event(model.NemStart, fmt.Sprintf("cold start of a minority %v without quorum", harness.IDs(minority)), minority)
	if err := hold(ctx, e.Hold); err != nil {
		return err
	}
	for _, n := range rest {
		if err := e.C.Start(n, false, nil); err != nil {
			return err
		}
	}
	e.event(model.NemStart, fmt.Sprintf("start the rest %v: quorum is back", harness.IDs(rest)), rest)
	e.settle(ctx)
	return nil
}

// MembershipUnderPartition isolates a follower, removes it from the Raft
// configuration through the majority, joins a brand-new node while the
// partition stands, heals, and then stops the removed node.
func MembershipUnderPartition(ctx context.Context, e *Env) error {
	l, err := e.leader(ctx)
	if err != nil {
		return err
	}
	victim, err := e.follower(ctx)
	if err != nil {
		return err
	}
	if err := e.C.Isolate(ctx, victim); err != nil {
		return err
	}
	e.event(model.NemPartition, "isolate follower "+victim.ID, []*harness.Node{victim})
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	err = e.C.API().RemoveMember(rctx, l.APIURL(), victim.ID)
	cancel()
	if err != nil {
		return fmt.Errorf("remove %s through %s: %w", victim.ID, l.ID, err)
	}
	e.C.SetMember(victim.ID, false)
	e.event(model.NemRemove, "remove "+victim.ID+" from the configuration while it is cut off", []*harness.Node{victim})
	fresh, err := e.C.AddNode(ctx, false)
	if err != nil {
		return err
	}
	if err := e.C.Join(ctx, fresh, others(e.C.Members(), victim)); err != nil {
		return err
	}
	e.event(model.NemJoin, "join new node "+fresh.ID+" under the partition", []*harness.Node{fresh})
	if err := hold(ctx, e.Hold/2); err != nil {
		return err
	}
	if err := e.C.Heal(ctx); err != nil {
		return err
	}
	e.event(model.NemHeal, "remove every drop rule; "+victim.ID+" is no longer a member", []*harness.Node{victim})
	if err := hold(ctx, e.Hold/2); err != nil { // the removed node sees the others again
		return err
	}
	e.C.Retire(victim.ID)
	if err := victim.Terminate(10 * time.Second); err != nil {
		return err
	}
	e.event(model.NemStop, "stop removed node "+victim.ID, []*harness.Node{victim})
	e.settle(ctx)
	return nil
}
