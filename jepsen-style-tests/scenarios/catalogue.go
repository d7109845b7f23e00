// Package scenarios is the partition suite's catalogue of scenarios and
// the runner that plays one: build a cluster of real kudurru processes in
// network namespaces, start the workloads, let them run before any fault,
// inject the scenario's faults, heal everything, stop the writes, measure
// convergence, read every node's final state, and hand the history to the
// checkers.
package scenarios

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kudurru/kudurru/jepsen-style-tests/faults"
)

// Scenario is one named fault schedule on a cluster of Nodes.
type Scenario struct {
	Name  string
	About string // what it does, in one sentence an operator understands
	Nodes int
	Quick bool // part of jepsen-quick
	Fault faults.Fault
}

// All returns every scenario, in the order they run.
func All() []Scenario {
	return []Scenario{
		{Name: "partition-leader", Nodes: 3, Quick: true, Fault: faults.PartitionLeader,
			About: "The leader is cut off from the other two nodes for a while: they elect a new leader and keep taking writes, the old leader refuses writes and keeps answering DNS, then the network heals."},
		{Name: "partition-follower", Nodes: 3, Fault: faults.PartitionFollower,
			About: "One follower is cut off: the other two keep the cluster writable, the isolated one refuses writes but keeps answering DNS with what it had, and catches up after the heal."},
		{Name: "partition-halves", Nodes: 5, Fault: faults.PartitionHalves,
			About: "Five nodes split 2 | 3 with the leader on the small side: the three elect a new leader, the two (old leader included) refuse every write until the heal."},
		{Name: "partition-ring", Nodes: 5, Fault: faults.PartitionRing,
			About: "Five nodes in a ring where each sees only its two neighbours, so every node sees a majority but no two see the same one — a partial partition that confuses naive elections."},
		{Name: "partition-bridge", Nodes: 5, Fault: faults.PartitionBridge,
			About: "Five nodes split into two pairs that cannot see each other, joined by one node that sees everyone."},
		{Name: "kill-restart", Nodes: 3, Quick: true, Fault: faults.Sequence(faults.KillFollower, faults.KillLeader),
			About: "A follower and then the leader are killed with SIGKILL (a crash, no clean shutdown) and restarted on their data."},
		{Name: "pause-leader", Nodes: 3, Fault: faults.PauseLeader,
			About: "The leader process is frozen with SIGSTOP (like a long GC pause or a stuck VM) and later resumed, when it must find out it is no longer the leader."},
		{Name: "cold-start", Nodes: 3, Quick: true, Fault: faults.ColdStart,
			About: "Every node is killed; one is started alone, without quorum, and must answer DNS from its local copy of the data; then the others come back."},
		{Name: "membership-under-partition", Nodes: 3, Fault: faults.MembershipUnderPartition,
			About: "A follower is cut off, removed from the cluster by the majority, and a brand-new node joins while the partition stands; after the heal the removed node must not disturb the cluster."},
		{Name: "foreign-data", Nodes: 3, Fault: faults.ForeignData,
			About: "A node is given another cluster's local.db (a copied or misplaced data file), and a new node joins carrying one: neither may ever serve that other cluster's records."},
		{Name: "netem", Nodes: 3, Fault: faults.Netem,
			About: "Every link gets 40 ms ± 20 ms of delay and 2% packet loss (tc netem); skipped on kernels without sch_netem."},
	}
}

// Quick returns the jepsen-quick set: one partition, one kill-restart,
// one cold start.
func Quick() []Scenario {
	var out []Scenario
	for _, s := range All() {
		if s.Quick {
			out = append(out, s)
		}
	}
	return out
}

// Select returns the scenarios named in a comma-separated list, "quick"
// or "all"/"" for the sets. A name listed again runs again, as NAME-2,
// NAME-3…, each with its own artifacts: a race shows up in some runs only.
func Select(list string) ([]Scenario, error) {
	switch strings.TrimSpace(list) {
	case "", "all", "full":
		return All(), nil
	case "quick":
		return Quick(), nil
	}
	var out []Scenario
	seen := map[string]int{}
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		i := slices.IndexFunc(All(), func(s Scenario) bool { return s.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("no scenario %q; have %s", name, strings.Join(Names(), ", "))
		}
		s := All()[i]
		if seen[name]++; seen[name] > 1 {
			s.Name = fmt.Sprintf("%s-%d", name, seen[name])
		}
		out = append(out, s)
	}
	return out, nil
}

// Names lists every scenario name.
func Names() []string {
	var out []string
	for _, s := range All() {
		out = append(out, s.Name)
	}
	return out
}
