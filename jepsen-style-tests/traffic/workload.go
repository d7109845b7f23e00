package traffic

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/kudurru/kudurru/jepsen-style-tests/model"
	"github.com/miekg/dns"
)

// MarkerKey is the owner name the I6 scenario plants in another cluster's
// zone; the readers ask every node for it.
const MarkerKey = "foreign-marker"

// Target is one node as the client sees it.
type Target struct {
	ID  string // node ID
	API string // base URL of its HTTP API
	DNS string // host:port of its DNS listener
}

// Config sizes the workloads.
type Config struct {
	Zone            string        // the zone written and read, absolute
	Writers         int           // unique-write workers
	WriteInterval   time.Duration // pause between one worker's writes
	CASWorkers      int           // compare-and-set workers
	CASKeys         int           // owner names the CAS workers contend on
	CASInterval     time.Duration // pause between one CAS worker's writes
	ReadRate        float64       // DNS reads per second per node
	SOAInterval     time.Duration // serial poll interval per node
	StatusInterval  time.Duration // /v1/cluster poll interval per node
	DNSTimeout      time.Duration // one DNS query
	StatusTimeout   time.Duration // one status poll or leader read
	MaxOpsPerWorker int           // bound on any one loop
}

// DefaultConfig returns modest rates that suit a 2-core machine.
func DefaultConfig(zone string) Config {
	return Config{
		Zone: zone, Writers: 3, WriteInterval: 30 * time.Millisecond,
		CASWorkers: 3, CASKeys: 3, CASInterval: 50 * time.Millisecond,
		ReadRate: 20, SOAInterval: 100 * time.Millisecond, StatusInterval: 250 * time.Millisecond,
		DNSTimeout: time.Second, StatusTimeout: 2 * time.Second, MaxOpsPerWorker: 200000,
	}
}

// Traffic runs the workloads against the nodes that targets returns (read
// again before every operation, so nodes that join are picked up and
// nodes that are retired are left alone). Every goroutine it starts is
// tracked and ended by StopWrites or Stop.
type Traffic struct {
	cfg     Config
	api     *Client
	rec     *model.Recorder
	targets func() []Target

	writes    sync.WaitGroup // writers and CAS workers
	observers sync.WaitGroup // readers and pollers, and their supervisor

	mu          sync.Mutex // guards the fields below
	stopWrites  context.CancelFunc
	stopObserve context.CancelFunc
	recent      []string // recently acknowledged unique keys, a ring
	recentAt    int
}

// New returns an idle Traffic.
func New(cfg Config, api *Client, rec *model.Recorder, targets func() []Target) *Traffic {
	return &Traffic{cfg: cfg, api: api, rec: rec, targets: targets, recent: make([]string, 0, 64)}
}

// StartWrites starts the unique-write and CAS workers.
func (t *Traffic) StartWrites(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	t.mu.Lock()
	t.stopWrites = cancel
	t.mu.Unlock()
	for w := range t.cfg.Writers {
		t.writes.Go(func() { t.writer(ctx, w) })
	}
	for w := range t.cfg.CASWorkers {
		t.writes.Go(func() { t.casWorker(ctx, w) })
	}
}

// CancelWrites tells the write workloads to stop issuing writes; it does
// not wait for the writes in flight.
func (t *Traffic) CancelWrites() {
	t.mu.Lock()
	stop := t.stopWrites
	t.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// StopWrites ends the write workloads and waits for them; writes in flight
// finish and are recorded.
func (t *Traffic) StopWrites() {
	t.CancelWrites()
	t.writes.Wait()
}

// StartObservers starts, for every node, a DNS reader, an SOA poller and a
// status poller.
func (t *Traffic) StartObservers(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	t.mu.Lock()
	t.stopObserve = cancel
	t.mu.Unlock()
	t.observers.Go(func() { t.supervise(ctx) })
}

// Stop ends every workload and waits for them.
func (t *Traffic) Stop() {
	t.StopWrites()
	t.mu.Lock()
	stop := t.stopObserve
	t.mu.Unlock()
	if stop != nil {
		stop()
	}
	t.observers.Wait()
}

// pick returns the i-th target, round robin, and false when there is none.
func (t *Traffic) pick(i int) (Target, bool) {
	ts := t.targets()
	if len(ts) == 0 {
		return Target{}, false
	}
	return ts[i%len(ts)], true
}

// sleep waits d or until ctx ends; it reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tm.C:
		return true
	}
}

