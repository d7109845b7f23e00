package cluster

import (
	"errors"
	"time"

	"github.com/hashicorp/raft"
	"github.com/kudurru/kudurru/fsm"
	"github.com/prometheus/client_golang/prometheus"
)

// Outcomes of a proposal, the "outcome" label of propose_total.
const (
	outcomeCommitted = "committed"  // committed and applied; the command changed the state
	outcomeRejected  = "rejected"   // committed, and the command changed nothing (Result.Err)
	outcomeNotLeader = "not_leader" // definite failure: another node leads
	outcomeNoQuorum  = "no_quorum"  // definite failure: no leader within LeaderWait
	outcomeUnknown   = "unknown"    // may or may not have been committed
	outcomeShutdown  = "shutdown"   // definite failure: the node is closing
	outcomeInvalid   = "invalid"    // definite failure: the command could not be encoded
)

type metrics struct {
	leaderChanges    prometheus.Counter
	proposals        *prometheus.CounterVec
	proposeDuration  prometheus.Histogram
	localWrites      prometheus.Counter
	localWriteErrors prometheus.Counter
	localWriteTime   prometheus.Histogram
	promotions       prometheus.Counter
	collectors       []prometheus.Collector
}

// newMetrics builds the node's metrics. The raft gauges are read from r at
// scrape time, so they are never stale.
func newMetrics(r *raft.Raft) *metrics {
	m := &metrics{
		leaderChanges: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "kudurru", Subsystem: "raft", Name: "leader_changes_total",
			Help: "Times this node saw a new leader.",
		}),
		proposals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "kudurru", Subsystem: "cluster", Name: "propose_total",
			Help: "Writes proposed on this node, by outcome: committed, rejected (committed, changed nothing), not_leader, no_quorum, unknown, shutdown, invalid.",
		}, []string{"outcome"}),
		proposeDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "kudurru", Subsystem: "cluster", Name: "propose_duration_seconds",
			Help:    "Time from a proposal to its outcome.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		localWrites: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "kudurru", Subsystem: "cluster", Name: "localdb_writes_total",
			Help: "Refreshes of local.db.",
		}),
		localWriteErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "kudurru", Subsystem: "cluster", Name: "localdb_write_errors_total",
			Help: "Refreshes of local.db that failed.",
		}),
		localWriteTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "kudurru", Subsystem: "cluster", Name: "localdb_write_duration_seconds",
			Help:    "Time to refresh local.db.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		promotions: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "kudurru", Subsystem: "cluster", Name: "promotions_total",
			Help: "Non-voters this node promoted to voter as leader.",
		}),
	}
	state := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "kudurru", Subsystem: "raft", Name: "state",
		Help: "Raft state of this node: 0 follower, 1 candidate, 2 leader, 3 shutdown.",
	}, func() float64 { return float64(r.State()) })
	term := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "kudurru", Subsystem: "raft", Name: "term",
		Help: "Current Raft term.",
	}, func() float64 { return float64(r.CurrentTerm()) })
	commit := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "kudurru", Subsystem: "raft", Name: "commit_index",
		Help: "Highest log index known to be committed.",
	}, func() float64 { return float64(r.CommitIndex()) })
	applied := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "kudurru", Subsystem: "raft", Name: "applied_index",
		Help: "Highest log index applied to the state machine.",
	}, func() float64 { return float64(r.AppliedIndex()) })
	contact := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "kudurru", Subsystem: "raft", Name: "last_contact_seconds",
		Help: "Seconds since this follower last heard from the leader; 0 on the leader, -1 before any contact.",
	}, func() float64 { return lastContactSeconds(r) })
	m.collectors = []prometheus.Collector{
		m.leaderChanges, m.proposals, m.proposeDuration, m.localWrites, m.localWriteErrors,
		m.localWriteTime, m.promotions, state, term, commit, applied, contact,
	}
	return m
}

// register registers every collector, or none.
func (m *metrics) register(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	for i, c := range m.collectors {
		if err := reg.Register(c); err != nil {
			for _, done := range m.collectors[:i] {
				reg.Unregister(done)
			}
			return err
		}
	}
	return nil
}

func (m *metrics) observePropose(outcome string, d time.Duration) {
	m.proposals.WithLabelValues(outcome).Inc()
	m.proposeDuration.Observe(d.Seconds())
}

// outcomeOf names the outcome of a Propose call for the metrics.
func outcomeOf(res *fsm.Result, err error) string {
	switch {
	case err == nil && res != nil && res.Err != nil:
		return outcomeRejected
	case err == nil:
		return outcomeCommitted
	case errors.Is(err, ErrUnknownOutcome):
		return outcomeUnknown
	case errors.Is(err, ErrNotLeader):
		return outcomeNotLeader
	case errors.Is(err, ErrNoQuorum):
		return outcomeNoQuorum
	case errors.Is(err, ErrShutdown):
		return outcomeShutdown
	default:
		return outcomeInvalid
	}
}

func lastContactSeconds(r *raft.Raft) float64 {
	if r.State() == raft.Leader {
		return 0
	}
	t := r.LastContact()
	if t.IsZero() {
		return -1
	}
	return time.Since(t).Seconds()
}
