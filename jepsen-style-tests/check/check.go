// Package check holds the checkers of the partition suite. Each takes a
// scenario's history (package model) and returns a Result that is PASS,
// FAIL, INCONCLUSIVE (not enough evidence to decide) or N/A (the scenario
// does not exercise the invariant), with the counts it decided from.
//
// The checkers read nothing but the history, so each one is unit-tested
// with a crafted history that holds the violation it claims to catch.
package check

import (
	"fmt"
	"strings"
	"time"

	"github.com/kudurru/kudurru/jepsen-style-tests/model"
)

// Status is a checker's verdict.
type Status string

// Verdicts.
const (
	Pass         Status = "PASS"
	Fail         Status = "FAIL"
	Inconclusive Status = "INCONCLUSIVE"
	NA           Status = "N/A"
)

// Config holds the checkers' parameters.
type Config struct {
	// ConvergenceBound is I3's bound on the time from the final heal until
	// every node serves the same zone content.
	ConvergenceBound time.Duration
	// MinThroughput is the rate of acknowledged writes per second before
	// the first fault below which the run proves nothing (INCONCLUSIVE).
	MinThroughput float64
	// WriteDeadline is I5's bound on how long a write on the minority side
	// may take before it ends with an error.
	WriteDeadline time.Duration
	// MinAvailability is I4's lowest share of DNS queries a live node must
	// answer in each phase.
	MinAvailability float64
	// MinSamples is the fewest queries a node and phase need before I4
	// judges its availability.
	MinSamples int
	// StartupGrace is how long after a (re)start a node's DNS queries are
	// not counted against I4, for the process to open its listeners.
	StartupGrace time.Duration
	// LinearizabilityTimeout bounds porcupine; past it the result is
	// INCONCLUSIVE.
	LinearizabilityTimeout time.Duration
	// ArtifactsDir receives history.html when the linearizability check
	// fails. Empty writes nothing.
	ArtifactsDir string
}

// DefaultConfig returns the suite's defaults.
func DefaultConfig() Config {
	return Config{
		ConvergenceBound:       10 * time.Second,
		MinThroughput:          5,
		WriteDeadline:          12 * time.Second,
		MinAvailability:        0.95,
		MinSamples:             10,
		StartupGrace:           3 * time.Second,
		LinearizabilityTimeout: time.Minute,
	}
}

// Count is one named number of a Result.
type Count struct {
	Name string
	N    int
}

// Result is one checker's verdict on one history.
type Result struct {
	ID      string   // I1…I6, "leader", "linearizable", "throughput"
	Name    string   // what it checks, for people
	Status  Status   // the verdict
	Counts  []Count  // what it decided from
	Note    string   // a measured value or why it could not decide
	Details []string // the first violations, for the report
}

// maxDetails bounds Result.Details.
const maxDetails = 10

func (r *Result) add(name string, n int) { r.Counts = append(r.Counts, Count{name, n}) }

func (r *Result) detailf(format string, args ...any) {
	if len(r.Details) < maxDetails {
		r.Details = append(r.Details, fmt.Sprintf(format, args...))
	}
}

// CountString renders the counts as "name=n name=n".
func (r Result) CountString() string {
	parts := make([]string, 0, len(r.Counts))
	for _, c := range r.Counts {
		parts = append(parts, fmt.Sprintf("%s=%d", c.Name, c.N))
	}
	return strings.Join(parts, " ")
}

// Report is every checker's result on one history, with the scenario's
// measurements.
type Report struct {
	Results []Result
	Metrics Metrics
}

// Verdict is FAIL if any result failed, INCONCLUSIVE if any was
// inconclusive, PASS otherwise.
func (r Report) Verdict() Status {
	v := Pass
	for _, res := range r.Results {
		switch res.Status {
		case Fail:
			return Fail
		case Inconclusive:
			v = Inconclusive
		}
	}
	return v
}

// Run applies every checker to h. When the throughput before the first
// fault is below the minimum, every PASS becomes INCONCLUSIVE: a run that
// barely wrote anything proves nothing.
func Run(h model.History, cfg Config) Report {
	tp := Throughput(h, cfg)
	results := []Result{
		LostWrites(h),
		SerialMonotonic(h),
		Convergence(h, cfg),
		Availability(h, cfg),
		MinorityWrites(h, cfg),
		ForeignData(h),
		LeaderPerTerm(h),
		Linearizable(h, cfg),
		tp,
	}
	if tp.Status == Inconclusive {
		for i := range results {
			if results[i].Status == Pass {
				results[i].Status = Inconclusive
				results[i].Note = strings.TrimSpace(results[i].Note + " (throughput before the first fault too low)")
			}
		}
	}
	return Report{Results: results, Metrics: Measure(h, cfg)}
}
