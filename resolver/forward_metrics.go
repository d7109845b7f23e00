package resolver

import (
	"github.com/prometheus/client_golang/prometheus"
)

// fwdMetrics are the forwarding stage's collectors (subsystem dns), with
// every child resolved once so that a query does no label lookup. The cache
// and the upstreams have their own (kudurru_cache_*, kudurru_upstream_*).
type fwdMetrics struct {
	reg        prometheus.Registerer
	collectors []prometheus.Collector

	// kudurru_dns_forward_replies_total{result}
	cached, upstream, stale, servfail, noUpstream, notReady prometheus.Counter
	// kudurru_dns_recursion_refused_total
	refused prometheus.Counter
	// kudurru_dns_cname_chases_total{result}
	chaseDone, chasePartial prometheus.Counter
	// kudurru_dns_zone_splices_total
	spliced prometheus.Counter
	// kudurru_dns_prefetches_total{result}
	prefetchDone, prefetchFailed, prefetchDropped prometheus.Counter
	// kudurru_dns_cache_dumps_total{result}, _dump_size_bytes,
	// _restores_total{result}
	dumpOK, dumpError                       prometheus.Counter
	dumpSize                                prometheus.Gauge
	restoreOK, restoreRefused, restoreError prometheus.Counter
}

func newFwdMetrics(reg prometheus.Registerer) (*fwdMetrics, error) {
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: name, Help: help}
	}
	replies := prometheus.NewCounterVec(prometheus.CounterOpts(opts("forward_replies_total",
		"Replies to names outside the served zones, by where the answer came from: "+
			"cache, upstream, stale (RFC 8767), servfail (every upstream failed), no_upstream (no forward zone covers the name), "+
			"not_ready (SERVFAIL: the node has no zone state yet).")),
		[]string{"result"})
	refused := prometheus.NewCounter(prometheus.CounterOpts(opts("recursion_refused_total",
		"Queries for names outside the served zones refused because the client is not in recursion.allow.")))
	chases := prometheus.NewCounterVec(prometheus.CounterOpts(opts("cname_chases_total",
		"CNAME chains leaving the served zones, by result: answered (completed from cache or upstream) or partial (the zones' part only).")),
		[]string{"result"})
	spliced := prometheus.NewCounter(prometheus.CounterOpts(opts("zone_splices_total",
		"Upstream answers whose CNAME chain entered a served zone: completed from the zones and not cached.")))
	prefetches := prometheus.NewCounterVec(prometheus.CounterOpts(opts("prefetches_total",
		"Background refreshes of popular cache entries near expiry, by result: refreshed, failed, dropped (too many at once).")),
		[]string{"result"})
	dumps := prometheus.NewCounterVec(prometheus.CounterOpts(opts("cache_dumps_total",
		"Cache dumps written to node-local storage, by result.")), []string{"result"})
	dumpSize := prometheus.NewGauge(prometheus.GaugeOpts(opts("cache_dump_size_bytes",
		"Size of the last cache dump written.")))
	restores := prometheus.NewCounterVec(prometheus.CounterOpts(opts("cache_restores_total",
		"Cache dumps read at start, by result: ok, refused (damaged, foreign, newer or too old), error (storage).")),
		[]string{"result"})

	m := &fwdMetrics{
		reg:        reg,
		collectors: []prometheus.Collector{replies, refused, chases, spliced, prefetches, dumps, dumpSize, restores},
		cached:     replies.WithLabelValues("cache"), upstream: replies.WithLabelValues("upstream"),
		stale: replies.WithLabelValues("stale"), servfail: replies.WithLabelValues("servfail"),
		noUpstream: replies.WithLabelValues("no_upstream"), notReady: replies.WithLabelValues("not_ready"),
		refused:   refused,
		chaseDone: chases.WithLabelValues("answered"), chasePartial: chases.WithLabelValues("partial"),
		spliced:      spliced,
		prefetchDone: prefetches.WithLabelValues("refreshed"), prefetchFailed: prefetches.WithLabelValues("failed"),
		prefetchDropped: prefetches.WithLabelValues("dropped"),
		dumpOK:          dumps.WithLabelValues("ok"), dumpError: dumps.WithLabelValues("error"),
		dumpSize:  dumpSize,
		restoreOK: restores.WithLabelValues("ok"), restoreRefused: restores.WithLabelValues("refused"),
		restoreError: restores.WithLabelValues("error"),
	}
	for i, c := range m.collectors {
		if err := reg.Register(c); err != nil {
			for _, done := range m.collectors[:i] {
				reg.Unregister(done)
			}
			return nil, err
		}
	}
	return m, nil
}

// unregister removes the collectors (a stage that could not be built).
func (m *fwdMetrics) unregister() {
	for _, c := range m.collectors {
		m.reg.Unregister(c)
	}
}
