package check

import (
	"slices"

	"github.com/kudurru/kudurru/jepsen-style-tests/model"
)

// LostWrites is I1, a set-full check per node: after the final heal every
// node's final read holds every acknowledged unique write, holds no write
// that failed definitely, and may or may not hold a write whose outcome is
// unknown. CAS keys are left to the linearizability check.
func LostWrites(h model.History) Result {
	r := Result{ID: "I1", Name: "no acknowledged write lost"}
	finals := h.Filter(model.KindFinal)
	writes := h.Filter(model.KindWrite)
	if len(finals) == 0 || len(writes) == 0 {
		r.Status = Inconclusive
		r.Note = "no final read or no writes"
		r.add("writes", len(writes))
		r.add("nodes", len(finals))
		return r
	}
	var ok, fail, unk int
	for _, w := range writes {
		switch w.Outcome {
		case model.OK:
			ok++
		case model.Fail:
			fail++
		default:
			unk++
		}
	}
	var lost, resurrected, unkPresent int
	for _, f := range finals {
		if f.Outcome != model.OK {
			lost++ // a node we could not read cannot show the writes
			r.detailf("final read of %s failed: %s %s", f.Node, f.Code, f.Error)
			continue
		}
		have := make(map[string]bool, len(f.Values))
		for _, k := range f.Values {
			have[k] = true
		}
		for _, w := range writes {
			switch {
			case w.Outcome == model.OK && !have[w.Key]:
				lost++
				r.detailf("%s: acknowledged write %s (node %s, index %d) is missing", f.Node, w.Key, w.Node, w.Index)
			case w.Outcome == model.Fail && have[w.Key]:
				resurrected++
				r.detailf("%s: write %s failed with %s %q but is present", f.Node, w.Key, w.Code, w.Error)
			case w.Outcome == model.Unknown && have[w.Key]:
				unkPresent++
			}
		}
	}
	r.add("nodes", len(finals))
	r.add("ok", ok)
	r.add("fail", fail)
	r.add("unknown", unk)
	r.add("lost", lost)
	r.add("failed-present", resurrected)
	r.add("unknown-present", unkPresent)
	r.Status = Pass
	if lost > 0 || resurrected > 0 {
		r.Status = Fail
	}
	return r
}

// SerialMonotonic is I2: the SOA serial each node serves never decreases
// (RFC 1982 arithmetic), across restarts too, judged from the serial
// poller's answers in the order they were sent.
func SerialMonotonic(h model.History) Result {
	r := Result{ID: "I2", Name: "serial never decreases per node"}
	byNode := map[string]model.History{}
	polls := 0
	for _, o := range h.Filter(model.KindSOA) {
		if o.Outcome == model.OK && o.Serial != 0 {
			byNode[o.Node] = append(byNode[o.Node], o)
			polls++
		}
	}
	nodes := make([]string, 0, len(byNode))
	for n := range byNode {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	decreases := 0
	for _, n := range nodes {
		ops := byNode[n]
		slices.SortStableFunc(ops, func(a, b model.Op) int { return cmpI64(a.Invoke, b.Invoke) })
		hi := ops[0]
		var first, low model.Op
		count := 0
		for _, o := range ops[1:] {
			// Only answers whose request began after the highest one ended
			// are ordered after it.
			if o.Invoke < hi.Complete {
				continue
			}
			if serialLess(o.Serial, hi.Serial) {
				if count == 0 {
					first = o
				}
				if count == 0 || serialLess(o.Serial, low.Serial) {
					low = o
				}
				count++
			}
			if serialLess(hi.Serial, o.Serial) {
				hi = o
			}
		}
		if count > 0 {
			decreases += count
			r.detailf("%s: served serial %d at %.3fs after %d had been served; lowest %d at %.3fs; %d answers below the high-water mark",
				n, first.Serial, secs(first.Invoke), highBefore(ops, first), low.Serial, secs(low.Invoke), count)
		}
	}
	r.add("nodes", len(nodes))
	r.add("answers", polls)
	r.add("decreases", decreases)
	switch {
	case decreases > 0:
		r.Status = Fail
	case polls == 0:
		r.Status = Inconclusive
		r.Note = "no SOA answers"
	default:
		r.Status = Pass
	}
	return r
}

// highBefore is the highest serial answered before o was sent.
func highBefore(ops model.History, o model.Op) uint32 {
	var hi uint32
	for _, p := range ops {
		if p.Complete <= o.Invoke && (hi == 0 || serialLess(hi, p.Serial)) {
			hi = p.Serial
		}
	}
	return hi
}

func cmpI64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func secs(ns int64) float64 { return float64(ns) / 1e9 }
