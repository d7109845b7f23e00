package fsm

import (
	"github.com/kudurru/kudurru/fsm/zone"
	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	appliedIndex  prometheus.Gauge
	zones         prometheus.Gauge
	commands      *prometheus.CounterVec
	applyDuration prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		appliedIndex: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "kudurru", Subsystem: "fsm", Name: "applied_index",
			Help: "Raft index of the View being served.",
		}),
		zones: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "kudurru", Subsystem: "fsm", Name: "zones",
			Help: "Zones in the View being served.",
		}),
		commands: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "kudurru", Subsystem: "fsm", Name: "commands_total",
			Help: "Committed commands applied, by operation and result.",
		}, []string{"op", "result"}),
		applyDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "kudurru", Subsystem: "fsm", Name: "apply_duration_seconds",
			Help:    "Time to apply one batch of committed entries.",
			Buckets: prometheus.ExponentialBuckets(1e-6, 4, 12),
		}),
	}
	if reg != nil {
		reg.MustRegister(m.appliedIndex, m.zones, m.commands, m.applyDuration)
	}
	return m
}

func (m *metrics) observe(v *zone.View) {
	m.appliedIndex.Set(float64(v.Index))
	m.zones.Set(float64(v.Len()))
}

func (m *metrics) applied(op string, err error) {
	r := "ok"
	if err != nil {
		r = "error"
	}
	m.commands.WithLabelValues(op, r).Inc()
}
