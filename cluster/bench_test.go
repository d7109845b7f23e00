package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The benchmarks share 3-node loopback clusters (real TCP, real bolt files,
// fsync on), created on first use and closed by TestMain, because a
// benchmark function runs several times and a cluster takes seconds to
// form.

// benchTB stands in for testing.TB where the shared clusters need one: it
// outlives any single benchmark. Only the methods below are used.
type benchTB struct {
	testing.TB
	dir      string
	mu       sync.Mutex
	cleanups []func()
}

func (b *benchTB) Helper() {}
func (b *benchTB) TempDir() string {
	d, err := os.MkdirTemp(b.dir, "n")
	if err != nil {
		panic(err)
	}
	return d
}
func (b *benchTB) Cleanup(f func())    { b.mu.Lock(); b.cleanups = append(b.cleanups, f); b.mu.Unlock() }
func (b *benchTB) Log(args ...any)     {}
func (b *benchTB) Logf(string, ...any) {}
func (b *benchTB) Errorf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench cluster: "+format+"\n", args...)
}
func (b *benchTB) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

type benchClusters struct {
	mu       sync.Mutex
	tb       *benchTB
	clusters map[string]*testCluster
}

var bench benchClusters

// benchCluster returns the shared cluster of the given name, creating it
// with mod applied to each node's config.
func benchCluster(b *testing.B, name string, mod func(*Config)) *testCluster {
	bench.mu.Lock()
	defer bench.mu.Unlock()
	if tc := bench.clusters[name]; tc != nil {
		return tc
	}
	if bench.tb == nil {
		dir, err := os.MkdirTemp("", "kudurru-bench-")
		if err != nil {
			b.Fatal(err)
		}
		bench.tb = &benchTB{dir: dir}
		bench.clusters = map[string]*testCluster{}
	}
	start := time.Now()
	tc := newTestCluster(bench.tb)
	tc.logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	node := func(id string) *testNode {
		tn := tc.addNode(name + "-" + id)
		tn.cfgMod = mod
		return tn
	}
	n1 := node("n1")
	n1.mustStart(func(c *Config) { c.Bootstrap = true })
	tc.waitVoters(1)
	for _, id := range []string{"n2", "n3"} {
		tn := node(id)
		n := tn.mustStart(func(c *Config) { c.Join = []string{n1.url()} })
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := n.JoinCluster(ctx)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
	}
	tc.waitVoters(3)
	tc.mustPropose(createZone(b, benchZone))
	b.Logf("cluster %s formed in %s", name, time.Since(start))
	bench.clusters[name] = tc
	return tc
}

func closeBenchCluster() {
	bench.mu.Lock()
	defer bench.mu.Unlock()
	if bench.tb == nil {
		return
	}
	for i := len(bench.tb.cleanups) - 1; i >= 0; i-- {
		bench.tb.cleanups[i]()
	}
	_ = os.RemoveAll(bench.tb.dir)
}

const benchZone = "bench.test."

// lanConfig keeps DefaultConfig's Raft timings (the LAN defaults).
func lanConfig(c *Config) {
	d := DefaultConfig()
	c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = d.HeartbeatTimeout, d.ElectionTimeout, d.LeaderLeaseTimeout
	c.CommitTimeout, c.ApplyTimeout, c.LeaderWait = d.CommitTimeout, d.ApplyTimeout, d.LeaderWait
	c.LocalDBDebounce = d.LocalDBDebounce
}

