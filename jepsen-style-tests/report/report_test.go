package report

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kudurru/kudurru/jepsen-style-tests/check"
)

func TestMarkdown(t *testing.T) {
	pass := check.Report{
		Results: []check.Result{{ID: "I1", Name: "no acknowledged write lost", Status: check.Pass, Counts: []check.Count{{Name: "ok", N: 10}, {Name: "lost", N: 0}}}},
		Metrics: check.Metrics{FailoverP50: 1500 * time.Millisecond, FailoverP99: 3 * time.Second, Convergence: 800 * time.Millisecond, Availability: 0.999, MinFaultAvailability: 0.98},
	}
	fail := check.Report{
		Results: []check.Result{{ID: "I2", Name: "serial never decreases per node", Status: check.Fail, Details: []string{"n2: serial 3 after 9"}}},
		Metrics: check.Metrics{FailoverP50: -1, FailoverP99: -1, Convergence: -1, Availability: -1, MinFaultAvailability: -1},
	}
	ss := []Scenario{
		{Name: "partition-leader", Nodes: 3, Report: pass},
		{Name: "kill-restart", Nodes: 3, Report: fail, Dir: "/tmp/x"},
		{Name: "netem", Nodes: 3, Skipped: "no sch_netem"},
		{Name: "boot", Nodes: 3, Err: errors.New("no leader within 30s")},
	}
	var b strings.Builder
	if err := Markdown(&b, "run 1", ss); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"| partition-leader | 3 | PASS | 0 / 0 / 0 | 1.5s / 3s | 800ms | 99.90% (98.00%) |",
		"| partition-leader | I1 no acknowledged write lost | PASS | ok=10 lost=0 |",
		"| kill-restart | I2 serial never decreases per node | FAIL |",
		"    - n2: serial 3 after 9",
		"- **kill-restart**: FAIL — artifacts in `/tmp/x`",
		"| netem | 3 | SKIPPED | – |",
		"| boot | – | ERROR | no leader within 30s |",
		"  - error: no leader within 30s",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if ss[0].Verdict() != "PASS" || ss[1].Verdict() != "FAIL" || ss[3].Verdict() != Error || !ss[2].Passed() {
		t.Error("verdicts")
	}
}
