package check

import (
	"slices"
	"time"

	"github.com/kudurru/kudurru/jepsen-style-tests/model"
)

// Phases of a run, for I4.
const (
	PhasePre   = "pre"   // before the first fault
	PhaseFault = "fault" // from the first fault to the final heal
	PhasePost  = "post"  // after the final heal
)

// phaseOf returns the phase an operation invoked at t belongs to.
func phaseOf(h model.History, t int64) string {
	first := h.FirstFault()
	fh, healed := h.FinalHeal()
	switch {
	case first < 0 || t < first:
		return PhasePre
	case healed && t >= fh.Invoke:
		return PhasePost
	}
	return PhaseFault
}

// window is a half-open time interval [from, to).
type window struct{ from, to int64 }

func (w window) overlaps(a, b int64) bool { return a < w.to && b >= w.from }

// downWindows returns, per node, the times it was not a live server: from
// a kill, stop or pause until its restart (plus the startup grace) or
// resume; for a node that joined, until its first answered DNS query; for a
// node given another cluster's data, until the final heal.
func downWindows(h model.History, grace time.Duration) map[string][]window {
	end := h.End() + 1
	down := map[string][]window{}
	open := map[string]int64{} // node -> start of its open down window
	closeAt := func(n string, t int64) {
		if s, ok := open[n]; ok {
			down[n] = append(down[n], window{s, t})
			delete(open, n)
		}
	}
	firstAnswer := func(n string, after int64) int64 {
		for _, o := range h {
			if (o.Kind == model.KindRead || o.Kind == model.KindSOA) && o.Node == n && o.Outcome == model.OK && o.Invoke >= after {
				return o.Invoke
			}
		}
		return end
	}
	for _, e := range h.Nemeses() {
		for _, n := range e.Nodes {
			switch e.Nemesis {
			case model.NemKill, model.NemStop, model.NemPause:
				if _, ok := open[n]; !ok {
					open[n] = e.Invoke
				}
			case model.NemStart:
				closeAt(n, e.Invoke+int64(grace))
			case model.NemResume:
				closeAt(n, e.Invoke+int64(500*time.Millisecond))
			case model.NemJoin:
				// A new node has nothing to serve until it has caught up.
				down[n] = append(down[n], window{0, firstAnswer(n, 0)})
			case model.NemForeign:
				to := end
				if fh, ok := h.FinalHeal(); ok {
					to = fh.Invoke + int64(grace)
				}
				down[n] = append(down[n], window{e.Invoke, to})
			}
		}
	}
	for n := range open {
		closeAt(n, end)
	}
	return down
}

// isDown reports whether o overlaps a down window of its node.
func isDown(down map[string][]window, o model.Op) bool {
	for _, w := range down[o.Node] {
		if w.overlaps(o.Invoke, o.Complete) {
			return true
		}
	}
	return false
}

// minorityWindow is a time during which Nodes had no quorum.
type minorityWindow struct {
	window
	nodes []string
}

// minorityWindows derives, from the Minority field of the nemesis events
// (the set of live members cut off from any majority after each event),
// the windows during which each such set stood.
func minorityWindows(h model.History) []minorityWindow {
	ev := h.Nemeses()
	end := h.End() + 1
	var out []minorityWindow
	for i, e := range ev {
		if len(e.Minority) == 0 {
			continue
		}
		to := end
		if i+1 < len(ev) {
			to = ev[i+1].Invoke
		}
		out = append(out, minorityWindow{window{e.Invoke, to}, e.Minority})
	}
	return out
}

// inMinority reports whether write o went to a node of a minority window
// and both began and ended inside it.
func inMinority(ws []minorityWindow, o model.Op) (minorityWindow, bool) {
	for _, w := range ws {
		if slices.Contains(w.nodes, o.Node) && o.Invoke >= w.from && o.Invoke < w.to {
			return w, true
		}
	}
	return minorityWindow{}, false
}

// percentile returns the p-th percentile (0..100) of xs by nearest rank.
func percentile(xs []time.Duration, p float64) time.Duration {
	if len(xs) == 0 {
		return -1
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}

// serialLess compares SOA serials in RFC 1982 arithmetic: a < b.
func serialLess(a, b uint32) bool {
	return a != b && (b-a) < 1<<31
}