// batchCounter reads, from a node's registry, how many commands its FSM
// applied and in how many ApplyBatch calls.
func batchCounter(reg *prometheus.Registry) (cmds, batches float64) {
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		switch mf.GetName() {
		case "kudurru_fsm_commands_total":
			for _, m := range mf.GetMetric() {
				cmds += m.GetCounter().GetValue()
			}
		case "kudurru_fsm_apply_duration_seconds":
			for _, m := range mf.GetMetric() {
				batches += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return cmds, batches
}

func leaderNode(tc *testCluster) (*Node, *testNode) {
	l := tc.leader(10 * time.Second)
	for _, tn := range tc.nodes {
		if tn.node() == l {
			return l, tn
		}
	}
	return l, nil
}

// BenchmarkProposeSequential: one proposer, each RRset change committed on
// a majority (with fsync) before the next is sent.
func BenchmarkProposeSequential(b *testing.B) {
	tc := benchCluster(b, "lan", lanConfig)
	l, _ := leaderNode(tc)
	ctx := context.Background()
	i := 0
	for b.Loop() {
		res, err := l.Propose(ctx, setA(b, benchZone, fmt.Sprintf("s%d", i%1000), "192.0.2.1"))
		if err != nil || res.Err != nil {
			b.Fatal(err, res)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "changes/s")
}

// BenchmarkProposeParallel: many concurrent proposers. Raft's leader loop
// drains every waiting Apply into one batch (group commit: one disk write
// and one AppendEntries round for the batch) and the FSM applies a batch
// in one ApplyBatch call; entries/batch shows it.
func BenchmarkProposeParallel(b *testing.B) {
	for _, per := range []int{8, 32, 128} {
		proposers := per * runtime.GOMAXPROCS(0)
		b.Run(fmt.Sprintf("proposers=%d", proposers), func(b *testing.B) {
			tc := benchCluster(b, "lan", lanConfig)
			l, ltn := leaderNode(tc)
			ctx := context.Background()
			var ctr atomic.Int64
			cmds0, batches0 := batchCounter(ltn.reg)
			b.SetParallelism(per)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := ctr.Add(1)
					res, err := l.Propose(ctx, setA(b, benchZone, fmt.Sprintf("p%d", i%5000), "192.0.2.2"))
					if err != nil || res.Err != nil {
						b.Error(err, res)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "changes/s")
			if cmds, batches := batchCounter(ltn.reg); batches > batches0 {
				b.ReportMetric((cmds-cmds0)/(batches-batches0), "entries/batch")
			}
		})
	}
}

// BenchmarkFollowerVisible: a change proposed on the leader until a
// follower's FSM.WaitIndex returns. Each change is alone in flight, so a
// follower learns of its commit from the leader's next AppendEntries,
// which Raft sends within CommitTimeout (random in [1, 2) x) when no other
// write carries it: the sub-benchmarks compare raft's default (50 ms) with
// kudurru's (10 ms).
func BenchmarkFollowerVisible(b *testing.B) {
	for _, ct := range []time.Duration{50 * time.Millisecond, 10 * time.Millisecond} {
		b.Run(fmt.Sprintf("commit_timeout=%s", ct), func(b *testing.B) {
			tc := benchCluster(b, "commit-"+ct.String(), func(c *Config) { lanConfig(c); c.CommitTimeout = ct })
			l, _ := leaderNode(tc)
			var f *Node
			for _, n := range tc.runningNodes() {
				if n != l {
					f = n
					break
				}
			}
			ctx := context.Background()
			var lat, afterAck []time.Duration
			i := 0
			for b.Loop() {
				start := time.Now()
				res, err := l.Propose(ctx, setA(b, benchZone, fmt.Sprintf("v%d", i%1000), "192.0.2.3"))
				if err != nil || res.Err != nil {
					b.Fatal(err, res)
				}
				acked := time.Now()
				if err := f.FSM().WaitIndex(ctx, res.Index); err != nil {
					b.Fatal(err)
				}
				done := time.Now()
				lat = append(lat, done.Sub(start))
				afterAck = append(afterAck, done.Sub(acked))
				i++
			}
			slices.Sort(lat)
			slices.Sort(afterAck)
			pct := func(s []time.Duration, p float64) float64 {
				return float64(s[min(len(s)-1, int(p*float64(len(s))))].Microseconds()) / 1000
			}
			b.ReportMetric(pct(lat, 0.5), "p50-ms")
			b.ReportMetric(pct(lat, 0.99), "p99-ms")
			b.ReportMetric(pct(afterAck, 0.5), "p50-after-ack-ms")
		})
	}
}
