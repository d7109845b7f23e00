package check

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kudurru/kudurru/jepsen-style-tests/model"
)

// MarkerKey is the owner name the suite plants in another cluster's zone
// to test I6; reads of it are judged by ForeignData, not here.
const MarkerKey = "foreign-marker"

// cell is one node's DNS answers in one phase.
type cell struct{ sent, answered int }

// Availability is I4: every live node answers DNS queries (reads and SOA
// polls) in every phase — on the minority side and on a cold start too —
// at least MinAvailability of the time; and no answer holds a value that
// no write could have produced, or that only a definitely failed write
// produced.
func Availability(h model.History, cfg Config) Result {
	r := Result{ID: "I4", Name: fmt.Sprintf("live nodes answer DNS (≥%.0f%% per node and phase), no phantom values", cfg.MinAvailability*100)}
	down := downWindows(h, cfg.StartupGrace)
	cells := map[[2]string]*cell{}
	var sent, answered, excluded int
	for _, o := range h.Filter(model.KindRead, model.KindSOA) {
		if isDown(down, o) {
			excluded++
			continue
		}
		k := [2]string{o.Node, phaseOf(h, o.Invoke)}
		c := cells[k]
		if c == nil {
			c = &cell{}
			cells[k] = c
		}
		c.sent++
		sent++
		if o.Outcome == model.OK {
			c.answered++
			answered++
		}
	}
	keys := make([][2]string, 0, len(cells))
	for k := range cells {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return strings.Compare(a[0]+a[1], b[0]+b[1]) })
	low := 0
	for _, k := range keys {
		c := cells[k]
		if c.sent < cfg.MinSamples {
			continue
		}
		if float64(c.answered)/float64(c.sent) < cfg.MinAvailability {
			low++
			r.detailf("%s in phase %s answered %d of %d DNS queries (%.1f%%)", k[0], k[1], c.answered, c.sent, 100*float64(c.answered)/float64(c.sent))
		}
	}
	phantom := phantomReads(h, &r)
	r.add("queries", sent)
	r.add("answered", answered)
	r.add("excluded-down", excluded)
	r.add("cells-below", low)
	r.add("phantom-reads", phantom)
	switch {
	case low > 0 || phantom > 0:
		r.Status = Fail
	case sent == 0:
		r.Status = Inconclusive
		r.Note = "no DNS queries to live nodes"
	default:
		r.Status = Pass
		r.Note = fmt.Sprintf("%.2f%% answered", 100*float64(answered)/float64(sent))
	}
	return r
}

// phantomReads counts DNS reads that returned a value no write with an ok
// or unknown outcome wrote to that owner name.
func phantomReads(h model.History, r *Result) int {
	allowed := map[string]map[string]bool{} // key -> values of ok/unknown writes
	failed := map[string]map[string]bool{}  // key -> values of failed writes
	for _, o := range h.Filter(model.KindWrite, model.KindCAS) {
		m := allowed
		if o.Outcome == model.Fail {
			m = failed
		}
		if m[o.Key] == nil {
			m[o.Key] = map[string]bool{}
		}
		m[o.Key][o.Value] = true
	}
	n := 0
	for _, o := range h.Filter(model.KindRead) {
		if o.Outcome != model.OK || o.Key == MarkerKey {
			continue
		}
		for _, v := range o.Values {
			if allowed[o.Key][v] {
				continue
			}
			n++
			if failed[o.Key][v] {
				r.detailf("%s served %s=%q at %.3fs, written only by a write that failed", o.Node, o.Key, v, secs(o.Invoke))
			} else {
				r.detailf("%s served %s=%q at %.3fs, which no write wrote", o.Node, o.Key, v, secs(o.Invoke))
			}
		}
	}
	return n
}
