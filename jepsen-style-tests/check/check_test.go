package check

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kudurru/kudurru/jepsen-style-tests/model"
)

func TestCleanRunPasses(t *testing.T) {
	rep := Run(cleanRun().h, DefaultConfig())
	for _, r := range rep.Results {
		want := Pass
		if r.ID == "I6" {
			want = NA
		}
		if r.Status != want {
			t.Errorf("%s: got %s (%s) %v, want %s", r.ID, r.Status, r.CountString(), r.Details, want)
		}
	}
	if v := rep.Verdict(); v != Pass {
		t.Errorf("verdict %s", v)
	}
	m := rep.Metrics
	if m.Convergence != 601*time.Millisecond {
		t.Errorf("convergence %s, want 601ms", m.Convergence)
	}
	if m.FailoverP50 < 0 || m.Availability != 1 {
		t.Errorf("metrics %+v", m)
	}
}

// TestCheckersCatchViolations feeds each checker the clean history with one
// violation and asserts FAIL.
func TestCheckersCatchViolations(t *testing.T) {
	cases := []struct {
		name    string
		checker func(model.History) Result
		mutate  func(b *builder)
		want    Status
	}{
		{"I1 lost write", LostWrites, func(b *builder) {
			f := b.find(func(o *model.Op) bool { return o.Kind == model.KindFinal && o.Node == "n2" })
			f.Values = f.Values[1:] // w-0 was acknowledged
		}, Fail},
		{"I1 failed write present", LostWrites, func(b *builder) {
			f := b.find(func(o *model.Op) bool { return o.Kind == model.KindFinal && o.Node == "n1" })
			w := b.find(func(o *model.Op) bool { return o.Kind == model.KindWrite && o.Outcome == model.Fail })
			f.Values = append(f.Values, w.Key)
		}, Fail},
		{"I1 unknown write may be absent", LostWrites, func(b *builder) {
			b.write(0, "n1", "w-unknown", 14, 1, model.Unknown, "outcome_unknown")
		}, Pass},
		{"I1 no final read", LostWrites, func(b *builder) {
			b.h = b.h.Filter(model.KindWrite)
		}, Inconclusive},
		{"I2 serial goes down", SerialMonotonic, func(b *builder) {
			b.soa("n2", 19.99, 3)
		}, Fail},
		{"I2 wrap-around is an increase", SerialMonotonic, func(b *builder) {
			b.h = dropKind(b.h, model.KindSOA)
			b.soa("n1", 30, 0xFFFFFFF0)
			b.soa("n1", 31, 5) // 0xFFFFFFF0 + 21 in RFC 1982 arithmetic
		}, Pass},
		{"I2 overlapping polls are not ordered", SerialMonotonic, func(b *builder) {
			o := b.soa("n1", 30, 1000)
			o.Complete = sec(32)
			b.soa("n1", 31, 999)
		}, Pass},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := cleanRun()
			tc.mutate(b)
			r := tc.checker(b.h)
			if r.Status != tc.want {
				t.Fatalf("got %s (%s) %v, want %s", r.Status, r.CountString(), r.Details, tc.want)
			}
		})
	}
}

func TestConvergence(t *testing.T) {
	cfg := DefaultConfig()
	cases := []struct {
		name   string
		mutate func(b *builder)
		want   Status
	}{
		{"converges late", func(b *builder) {
			b.h = dropKind(b.h, model.KindDigest)
			b.digest("n1", 1, 15.2, 500, 900, "d-final")
			b.digest("n2", 1, 15.2, 500, 900, "d-final")
			b.digest("n3", 1, 15.2, 150, 400, "d-old")
			for _, n := range nodes3 {
				b.digest(n, 2, 27, 500, 900, "d-final")
			}
		}, Fail},
		{"never converges", func(b *builder) {
			b.h = dropKind(b.h, model.KindDigest)
			b.digest("n1", 1, 15.2, 500, 900, "d-final")
			b.digest("n2", 1, 15.2, 500, 900, "d-final")
			b.digest("n3", 1, 15.2, 500, 901, "d-other")
		}, Fail},
		{"same index, different content", func(b *builder) {
			b.digest("n3", 3, 16, 500, 900, "d-divergent")
		}, Fail},
		{"no probes", func(b *builder) { b.h = dropKind(b.h, model.KindDigest, model.KindFinal) }, Inconclusive},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := cleanRun()
			tc.mutate(b)
			if r := Convergence(b.h, cfg); r.Status != tc.want {
				t.Fatalf("got %s (%s) %v, want %s", r.Status, r.CountString(), r.Details, tc.want)
			}
		})
	}
}