var ttl60 = func() *uint32 { v := uint32(60); return &v }()

// writer writes unique TXT records w<worker>-<n>, each holding its own
// name, to the nodes in turn.
func (t *Traffic) writer(ctx context.Context, w int) {
	gen := 0
	for n := 0; n < t.cfg.MaxOpsPerWorker && ctx.Err() == nil; n++ {
		tg, ok := t.pick(w + n)
		if !ok {
			if !sleep(ctx, 100*time.Millisecond) {
				return
			}
			continue
		}
		key := fmt.Sprintf("w%d-%d", w, n)
		op := model.Op{Kind: model.KindWrite, Process: w + 1000*gen, Worker: w, Node: tg.ID, Key: key, Value: key, Invoke: t.rec.Now()}
		res := t.api.Patch(context.WithoutCancel(ctx), tg.API, t.cfg.Zone, []Change{
			{Op: "replace", Name: key, Type: "TXT", TTL: ttl60, Records: []string{Quote(key)}},
		})
		t.rec.Add(fill(op, res, t.rec.Now()))
		switch res.Outcome {
		case model.OK:
			t.remember(key)
		case model.Unknown:
			gen++ // an unknown write never returns: continue as a new process
		}
		if !sleep(ctx, t.cfg.WriteInterval) {
			return
		}
	}
}

func fill(op model.Op, r Result, now int64) model.Op {
	op.Complete, op.Outcome, op.Status, op.Code, op.Error, op.Index, op.Serial = now, r.Outcome, r.Status, r.Code, r.Err, r.Index, r.Serial
	return op
}

func (t *Traffic) remember(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.recent) < cap(t.recent) {
		t.recent = append(t.recent, key)
		return
	}
	t.recent[t.recentAt] = key
	t.recentAt = (t.recentAt + 1) % len(t.recent)
}

func (t *Traffic) recentKey(rng *rand.Rand) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.recent) == 0 {
		return "w0-0"
	}
	return t.recent[rng.IntN(len(t.recent))]
}

// casWorker runs compare-and-set batches: check that key holds the value
// the worker last knew, then replace it with a unique new value. After a
// mismatch or an unknown outcome it re-reads the key from the leader.
func (t *Traffic) casWorker(ctx context.Context, w int) {
	rng := rand.New(rand.NewPCG(uint64(w), 0x6a657073656e))
	known := map[string]string{}
	gen := 0
	for n := 0; n < t.cfg.MaxOpsPerWorker && ctx.Err() == nil; n++ {
		tg, ok := t.pick(w + n)
		if !ok {
			if !sleep(ctx, 100*time.Millisecond) {
				return
			}
			continue
		}
		key := fmt.Sprintf("c%d", rng.IntN(max(1, t.cfg.CASKeys)))
		expect, next := known[key], fmt.Sprintf("p%d-%d", w, n)
		check := Change{Op: "check", Name: key, Type: "TXT"}
		if expect != "" {
			check.Records = []string{Quote(expect)}
		}
		proc := 100 + w + 1000*gen
		op := model.Op{Kind: model.KindCAS, Process: proc, Worker: 100 + w, Node: tg.ID, Key: key,
			Expect: model.Str(expect), Value: next, Invoke: t.rec.Now()}
		res := t.api.Patch(context.WithoutCancel(ctx), tg.API, t.cfg.Zone, []Change{
			check, {Op: "replace", Name: key, Type: "TXT", TTL: ttl60, Records: []string{Quote(next)}},
		})
		t.rec.Add(fill(op, res, t.rec.Now()))
		switch {
		case res.Status == 400:
			return // the API refuses the batch itself (e.g. no "check" op): retrying only adds load
		case res.Outcome == model.OK:
			known[key] = next
		case res.Outcome == model.Unknown || res.Code == model.CodePrecondition:
			if res.Outcome == model.Unknown {
				gen++
			}
			rctx, cancel := context.WithTimeout(ctx, t.cfg.StatusTimeout)
			vals, err := t.api.TXT(rctx, tg.API, t.cfg.Zone, key)
			cancel()
			if err == nil {
				known[key] = ""
				if len(vals) > 0 {
					known[key] = vals[0]
				}
			}
		}
		if !sleep(ctx, t.cfg.CASInterval) {
			return
		}
	}
}

