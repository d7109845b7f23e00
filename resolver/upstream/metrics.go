package upstream

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

const (
	namespace = "kudurru"
	subsystem = "upstream"
)

// metrics are the forwarder's Prometheus collectors, labelled by upstream
// address (bounded by the configuration).
type metrics struct {
	reg        prometheus.Registerer
	collectors []prometheus.Collector

	requests     *prometheus.CounterVec   // upstream
	responses    *prometheus.CounterVec   // upstream, rcode
	errors       *prometheus.CounterVec   // upstream, reason
	duration     *prometheus.HistogramVec // upstream
	dropped      *prometheus.CounterVec   // upstream
	tcpFallbacks *prometheus.CounterVec   // upstream
	healthy      *prometheus.GaugeVec     // upstream
	probeFails   *prometheus.CounterVec   // upstream
	coalesced    prometheus.Counter
	exchanges    *prometheus.CounterVec // result
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: namespace, Subsystem: subsystem, Name: name, Help: help}
	}
	up := []string{"upstream"}
	m := &metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts(opts("requests_total",
			"Queries sent to an upstream, TCP fallbacks included.")), up),
		responses: prometheus.NewCounterVec(prometheus.CounterOpts(opts("responses_total",
			"Answers received from an upstream, by rcode.")), []string{"upstream", "rcode"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts(opts("errors_total",
			"Failed attempts at an upstream, by reason.")), []string{"upstream", "reason"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "request_duration_seconds",
			Help:    "Time from sending a query to an upstream to its answer.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, up),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts(opts("replies_dropped_total",
			"Packets from an upstream dropped because they did not match a pending query (ID, question, QR).")), up),
		tcpFallbacks: prometheus.NewCounterVec(prometheus.CounterOpts(opts("tcp_fallbacks_total",
			"UDP answers with TC=1 retried over TCP.")), up),
		// A 0/1 state has no unit: the one metric without a unit suffix.
		healthy: prometheus.NewGaugeVec(prometheus.GaugeOpts(opts("healthy",
			"1 when the upstream is considered healthy, 0 when it is down.")), up),
		probeFails: prometheus.NewCounterVec(prometheus.CounterOpts(opts("healthcheck_failures_total",
			"Health probes that got no valid answer.")), up),
		coalesced: prometheus.NewCounter(prometheus.CounterOpts(opts("coalesced_total",
			"Queries answered by joining an identical query already in flight."))),
		exchanges: prometheus.NewCounterVec(prometheus.CounterOpts(opts("exchanges_total",
			"Forwarded queries by outcome: answered, failed, no_upstream.")), []string{"result"}),
	}
	m.collectors = []prometheus.Collector{
		m.requests, m.responses, m.errors, m.duration, m.dropped,
		m.tcpFallbacks, m.healthy, m.probeFails, m.coalesced, m.exchanges,
	}
	if reg == nil {
		return m, nil
	}
	for i, c := range m.collectors {
		if err := reg.Register(c); err != nil {
			for _, done := range m.collectors[:i] {
				reg.Unregister(done)
			}
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return nil, errors.New("register upstream metrics: already registered (one registry per forwarder)")
			}
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) unregister() {
	if m.reg == nil {
		return
	}
	for _, c := range m.collectors {
		m.reg.Unregister(c)
	}
}

// errReason names an attempt's failure for the errors_total label.
func errReason(err error) string {
	switch {
	case errors.Is(err, ErrTimeout):
		return "timeout"
	case errors.Is(err, ErrOverloaded):
		return "overloaded"
	case errors.Is(err, errBadReply):
		return "bad_reply"
	case errors.Is(err, errConnLost):
		return "conn_lost"
	case errors.Is(err, ErrClosed):
		return "closed"
	default:
		return "network"
	}
}