func TestAvailability(t *testing.T) {
	cfg := DefaultConfig()
	cases := []struct {
		name   string
		mutate func(b *builder)
		want   Status
	}{
		{"minority node stops answering", func(b *builder) {
			for i := range b.h {
				o := &b.h[i]
				if o.Kind == model.KindRead && o.Node == "n3" && o.Invoke > sec(6) && o.Invoke < sec(14) {
					o.Outcome, o.Code, o.Values = model.Unknown, "timeout", nil
				}
			}
		}, Fail},
		{"killed node is not counted", func(b *builder) {
			b.nemesis(16, model.NemKill, []string{"n2"}, nil)
			for i := range b.h {
				o := &b.h[i]
				if o.Kind == model.KindRead && o.Node == "n2" && o.Invoke > sec(16) && o.Invoke < sec(18) {
					o.Outcome, o.Code, o.Values = model.Unknown, "timeout", nil
				}
			}
			b.nemesis(17, model.NemStart, []string{"n2"}, nil)
		}, Pass},
		{"phantom value", func(b *builder) { b.read("n2", "ck", 19.5, model.OK, "never-written") }, Fail},
		{"value of a failed write", func(b *builder) {
			b.cas(50, "n3", "ck", "x", "from-failed", 10, 3, model.Fail, "no_quorum")
			b.read("n3", "ck", 19.5, model.OK, "from-failed")
		}, Fail},
		{"value of an unknown write", func(b *builder) {
			b.cas(50, "n1", "ck", "x", "from-unknown", 10, 3, model.Unknown, "outcome_unknown")
			b.read("n3", "ck", 19.5, model.OK, "from-unknown")
		}, Pass},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := cleanRun()
			tc.mutate(b)
			if r := Availability(b.h, cfg); r.Status != tc.want {
				t.Fatalf("got %s (%s) %v, want %s", r.Status, r.CountString(), r.Details, tc.want)
			}
		})
	}
}

func TestMinorityWrites(t *testing.T) {
	cfg := DefaultConfig()
	cases := []struct {
		name   string
		mutate func(b *builder)
		want   Status
	}{
		{"ack on the minority side", func(b *builder) {
			b.write(7, "n3", "w-false-ack", 8, 0.5, model.OK, "")
		}, Fail},
		{"minority write hangs", func(b *builder) {
			b.write(7, "n3", "w-slow", 8, 13, model.Unknown, "timeout")
		}, Fail},
		{"ack after the heal is allowed", func(b *builder) {
			b.write(7, "n3", "w-late", 14.5, 1, model.OK, "")
			b.h = append(b.h, model.Op{}) // keep End() past it
		}, Pass},
		{"no minority", func(b *builder) {
			for i := range b.h {
				b.h[i].Minority = nil
			}
		}, NA},
		{"no write reached the minority", func(b *builder) {
			var h model.History
			for _, o := range b.h {
				if o.Kind == model.KindWrite && o.Node == "n3" && o.Outcome == model.Fail {
					continue
				}
				h = append(h, o)
			}
			b.h = h
		}, Inconclusive},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := cleanRun()
			tc.mutate(b)
			if r := MinorityWrites(b.h, cfg); r.Status != tc.want {
				t.Fatalf("got %s (%s) %v, want %s", r.Status, r.CountString(), r.Details, tc.want)
			}
		})
	}
}

func foreignRun() *builder {
	b := cleanRun()
	b.add(model.Op{Kind: model.KindNemesis, Process: -1, Nemesis: model.NemForeign, Nodes: []string{"n2"},
		Value: "marker-123", Code: "c-other", Invoke: sec(16), Complete: sec(16), Outcome: model.OK})
	b.add(model.Op{Kind: model.KindRead, Node: "n2", Key: MarkerKey, Invoke: sec(17), Outcome: model.Fail, Code: "REFUSED"})
	b.add(model.Op{Kind: model.KindStatus, Node: "n2", Invoke: sec(17), State: "follower", ClusterID: "c-main", Outcome: model.OK})
	return b
}

func TestForeignData(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(b *builder)
		want   Status
	}{
		{"refused", func(b *builder) {}, Pass},
		{"marker served", func(b *builder) {
			b.add(model.Op{Kind: model.KindRead, Node: "n2", Key: MarkerKey, Invoke: sec(18), Outcome: model.OK, Code: "NOERROR", Values: []string{"marker-123"}})
		}, Fail},
		{"other cluster's ID adopted", func(b *builder) {
			b.add(model.Op{Kind: model.KindStatus, Node: "n2", Invoke: sec(18), ClusterID: "c-other", Ready: true, Outcome: model.OK})
		}, Fail},
		{"node never answered", func(b *builder) {
			var h model.History
			for _, o := range b.h {
				if o.Node == "n2" && o.Invoke >= sec(16) && (o.Kind == model.KindStatus || o.Kind == model.KindRead) {
					continue
				}
				h = append(h, o)
			}
			b.h = h
		}, Inconclusive},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := foreignRun()
			tc.mutate(b)
			if r := ForeignData(b.h); r.Status != tc.want {
				t.Fatalf("got %s (%s) %v, want %s", r.Status, r.CountString(), r.Details, tc.want)
			}
		})
	}
	if r := ForeignData(cleanRun().h); r.Status != NA {
		t.Errorf("without a foreign event: %s", r.Status)
	}
}

