package cache

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the cache's Prometheus collectors. Hot-path counts live in
// per-shard atomics and are summed at scrape time, so a hit touches no
// shared cache line.
type metrics struct {
	reg        prometheus.Registerer
	collectors []prometheus.Collector

	stale    prometheus.Counter
	prefetch prometheus.Counter
	rejected *prometheus.CounterVec
}

const (
	namespace = "kudurru"
	subsystem = "cache"
)

func newMetrics(c *Cache, reg prometheus.Registerer) (*metrics, error) {
	sum := func(f func(*shard) float64) func() float64 {
		return func() float64 {
			var n float64
			for _, s := range c.shards {
				n += f(s)
			}
			return n
		}
	}
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: namespace, Subsystem: subsystem, Name: name, Help: help}
	}
	m := &metrics{
		reg: reg,
		stale: prometheus.NewCounter(prometheus.CounterOpts(opts("served_stale_total",
			"Expired answers served because upstreams failed (RFC 8767)."))),
		prefetch: prometheus.NewCounter(prometheus.CounterOpts(opts("prefetch_total",
			"Prefetch signals given for popular entries near expiry."))),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts(opts("uncacheable_total",
			"Responses not stored, by reason.")), []string{"reason"}),
	}
	m.collectors = []prometheus.Collector{
		m.stale, m.prefetch, m.rejected,
		prometheus.NewCounterFunc(prometheus.CounterOpts(opts("hits_total",
			"Lookups answered with fresh data.")),
			sum(func(s *shard) float64 { return float64(s.hits.Load()) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts(opts("misses_total",
			"Lookups not answered from the cache.")),
			sum(func(s *shard) float64 { return float64(s.misses.Load()) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts(opts("evictions_total",
			"Entries removed to stay within max_bytes.")),
			sum(func(s *shard) float64 { return float64(s.evicts.Load()) })),
		// A count of entries has no unit, so this gauge is the one name
		// without a unit suffix (CoreDNS dashboards expect *_cache_entries).
		prometheus.NewGaugeFunc(prometheus.GaugeOpts(opts("entries",
			"Entries stored.")),
			sum(func(s *shard) float64 { return float64(s.entries.Load()) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts(opts("size_bytes",
			"Accounted memory of stored entries.")),
			sum(func(s *shard) float64 { return float64(s.bytes.Load()) })),
	}
	if reg == nil {
		return m, nil
	}
	for i, col := range m.collectors {
		if err := reg.Register(col); err != nil {
			for _, done := range m.collectors[:i] {
				reg.Unregister(done)
			}
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return nil, errors.New("register cache metrics: already registered (one registry per cache)")
			}
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) reject(reason string) { m.rejected.WithLabelValues(reason).Inc() }

func (m *metrics) unregister() {
	if m.reg == nil {
		return
	}
	for _, col := range m.collectors {
		m.reg.Unregister(col)
	}
}
