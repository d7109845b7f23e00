package harness

import (
	"context"
	"errors"
	"slices"
)

// Partition cuts the network so that two nodes can talk only if some
// group holds both. A node in several groups bridges them; a node in no
// group keeps all its links. Rules for TCP and UDP go into each node's own
// namespace, and only ever name peer node addresses.
func (c *Cluster) Partition(ctx context.Context, groups [][]*Node) error {
	gs := make([][]string, 0, len(groups))
	for _, g := range groups {
		gs = append(gs, IDs(g))
	}
	return c.apply(ctx, cutPairs(IDs(c.Nodes()), gs))
}

// cutPairs returns the ordered pairs of nodes that share no group, among
// nodes that are in some group.
func cutPairs(nodes []string, groups [][]string) map[[2]string]bool {
	in := map[string][]int{}
	for gi, g := range groups {
		for _, n := range g {
			in[n] = append(in[n], gi)
		}
	}
	blocked := map[[2]string]bool{}
	for _, a := range nodes {
		for _, b := range nodes {
			if a == b || len(in[a]) == 0 || len(in[b]) == 0 {
				continue
			}
			shared := false
			for _, g := range in[a] {
				shared = shared || slices.Contains(in[b], g)
			}
			if !shared {
				blocked[[2]string{a, b}] = true
			}
		}
	}
	return blocked
}

// Isolate cuts each of the given nodes off from every other node.
func (c *Cluster) Isolate(ctx context.Context, nodes ...*Node) error {
	blocked := map[[2]string]bool{}
	for _, a := range nodes {
		for _, b := range c.Nodes() {
			if a != b {
				blocked[[2]string{a.ID, b.ID}] = true
				blocked[[2]string{b.ID, a.ID}] = true
			}
		}
	}
	return c.apply(ctx, blocked)
}

// Heal removes every drop rule.
func (c *Cluster) Heal(ctx context.Context) error {
	return c.apply(ctx, map[[2]string]bool{})
}

// apply installs blocked, replacing what was there, one atomic
// iptables-restore per namespace.
func (c *Cluster) apply(ctx context.Context, blocked map[[2]string]bool) error {
	var errs []error
	for _, a := range c.Nodes() {
		var peers []string
		for _, b := range c.Nodes() {
			if blocked[[2]string{a.ID, b.ID}] {
				peers = append(peers, b.IP)
			}
		}
		if err := setBlocked(ctx, a.NS, peers); err != nil {
			errs = append(errs, err)
		}
	}
	c.mu.Lock()
	c.blocked = blocked
	c.mu.Unlock()
	return errors.Join(errs...)
}

// Minority returns the serving voters that cannot have a write committed:
// neither they nor any node they reach reaches a quorum of voters. Paused
// and stopped nodes count as unreachable.
func (c *Cluster) Minority() []string {
	members := c.Members()
	c.mu.Lock()
	blocked := c.blocked
	c.mu.Unlock()
	serving := map[string]bool{}
	for _, n := range c.Nodes() {
		serving[n.ID] = n.Serving()
	}
	return minorityOf(IDs(members), serving, blocked)
}

// minorityOf is Minority on plain data: a serving node is in the
// minority unless it reaches (itself or one hop away, as a forwarded
// write does) a serving voter that reaches a quorum of serving voters.
// Nodes outside members (a removed node still running) are judged too.
func minorityOf(members []string, serving map[string]bool, blocked map[[2]string]bool) []string {
	quorum := len(members)/2 + 1
	linked := func(a string) []string {
		var out []string
		for _, b := range members {
			if serving[b] && (a == b || !blocked[[2]string{a, b}]) {
				out = append(out, b)
			}
		}
		return out
	}
	var candidates []string
	for n, s := range serving {
		if s {
			candidates = append(candidates, n)
		}
	}
	slices.Sort(candidates)
	var out []string
	for _, a := range candidates {
		ok := false
		for _, b := range linked(a) {
			ok = ok || len(linked(b)) >= quorum
		}
		if !ok {
			out = append(out, a)
		}
	}
	return out
}

// Netem adds tc netem (spec, e.g. "delay", "50ms", "20ms", "loss", "2%")
// to n's interface, or removes it with an empty spec. It fails where the
// kernel lacks sch_netem.
func (c *Cluster) Netem(ctx context.Context, n *Node, spec ...string) error {
	if err := setNetem(ctx, n.NS, spec); err != nil {
		return err
	}
	c.mu.Lock()
	if len(spec) > 0 {
		c.netem[n.ID] = true
	} else {
		delete(c.netem, n.ID)
	}
	c.mu.Unlock()
	return nil
}

// ClearNetem removes every netem qdisc the harness added.
func (c *Cluster) ClearNetem(ctx context.Context) error {
	c.mu.Lock()
	var ids []string
	for id := range c.netem {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	var errs []error
	for _, id := range ids {
		if n := c.Node(id); n != nil {
			errs = append(errs, c.Netem(ctx, n))
		}
	}
	return errors.Join(errs...)
}