// supervise starts the per-node observers for every target it has not
// seen yet, until ctx ends.
func (t *Traffic) supervise(ctx context.Context) {
	started := map[string]bool{}
	for i := 0; i < t.cfg.MaxOpsPerWorker; i++ {
		for _, tg := range t.targets() {
			if started[tg.ID] {
				continue
			}
			started[tg.ID] = true
			t.observers.Go(func() { t.reader(ctx, tg.ID) })
			t.observers.Go(func() { t.soaPoller(ctx, tg.ID) })
			t.observers.Go(func() { t.statusPoller(ctx, tg.ID) })
		}
		if !sleep(ctx, 200*time.Millisecond) {
			return
		}
	}
}

// current returns the target with this ID, or false once it is retired.
func (t *Traffic) current(id string) (Target, bool) {
	for _, tg := range t.targets() {
		if tg.ID == id {
			return tg, true
		}
	}
	return Target{}, false
}

// every calls f for node id every interval until ctx ends, the node is
// retired, or the loop bound is reached.
func (t *Traffic) every(ctx context.Context, id string, interval time.Duration, f func(Target, int)) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for i := 0; i < t.cfg.MaxOpsPerWorker; i++ {
		tg, ok := t.current(id)
		if !ok {
			return
		}
		f(tg, i)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// reader queries one node at ReadRate: CAS keys (whose values the
// checkers verify), recently written unique keys, and the I6 marker.
func (t *Traffic) reader(ctx context.Context, id string) {
	rng := rand.New(rand.NewPCG(uint64(len(id)), 0x7265616465))
	interval := time.Duration(float64(time.Second) / max(t.cfg.ReadRate, 0.1))
	t.every(ctx, id, interval, func(tg Target, i int) {
		var key string
		switch i % 4 {
		case 0, 1:
			key = fmt.Sprintf("c%d", rng.IntN(max(1, t.cfg.CASKeys)))
		case 2:
			key = t.recentKey(rng)
		default:
			key = MarkerKey
		}
		inv := t.rec.Now()
		a := Query(ctx, tg.DNS, key+"."+t.cfg.Zone, dns.TypeTXT, t.cfg.DNSTimeout)
		if ctx.Err() != nil {
			return // cut short by the end of the run, not by the node
		}
		t.rec.Add(model.Op{Kind: model.KindRead, Process: 10000, Node: id, Key: key, Invoke: inv, Complete: t.rec.Now(),
			Outcome: a.Outcome, Code: a.Code, Error: a.Err, Values: a.Values})
	})
}

// soaPoller asks one node for the zone's SOA.
func (t *Traffic) soaPoller(ctx context.Context, id string) {
	t.every(ctx, id, t.cfg.SOAInterval, func(tg Target, _ int) {
		inv := t.rec.Now()
		a := Query(ctx, tg.DNS, t.cfg.Zone, dns.TypeSOA, t.cfg.DNSTimeout)
		if ctx.Err() != nil {
			return
		}
		if a.Outcome == model.OK && a.Serial == 0 {
			a.Outcome, a.Code = model.Fail, a.Code+"/nosoa"
		}
		t.rec.Add(model.Op{Kind: model.KindSOA, Process: 20000, Node: id, Invoke: inv, Complete: t.rec.Now(),
			Outcome: a.Outcome, Code: a.Code, Error: a.Err, Serial: a.Serial})
	})
}

// statusPoller reads GET /v1/cluster from one node.
func (t *Traffic) statusPoller(ctx context.Context, id string) {
	t.every(ctx, id, t.cfg.StatusInterval, func(tg Target, _ int) {
		inv := t.rec.Now()
		rctx, cancel := context.WithTimeout(ctx, t.cfg.StatusTimeout)
		st, err := t.api.Status(rctx, tg.API)
		cancel()
		if ctx.Err() != nil {
			return
		}
		op := model.Op{Kind: model.KindStatus, Process: 30000, Node: id, Invoke: inv, Complete: t.rec.Now(), Outcome: model.OK}
		if err != nil {
			op.Outcome, op.Error = model.Fail, err.Error()
		} else {
			op.State, op.Term, op.Leader, op.Ready, op.ClusterID, op.Index = st.State, st.Term, st.LeaderID, st.Ready, st.ClusterID, st.ServingIndex
		}
		t.rec.Add(op)
	})
}
