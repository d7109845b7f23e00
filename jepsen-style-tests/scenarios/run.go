package scenarios

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"github.com/kudurru/kudurru/jepsen-style-tests/check"
	"github.com/kudurru/kudurru/jepsen-style-tests/faults"
	"github.com/kudurru/kudurru/jepsen-style-tests/harness"
	"github.com/kudurru/kudurru/jepsen-style-tests/model"
	"github.com/kudurru/kudurru/jepsen-style-tests/report"
	"github.com/kudurru/kudurru/jepsen-style-tests/traffic"
)

// Options configure the runner.
type Options struct {
	Bin       string // absolute path of kudurru
	OutDir    string // the run's artifacts; each scenario gets OutDir/<name>
	Token     string
	Zone      string
	Subnet    string
	ExtraArgs []string
	Check     check.Config
	Traffic   traffic.Config
	PreFault  time.Duration // workload before the first fault
	Hold      time.Duration // how long each fault stands
	PostHeal  time.Duration // reads after convergence
	FinalWait time.Duration // bound on the wait for convergence
	Settle    time.Duration // bound on each wait for a leader and ready nodes
	Seed      uint64
	KeepAll   bool // keep node data and logs of passing scenarios too
	Logf      func(format string, args ...any)
}

// DefaultOptions returns the suite's defaults.
func DefaultOptions(bin, out string) Options {
	zone := "jepsen.test."
	return Options{
		Bin: bin, OutDir: out, Token: "jepsen-token", Zone: zone, Subnet: "10.77.0.0/24",
		Check: check.DefaultConfig(), Traffic: traffic.DefaultConfig(zone),
		PreFault: 6 * time.Second, Hold: 15 * time.Second, PostHeal: 3 * time.Second,
		FinalWait: time.Minute, Settle: 30 * time.Second, Seed: uint64(time.Now().UnixNano()),
		Logf: func(string, ...any) {},
	}
}

// Run plays one scenario and checks its history. Node data and logs are
// removed when it passes (unless KeepAll) and kept otherwise.
func Run(ctx context.Context, s Scenario, o Options) (res report.Scenario) {
	dir := filepath.Join(o.OutDir, s.Name)
	res = report.Scenario{Name: s.Name, About: s.About, Nodes: s.Nodes, Dir: dir}
	start := time.Now()
	defer func() {
		res.Elapsed = time.Since(start)
		if res.Passed() && !o.KeepAll {
			_ = os.RemoveAll(filepath.Join(dir, "nodes"))
		}
	}()
	logf := func(format string, args ...any) { o.Logf("[%s] "+format, append([]any{s.Name}, args...)...) }
	if err := os.MkdirAll(dir, 0o755); err != nil {
		res.Err = err
		return res
	}
	c, err := harness.New(ctx, harness.Config{Bin: o.Bin, Nodes: s.Nodes, Dir: dir, Subnet: o.Subnet, Token: o.Token,
		Zone: o.Zone, ExtraArgs: o.ExtraArgs, ReadyTimeout: o.Settle, Logf: logf})
	if err != nil {
		res.Err = fmt.Errorf("create cluster: %w", err)
		return res
	}
	defer func() {
		if err := c.Close(); err != nil {
			logf("teardown: %v", err)
		}
	}()
	if err := c.Boot(ctx); err != nil {
		res.Err = fmt.Errorf("boot: %w", err)
		return res
	}
	logf("booted %d nodes", s.Nodes)
	rec, err := model.NewRecorder(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		res.Err = err
		return res
	}
	defer rec.Close()
	api := traffic.NewClient(o.Token, o.Check.WriteDeadline+3*time.Second)
	defer api.Close()
	tr := traffic.New(o.Traffic, api, rec, c.Targets)
	tr.StartObservers(ctx)
	tr.StartWrites(ctx)
	defer tr.Stop()

	ferr := wait(ctx, o.PreFault)
	if ferr == nil {
		env := &faults.Env{C: c, Rec: rec, Logf: logf, Rand: rand.New(rand.NewPCG(o.Seed, 0x6b7564)), Hold: o.Hold, Settle: o.Settle}
		ferr = s.Fault(ctx, env)
	}
	if errors.Is(ferr, faults.ErrUnsupported) {
		res.Skipped = ferr.Error()
		return res
	}
	if ferr != nil {
		logf("fault: %v", ferr)
	}
	// No new writes from here; the heal comes next so that writes in
	// flight on the minority side end promptly, then they are awaited.
	tr.CancelWrites()
	finalHeal(ctx, c, rec, logf)
	tr.StopWrites()
	converge(ctx, c, api, rec, o)
	_ = wait(ctx, o.PostHeal)
	tr.Stop()
	finalRead(ctx, c, api, rec, o.Zone)
	if err := rec.Close(); err != nil {
		logf("history: %v", err)
	}
	cc := o.Check
	cc.ArtifactsDir = dir
	res.Report = check.Run(rec.History(), cc)
	res.Err = ferr
	return res
}

