package jepsen

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kudurru/kudurru/jepsen-style-tests/check"
	"github.com/kudurru/kudurru/jepsen-style-tests/harness"
	"github.com/kudurru/kudurru/jepsen-style-tests/report"
	"github.com/kudurru/kudurru/jepsen-style-tests/scenarios"
)

// Environment of TestScenarios.
const (
	envRun         = "KUDURRU_JEPSEN"             // 1 to run the scenarios
	envBin         = "KUDURRU_BIN"                // the binary; default ../bin/kudurru
	envSet         = "KUDURRU_JEPSEN_SET"         // all (default), quick, or a comma-separated list of names
	envOut         = "KUDURRU_JEPSEN_OUT"         // artifacts root; default ./out
	envKeep        = "KUDURRU_JEPSEN_KEEP"        // 1: keep node data and logs of passing scenarios
	envSeed        = "KUDURRU_JEPSEN_SEED"        // random seed of the nemeses
	envConvergence = "KUDURRU_JEPSEN_CONVERGENCE" // I3 bound, default 10s
	envHold        = "KUDURRU_JEPSEN_HOLD"        // how long each fault stands, default 10s
	envMinRate     = "KUDURRU_JEPSEN_MIN_RATE"    // minimum writes/s before the first fault, default 5
	envTolerate    = "KUDURRU_JEPSEN_TOLERATE"    // check IDs whose INCONCLUSIVE does not fail the test, e.g. linearizable
)

// TestScenarios runs the partition scenarios against real kudurru
// processes. It needs root and KUDURRU_JEPSEN=1.
func TestScenarios(t *testing.T) {
	if os.Getenv(envRun) != "1" {
		t.Skipf("partition scenarios not run: set %s=1 and run as root (sudo make jepsen or make jepsen-quick)", envRun)
	}
	if err := harness.CheckRoot(); err != nil {
		t.Fatal(err)
	}
	set, err := scenarios.Select(os.Getenv(envSet))
	if err != nil {
		t.Fatal(err)
	}
	bin := envOr(envBin, "../bin/kudurru")
	if bin, err = filepath.Abs(bin); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("kudurru binary %s not found: run make build first, or set %s", bin, envBin)
	}
	out, err := filepath.Abs(envOr(envOut, "out"))
	if err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(out, time.Now().Format("20060102-150405"))
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		t.Fatal(err)
	}
	unlock, err := harness.Lock()
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	harness.InstallSignalHandler()
	ctx := context.Background()
	if dl, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-30*time.Second))
		defer cancel()
	}
	if err := harness.StaleCleanup(ctx); err != nil {
		t.Fatalf("stale cleanup: %v", err)
	}

	o := scenarios.DefaultOptions(bin, runDir)
	o.KeepAll = os.Getenv(envKeep) == "1"
	o.Logf = t.Logf
	if v := os.Getenv(envSeed); v != "" {
		if o.Seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("%s: %v", envSeed, err)
		}
	}
	durEnv(t, envConvergence, &o.Check.ConvergenceBound)
	durEnv(t, envHold, &o.Hold)
	if v := os.Getenv(envMinRate); v != "" {
		if o.Check.MinThroughput, err = strconv.ParseFloat(v, 64); err != nil {
			t.Fatalf("%s: %v", envMinRate, err)
		}
	}
	header := fmt.Sprintf("Run %s · binary `%s` (%s) · seed %d · %d scenario(s) · convergence bound %s · fault hold %s.",
		time.Now().UTC().Format(time.RFC3339), filepath.Base(bin), version(bin), o.Seed, len(set), o.Check.ConvergenceBound, o.Hold)
	t.Logf("artifacts: %s (seed %d)", runDir, o.Seed)

	tolerated := map[string]bool{}
	for _, id := range strings.Split(os.Getenv(envTolerate), ",") {
		if id = strings.TrimSpace(id); id != "" {
			tolerated[id] = true
		}
	}
	var results []report.Scenario
	write := func() {
		path := filepath.Join(runDir, "summary.md")
		if err := report.WriteFile(path, header, results); err != nil {
			t.Errorf("summary: %v", err)
			return
		}
		_ = report.WriteFile(filepath.Join(out, "summary.md"), header, results)
	}
	for _, s := range set {
		t.Run(s.Name, func(t *testing.T) {
			r := scenarios.Run(ctx, s, o)
			results = append(results, r)
			write()
			for _, res := range r.Report.Results {
				t.Logf("%-12s %-13s %s %s", res.ID, res.Status, res.CountString(), res.Note)
			}
			switch {
			case r.Skipped != "":
				t.Skip(r.Skipped)
			case !acceptable(r, tolerated):
				t.Errorf("%s: %s (err: %v); artifacts in %s", s.Name, r.Verdict(), r.Err, r.Dir)
			case !r.Passed():
				t.Logf("%s: %s only in checks tolerated by %s=%s", s.Name, r.Verdict(), envTolerate, os.Getenv(envTolerate))
			}
		})
	}
	write()
	t.Logf("summary: %s", filepath.Join(runDir, "summary.md"))
}

// acceptable reports whether r passed, or fell short only through
// INCONCLUSIVE results of tolerated checks.
func acceptable(r report.Scenario, tolerated map[string]bool) bool {
	if r.Passed() {
		return true
	}
	if r.Err != nil || len(r.Report.Results) == 0 {
		return false
	}
	for _, res := range r.Report.Results {
		if res.Status == check.Fail || (res.Status == check.Inconclusive && !tolerated[res.ID]) {
			return false
		}
	}
	return true
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func durEnv(t *testing.T, k string, d *time.Duration) {
	if v := os.Getenv(k); v != "" {
		var err error
		if *d, err = time.ParseDuration(v); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
	}
}

// version asks the binary for its version, for the summary header.
func version(bin string) string {
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		return "version unknown"
	}
	return strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
}
