package check

import (
	"fmt"
	"time"

	"github.com/kudurru/kudurru/jepsen-style-tests/model"
)

// MinorityWrites is I5: a write sent to a node that is cut off from every
// majority is never acknowledged, and ends with an error within
// WriteDeadline. The minority windows come from the nemesis events; a
// write counts when it began inside one and, for the acknowledgement rule,
// also ended inside it (after the heal it may legitimately succeed).
func MinorityWrites(h model.History, cfg Config) Result {
	r := Result{ID: "I5", Name: fmt.Sprintf("no ack on the minority side; errors within %s", cfg.WriteDeadline)}
	ws := minorityWindows(h)
	if len(ws) == 0 {
		r.Status = NA
		r.Note = "no node was in a minority"
		return r
	}
	var total, acked, clear, unknown, slow int
	for _, o := range h.Filter(model.KindWrite, model.KindCAS) {
		w, ok := inMinority(ws, o)
		if !ok {
			continue
		}
		total++
		if time.Duration(o.Duration()) > cfg.WriteDeadline {
			slow++
			r.detailf("%s: write %s took %s (%s %s)", o.Node, o.Key, fmtDur(time.Duration(o.Duration())), o.Outcome, o.Code)
		}
		switch {
		case o.Outcome == model.OK && o.Complete <= w.to:
			acked++
			r.detailf("%s: write %s=%s acknowledged (index %d) at %.3fs while the node had no quorum", o.Node, o.Key, o.Value, o.Index, secs(o.Complete))
		case o.Outcome == model.Fail:
			clear++
		case o.Outcome == model.Unknown:
			unknown++
		}
	}
	r.add("windows", len(ws))
	r.add("writes", total)
	r.add("acked", acked)
	r.add("failed", clear)
	r.add("unknown", unknown)
	r.add("over-deadline", slow)
	switch {
	case acked > 0 || slow > 0:
		r.Status = Fail
	case total == 0:
		r.Status = Inconclusive
		r.Note = "no write reached a minority node"
	default:
		r.Status = Pass
	}
	return r
}

// ForeignData is I6: a node given another cluster's local.db never serves
// it. The nemesis event names the node and the marker value planted in the
// other cluster's zone; any DNS read returning the marker, or any status
// poll reporting the other cluster's ID, is a violation. Without answers
// from that node during the window the check cannot decide.
func ForeignData(h model.History) Result {
	r := Result{ID: "I6", Name: "another cluster's data is never served"}
	var events model.History
	for _, e := range h.Nemeses() {
		if e.Nemesis == model.NemForeign {
			events = append(events, e)
		}
	}
	if len(events) == 0 {
		r.Status = NA
		r.Note = "no foreign data given"
		return r
	}
	markers := map[string]bool{}
	cids := map[string]bool{}
	nodes := map[string]bool{}
	win := window{events[0].Invoke, h.End() + 1}
	if fh, ok := h.FinalHeal(); ok && fh.Invoke > win.from {
		win.to = fh.Invoke
	}
	for _, e := range events {
		markers[e.Value] = true
		if e.Code != "" {
			cids[e.Code] = true
		}
		for _, n := range e.Nodes {
			nodes[n] = true
		}
	}
	var probes, answered, served, notReady, wrongCID int
	for _, o := range h {
		switch o.Kind {
		case model.KindRead:
			if o.Key != MarkerKey {
				continue
			}
			if nodes[o.Node] && win.overlaps(o.Invoke, o.Invoke) {
				probes++
				if o.Code != "" && o.Code != "timeout" {
					answered++
				}
			}
			for _, v := range o.Values {
				if markers[v] {
					served++
					r.detailf("%s served the other cluster's marker %q at %.3fs", o.Node, v, secs(o.Invoke))
				}
			}
		case model.KindStatus:
			if o.Outcome != model.OK {
				continue
			}
			if nodes[o.Node] && win.overlaps(o.Invoke, o.Invoke) {
				answered++
				if !o.Ready {
					notReady++
				}
			}
			if cids[o.ClusterID] {
				wrongCID++
				r.detailf("%s reported the other cluster's ID %s at %.3fs", o.Node, o.ClusterID, secs(o.Invoke))
			}
		}
	}
	r.add("marker-queries", probes)
	r.add("answers", answered)
	r.add("marker-served", served)
	r.add("foreign-cluster-id", wrongCID)
	r.add("not-ready-polls", notReady)
	switch {
	case served > 0 || wrongCID > 0:
		r.Status = Fail
	case answered == 0:
		r.Status = Inconclusive
		r.Note = "the node given foreign data never answered"
	default:
		r.Status = Pass
	}
	return r
}
