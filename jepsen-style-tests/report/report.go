// Package report writes the partition suite's summary.md: one table of
// scenarios with their measurements, one row per invariant and scenario
// with the checker's verdict and counts, and the first violations of every
// failed check.
package report

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/kudurru/kudurru/jepsen-style-tests/check"
)

// Verdicts beyond the checkers'.
const (
	Error   = "ERROR"   // the scenario could not run to its end
	Skipped = "SKIPPED" // the machine cannot inject the fault
)

// Scenario is the outcome of one scenario run.
type Scenario struct {
	Name    string
	About   string // one sentence for operators
	Nodes   int
	Report  check.Report
	Err     error  // why it could not run to its end
	Skipped string // why it was skipped
	Dir     string // artifacts
	Elapsed time.Duration
}

// Verdict is ERROR, SKIPPED or the checkers' verdict.
func (s Scenario) Verdict() string {
	switch {
	case s.Skipped != "":
		return Skipped
	case s.Err != nil && len(s.Report.Results) == 0:
		return Error
	case s.Err != nil && s.Report.Verdict() != check.Fail:
		return Error
	}
	return string(s.Report.Verdict())
}

// Passed reports whether the scenario passed or was skipped.
func (s Scenario) Passed() bool {
	v := s.Verdict()
	return v == string(check.Pass) || v == Skipped
}

func dur(d time.Duration) string {
	if d < 0 {
		return "–"
	}
	return d.Round(10 * time.Millisecond).String()
}

func pct(f float64) string {
	if f < 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f%%", 100*f)
}

// cellEscape keeps a table cell on one line.
func cellEscape(s string) string {
	return strings.NewReplacer("|", "\\|", "\n", " ").Replace(s)
}

// Markdown writes the summary of a run.
func Markdown(w io.Writer, header string, ss []Scenario) error {
	var b strings.Builder
	b.WriteString("# Partition suite summary\n\n")
	if header != "" {
		b.WriteString(header + "\n\n")
	}
	b.WriteString("## Scenarios\n\n")
	b.WriteString("| scenario | nodes | verdict | writes ok / fail / unknown | failover p50 / p99 | convergence | DNS availability (lowest node, fault phase) | time |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, s := range ss {
		m := s.Report.Metrics
		if len(s.Report.Results) == 0 {
			fmt.Fprintf(&b, "| %s | %d | %s | – | – | – | – | %s |\n", s.Name, s.Nodes, s.Verdict(), s.Elapsed.Round(time.Second))
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %d / %d / %d | %s / %s | %s | %s (%s) | %s |\n",
			s.Name, s.Nodes, s.Verdict(), m.WritesOK, m.WritesFail, m.WritesUnknown,
			dur(m.FailoverP50), dur(m.FailoverP99), dur(m.Convergence), pct(m.Availability), pct(m.MinFaultAvailability),
			s.Elapsed.Round(time.Second))
	}
	b.WriteString("\n## Invariants\n\n")
	b.WriteString("| scenario | invariant | result | counts | failover p50 / p99 | convergence | availability |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, s := range ss {
		m := s.Report.Metrics
		if len(s.Report.Results) == 0 {
			fmt.Fprintf(&b, "| %s | – | %s | %s | – | – | – |\n", s.Name, s.Verdict(), cellEscape(errOrSkip(s)))
			continue
		}
		for _, r := range s.Report.Results {
			counts := r.CountString()
			if r.Note != "" {
				counts += "; " + r.Note
			}
			fmt.Fprintf(&b, "| %s | %s %s | %s | %s | %s / %s | %s | %s |\n", s.Name, r.ID, cellEscape(r.Name), r.Status,
				cellEscape(counts), dur(m.FailoverP50), dur(m.FailoverP99), dur(m.Convergence), pct(m.Availability))
		}
	}
	var failures strings.Builder
	for _, s := range ss {
		if s.Passed() {
			continue
		}
		fmt.Fprintf(&failures, "- **%s**: %s", s.Name, s.Verdict())
		if s.Dir != "" {
			fmt.Fprintf(&failures, " — artifacts in `%s`", s.Dir)
		}
		failures.WriteString("\n")
		if s.Err != nil {
			fmt.Fprintf(&failures, "  - error: %v\n", s.Err)
		}
		for _, r := range s.Report.Results {
			switch r.Status {
			case check.Fail:
				fmt.Fprintf(&failures, "  - %s %s: FAIL (%s)\n", r.ID, r.Name, r.CountString())
				for _, d := range r.Details {
					fmt.Fprintf(&failures, "    - %s\n", d)
				}
			case check.Inconclusive:
				fmt.Fprintf(&failures, "  - %s %s: INCONCLUSIVE: %s\n", r.ID, r.Name, r.Note)
			}
		}
	}
	if failures.Len() > 0 {
		b.WriteString("\n## Not passed\n\n" + failures.String())
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func errOrSkip(s Scenario) string {
	if s.Skipped != "" {
		return s.Skipped
	}
	if s.Err != nil {
		return s.Err.Error()
	}
	return ""
}

// WriteFile writes the summary to path.
func WriteFile(path, header string, ss []Scenario) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := Markdown(f, header, ss); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
