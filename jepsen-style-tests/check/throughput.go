package check

import (
	"fmt"
	"slices"
	"time"

	"github.com/kudurru/kudurru/jepsen-style-tests/model"
)

// Throughput decides whether the run exercised the cluster: the rate of
// acknowledged writes before the first fault must reach MinThroughput,
// otherwise the run is INCONCLUSIVE (etcd's robustness tests void such
// runs too).
func Throughput(h model.History, cfg Config) Result {
	r := Result{ID: "throughput", Name: fmt.Sprintf("≥%.0f acknowledged writes/s before the first fault", cfg.MinThroughput)}
	end := h.FirstFault()
	if end < 0 {
		if fh, ok := h.FinalHeal(); ok {
			end = fh.Invoke
		} else {
			end = h.End()
		}
	}
	var start int64 = -1
	ok := 0
	for _, o := range h.Filter(model.KindWrite, model.KindCAS) {
		if start < 0 || o.Invoke < start {
			start = o.Invoke
		}
		if o.Outcome == model.OK && o.Complete < end {
			ok++
		}
	}
	r.add("ok-before-fault", ok)
	span := time.Duration(end - start)
	if start < 0 || span <= 0 {
		r.Status = Inconclusive
		r.Note = "no writes before the first fault"
		return r
	}
	rate := float64(ok) / span.Seconds()
	r.Note = fmt.Sprintf("%.1f writes/s over %s", rate, span.Round(time.Millisecond))
	if rate < cfg.MinThroughput {
		r.Status = Inconclusive
		return r
	}
	r.Status = Pass
	return r
}

// Metrics are a scenario's measurements for the summary.
type Metrics struct {
	// FailoverP50 and FailoverP99 are percentiles, over every fault and
	// every node that stayed up and on the majority side, of the time from
	// the fault until a write sent to that node after the fault was
	// acknowledged. -1 when there was none.
	FailoverP50, FailoverP99 time.Duration
	// Convergence is the time from the final heal until every member
	// served the same zone; -1 if it never did or was not measured.
	Convergence time.Duration
	// Availability is the share of DNS queries to live nodes answered,
	// over the whole run; MinFaultAvailability is the lowest share of any
	// node during the fault phase. -1 when there were no queries.
	Availability, MinFaultAvailability float64
	// Writes counts write and CAS operations by outcome.
	WritesOK, WritesFail, WritesUnknown int
}

// Measure computes the scenario's Metrics.
func Measure(h model.History, cfg Config) Metrics {
	m := Metrics{FailoverP50: -1, FailoverP99: -1, Convergence: -1, Availability: -1, MinFaultAvailability: -1}
	writes := h.Filter(model.KindWrite, model.KindCAS)
	for _, o := range writes {
		switch o.Outcome {
		case model.OK:
			m.WritesOK++
		case model.Fail:
			m.WritesFail++
		default:
			m.WritesUnknown++
		}
	}
	down := downWindows(h, cfg.StartupGrace)
	var samples []time.Duration
	for _, e := range h.Nemeses() {
		switch e.Nemesis {
		case model.NemPartition, model.NemKill, model.NemStop, model.NemPause, model.NemForeign:
		default:
			continue
		}
		// Per node that is up and not cut off from the majority: the time
		// until a write sent to it after the fault was acknowledged.
		first := map[string]int64{}
		for _, o := range writes {
			if o.Outcome != model.OK || o.Invoke < e.Invoke || slices.Contains(e.Minority, o.Node) {
				continue
			}
			if isDown(down, model.Op{Node: o.Node, Invoke: e.Invoke, Complete: e.Invoke}) {
				continue
			}
			if t, ok := first[o.Node]; !ok || o.Complete < t {
				first[o.Node] = o.Complete
			}
		}
		for _, t := range first {
			samples = append(samples, time.Duration(t-e.Invoke))
		}
	}
	m.FailoverP50, m.FailoverP99 = percentile(samples, 50), percentile(samples, 99)
	if heal, ok := h.FinalHeal(); ok {
		if at, _ := convergedAt(h, heal); at >= 0 {
			m.Convergence = time.Duration(at)
		}
	}
	var sent, answered int
	cells := map[string]*cell{}
	for _, o := range h.Filter(model.KindRead, model.KindSOA) {
		if isDown(down, o) {
			continue
		}
		sent++
		ok := o.Outcome == model.OK
		if ok {
			answered++
		}
		if phaseOf(h, o.Invoke) == PhaseFault {
			c := cells[o.Node]
			if c == nil {
				c = &cell{}
				cells[o.Node] = c
			}
			c.sent++
			if ok {
				c.answered++
			}
		}
	}
	if sent > 0 {
		m.Availability = float64(answered) / float64(sent)
	}
	for _, c := range cells {
		if c.sent >= cfg.MinSamples {
			a := float64(c.answered) / float64(c.sent)
			if m.MinFaultAvailability < 0 || a < m.MinFaultAvailability {
				m.MinFaultAvailability = a
			}
		}
	}
	return m
}
