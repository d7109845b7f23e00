package httpapi

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the API's Prometheus metrics, namespace kudurru, subsystem
// http.
type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	forwards *prometheus.CounterVec
}

// Results of a forward, the "result" label of kudurru_http_forwards_total.
const (
	fwdOK          = "ok"          // the leader answered (whatever it answered)
	fwdUnreachable = "unreachable" // failed before the request was sent
	fwdUnknown     = "unknown"     // sent, but no answer came back
)

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "kudurru", Subsystem: "http", Name: "requests_total",
			Help: "Admin API requests served, by method, route and status code.",
		}, []string{"method", "route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "kudurru", Subsystem: "http", Name: "request_duration_seconds",
			Help:    "Time to serve an admin API request, by route.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
		}, []string{"route"}),
		forwards: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "kudurru", Subsystem: "http", Name: "forwards_total",
			Help: "Requests forwarded to the leader, by result.",
		}, []string{"result"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.duration, m.forwards)
	}
	return m
}

func (m *metrics) observe(method, route string, status int, d time.Duration) {
	m.requests.WithLabelValues(method, route, codeLabel(status)).Inc()
	m.duration.WithLabelValues(route).Observe(d.Seconds())
}

func (m *metrics) forwarded(result string) { m.forwards.WithLabelValues(result).Inc() }
