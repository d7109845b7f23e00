package check

import (
	"slices"

	"github.com/kudurru/kudurru/jepsen-style-tests/model"
)

// LeaderPerTerm checks that at most one node claims leadership of any Raft
// term, from the /v1/cluster polls. A claim is a poll in which the node
// reports state "leader" and names itself as leader; requiring both keeps a
// poll that raced with a step-down (state and term read at different
// moments) from counting.
func LeaderPerTerm(h model.History) Result {
	r := Result{ID: "leader", Name: "at most one leader per term"}
	claims := map[uint64]map[string]bool{}
	polls := 0
	for _, o := range h.Filter(model.KindStatus) {
		if o.Outcome != model.OK {
			continue
		}
		polls++
		if o.State != "leader" || o.Leader != o.Node {
			continue
		}
		if claims[o.Term] == nil {
			claims[o.Term] = map[string]bool{}
		}
		claims[o.Term][o.Node] = true
	}
	terms := make([]uint64, 0, len(claims))
	for t := range claims {
		terms = append(terms, t)
	}
	slices.Sort(terms)
	conflicts := 0
	for _, t := range terms {
		if len(claims[t]) > 1 {
			conflicts++
			var ns []string
			for n := range claims[t] {
				ns = append(ns, n)
			}
			slices.Sort(ns)
			r.detailf("term %d: leaders %v", t, ns)
		}
	}
	r.add("polls", polls)
	r.add("terms-with-leader", len(terms))
	r.add("conflicts", conflicts)
	switch {
	case conflicts > 0:
		r.Status = Fail
	case polls == 0:
		r.Status = Inconclusive
		r.Note = "no status polls answered"
	default:
		r.Status = Pass
	}
	return r
}