// wait sleeps d unless ctx ends first.
func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// finalHeal removes every fault: drop rules, netem, paused and stopped
// members; then records the final-heal event naming the members that must
// converge.
func finalHeal(ctx context.Context, c *harness.Cluster, rec *model.Recorder, logf func(string, ...any)) {
	if err := c.Heal(ctx); err != nil {
		logf("final heal: %v", err)
	}
	if err := c.ClearNetem(ctx); err != nil {
		logf("final heal: netem: %v", err)
	}
	for _, n := range c.Members() {
		switch {
		case !n.Running():
			if err := c.Start(n, false, nil); err != nil {
				logf("final heal: start %s: %v", n.ID, err)
				continue
			}
			rec.Nemesis(model.NemStart, "final heal: start "+n.ID, []string{n.ID}, nil)
		case !n.Serving():
			if err := n.Resume(); err == nil {
				rec.Nemesis(model.NemResume, "final heal: resume "+n.ID, []string{n.ID}, nil)
			}
		}
	}
	rec.Nemesis(model.NemFinalHeal, "every fault removed", harness.IDs(c.Members()), c.Minority())
	logf("final heal; members %v", harness.IDs(c.Members()))
}

// converge probes every member's zone in rounds until all serve the same
// serial and content, bounded by FinalWait.
func converge(ctx context.Context, c *harness.Cluster, api *traffic.Client, rec *model.Recorder, o Options) {
	deadline := time.Now().Add(o.FinalWait)
	for round := 1; time.Now().Before(deadline) && ctx.Err() == nil; round++ {
		var first model.Op
		same := true
		for i, n := range c.Members() {
			op := readZone(ctx, api, n, o.Zone, rec, model.KindDigest)
			op.Round = round
			op = rec.Add(op)
			if i == 0 {
				first = op
			}
			same = same && op.Outcome == model.OK && op.Digest == first.Digest && op.Serial == first.Serial
		}
		if same {
			return
		}
		_ = wait(ctx, 200*time.Millisecond)
	}
}

// uniqueKey matches the owner names of the unique-write workload.
var uniqueKey = regexp.MustCompile(`^w\d+-\d+$`)

// readZone reads n's zone from its local View into an op of kind k.
func readZone(ctx context.Context, api *traffic.Client, n *harness.Node, zone string, rec *model.Recorder, k model.Kind) model.Op {
	op := model.Op{Kind: k, Process: -2, Node: n.ID, Invoke: rec.Now()}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	z, err := api.Zone(rctx, n.APIURL(), zone)
	cancel()
	op.Complete = rec.Now()
	if err != nil {
		op.Outcome, op.Error = model.Fail, err.Error()
		return op
	}
	op.Outcome, op.Serial, op.Index, op.Digest = model.OK, z.Serial, z.Index, z.Digest()
	if k == model.KindFinal {
		op.KV = map[string]string{}
		for name, vals := range z.TXTSets(zone) {
			switch {
			case uniqueKey.MatchString(name):
				op.Values = append(op.Values, name)
			case len(vals) > 0:
				op.KV[name] = vals[0]
			}
		}
		slices.Sort(op.Values)
	}
	return op
}

// finalRead records every member's final zone.
func finalRead(ctx context.Context, c *harness.Cluster, api *traffic.Client, rec *model.Recorder, zone string) {
	for _, n := range c.Members() {
		rec.Add(readZone(ctx, api, n, zone, rec, model.KindFinal))
	}
}