func TestLeaderPerTerm(t *testing.T) {
	b := cleanRun()
	if r := LeaderPerTerm(b.h); r.Status != Pass {
		t.Fatalf("clean: %s %v", r.Status, r.Details)
	}
	b.status("n3", 9, "leader", 2, "n3") // n1 leads term 2 too
	if r := LeaderPerTerm(b.h); r.Status != Fail {
		t.Fatalf("two leaders in term 2: %s", r.Status)
	}
	b = cleanRun()
	b.status("n3", 9, "leader", 2, "n1") // a racing poll: state and leader disagree
	if r := LeaderPerTerm(b.h); r.Status != Pass {
		t.Fatalf("racing poll: %s %v", r.Status, r.Details)
	}
}

func TestLinearizable(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ArtifactsDir = t.TempDir()
	if r := Linearizable(cleanRun().h, cfg); r.Status != Pass {
		t.Fatalf("clean: %s %v", r.Status, r.Details)
	}
	b := cleanRun()
	// A second writer wins from a value that was already replaced.
	b.cas(60, "n2", "ck", "c0", "stale-winner", 19, 0.1, model.OK, "")
	r := Linearizable(b.h, cfg)
	if r.Status != Fail {
		t.Fatalf("stale CAS accepted: %s", r.Status)
	}
	html, err := os.ReadFile(filepath.Join(cfg.ArtifactsDir, HTMLName))
	if err != nil || !strings.Contains(string(html), "stale-winner") {
		t.Fatalf("history.html not written or incomplete: %v", err)
	}
	if r := Linearizable(dropKind(cleanRun().h, model.KindCAS), cfg); r.Status != Inconclusive {
		t.Fatalf("no CAS: %s", r.Status)
	}
}

func TestThroughputGate(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MinThroughput = 1000
	rep := Run(cleanRun().h, cfg)
	for _, r := range rep.Results {
		if r.Status == Pass {
			t.Errorf("%s passed on a run below the minimum throughput", r.ID)
		}
	}
	if rep.Verdict() != Inconclusive {
		t.Errorf("verdict %s", rep.Verdict())
	}
	// A failure stays a failure.
	b := cleanRun()
	b.soa("n2", 19.99, 3)
	if v := Run(b.h, cfg).Verdict(); v != Fail {
		t.Errorf("verdict with a violation %s", v)
	}
}

func TestSerialLess(t *testing.T) {
	cases := []struct {
		a, b uint32
		want bool
	}{
		{1, 2, true}, {2, 1, false}, {5, 5, false},
		{0xFFFFFFFF, 0, true}, {0, 0xFFFFFFFF, false},
		{0, 1<<31 - 1, true},
	}
	for _, c := range cases {
		if got := serialLess(c.a, c.b); got != c.want {
			t.Errorf("serialLess(%d, %d) = %v", c.a, c.b, got)
		}
	}
}

func dropKind(h model.History, kinds ...model.Kind) model.History {
	var out model.History
	for _, o := range h {
		drop := false
		for _, k := range kinds {
			drop = drop || o.Kind == k
		}
		if !drop {
			out = append(out, o)
		}
	}
	return out
}

func TestFailoverMetric(t *testing.T) {
	b := &builder{}
	b.write(0, "n1", "w-a", 1, 0.01, model.OK, "")
	b.nemesis(5, model.NemPartition, []string{"n3"}, []string{"n3"})
	b.write(0, "n1", "w-b", 5.1, 4.9, model.Unknown, "outcome_unknown") // stuck on the old leader
	b.write(1, "n2", "w-c", 7, 0.5, model.OK, "")                       // n2: 2.5 s
	b.write(0, "n1", "w-d", 10, 0.5, model.OK, "")                      // n1: 5.5 s
	b.write(2, "n3", "w-e", 16, 0.5, model.OK, "")                      // n3 is in the minority: not a sample
	b.nemesis(15, model.NemFinalHeal, nodes3, nil)
	m := Measure(b.h, DefaultConfig())
	if m.FailoverP50 != 2500*time.Millisecond || m.FailoverP99 != 5500*time.Millisecond {
		t.Fatalf("failover p50 %s p99 %s", m.FailoverP50, m.FailoverP99)
	}
}
