package check

import (
	"fmt"
	"slices"
	"time"

	"github.com/kudurru/kudurru/jepsen-style-tests/model"
)

// Convergence is I3: after the final heal, every member must serve the
// same zone (same serial, same content digest) within the bound; and at
// any time two reads at the same applied index must have the same digest.
// The probes are KindDigest ops taken in rounds; KindFinal ops count for
// the index check.
func Convergence(h model.History, cfg Config) Result {
	r := Result{ID: "I3", Name: fmt.Sprintf("converge within %s of the final heal", cfg.ConvergenceBound)}
	conflicts := indexConflicts(h, &r)
	heal, ok := h.FinalHeal()
	probes := h.Filter(model.KindDigest)
	r.add("probes", len(probes))
	r.add("index-conflicts", conflicts)
	if !ok || len(probes) == 0 || len(heal.Nodes) == 0 {
		r.Status = Inconclusive
		r.Note = "no final heal or no probes"
		if conflicts > 0 {
			r.Status = Fail
		}
		return r
	}
	at, rounds := convergedAt(h, heal)
	r.add("rounds", rounds)
	switch {
	case conflicts > 0:
		r.Status = Fail
	case at < 0:
		r.Status = Fail
		r.Note = "never converged"
		r.detailf("nodes %v never served the same serial and digest after the final heal", heal.Nodes)
	case time.Duration(at) > cfg.ConvergenceBound:
		r.Status = Fail
		r.Note = fmt.Sprintf("converged after %s", fmtDur(time.Duration(at)))
		r.detailf("convergence took %s, bound %s", fmtDur(time.Duration(at)), cfg.ConvergenceBound)
	default:
		r.Status = Pass
		r.Note = fmt.Sprintf("converged after %s", fmtDur(time.Duration(at)))
	}
	return r
}

// convergedAt returns the time from the final heal to the end of the first
// probe round in which every member answered with one serial and digest,
// or -1; and the number of rounds seen.
func convergedAt(h model.History, heal model.Op) (int64, int) {
	rounds := map[int]model.History{}
	for _, o := range h.Filter(model.KindDigest) {
		if o.Invoke >= heal.Invoke {
			rounds[o.Round] = append(rounds[o.Round], o)
		}
	}
	ids := make([]int, 0, len(rounds))
	for id := range rounds {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		ops := rounds[id]
		by := map[string]model.Op{}
		var end int64
		for _, o := range ops {
			by[o.Node] = o
			end = max(end, o.Complete)
		}
		first, ok := by[heal.Nodes[0]]
		same := ok && first.Outcome == model.OK
		for _, n := range heal.Nodes {
			o, ok := by[n]
			if !same || !ok || o.Outcome != model.OK || o.Digest != first.Digest || o.Serial != first.Serial {
				same = false
				break
			}
		}
		if same {
			return end - heal.Invoke, len(ids)
		}
	}
	return -1, len(ids)
}

// indexConflicts counts applied indexes at which two reads saw different
// content (DESIGN I3: same applied index means same content hash).
func indexConflicts(h model.History, r *Result) int {
	seen := map[uint64]model.Op{}
	n := 0
	for _, o := range h.Filter(model.KindDigest, model.KindFinal) {
		if o.Outcome != model.OK || o.Index == 0 || o.Digest == "" {
			continue
		}
		p, ok := seen[o.Index]
		if !ok {
			seen[o.Index] = o
			continue
		}
		if p.Digest != o.Digest {
			n++
			r.detailf("index %d: %s has digest %.12s, %s has %.12s", o.Index, p.Node, p.Digest, o.Node, o.Digest)
		}
	}
	return n
}

func fmtDur(d time.Duration) string {
	if d < 0 {
		return "-"
	}
	return d.Round(10 * time.Millisecond).String()
}
