package resolver

import (
	"context"
	"strconv"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

const (
	metricsNamespace = "kudurru"
	metricsSubsystem = "dns"
)

// monitoredTypes get their own value of the type label; every other type
// counts as "other", so a client cannot grow the label set.
var monitoredTypes = [...]uint16{
	dns.TypeA, dns.TypeAAAA, dns.TypeCNAME, dns.TypeMX, dns.TypeNS, dns.TypePTR,
	dns.TypeSOA, dns.TypeSRV, dns.TypeTXT, dns.TypeCAA, dns.TypeDS, dns.TypeDNSKEY,
	dns.TypeHTTPS, dns.TypeSVCB, dns.TypeNAPTR, dns.TypeSSHFP, dns.TypeTLSA,
	dns.TypeANY, dns.TypeAXFR, dns.TypeIXFR,
}

// typeIndex maps a monitored type to its slot; read-only after init.
var typeIndex = func() map[uint16]int {
	m := make(map[uint16]int, len(monitoredTypes))
	for i, t := range monitoredTypes {
		m[t] = i
	}
	return m
}()

const (
	numTypes  = len(monitoredTypes) + 1 // and "other"
	numRcodes = 24                      // rcodes 0..23 get their own value, the rest "other"
)

// metrics holds the server's collectors, with the children of the hot path
// resolved once so that a query does no label lookup.
type metrics struct {
	requests  *prometheus.CounterVec
	responses *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	size      *prometheus.HistogramVec
	panics    prometheus.Counter
	malformed *prometheus.CounterVec
	overload  *prometheus.CounterVec

	reqC  [2][2][numTypes]prometheus.Counter // proto, family, type
	respC [numRcodes + 1]prometheus.Counter
	durC  [2]prometheus.Observer
	sizeC [2]prometheus.Observer
}

var protos = [2]string{"udp", "tcp"}

// newMetrics builds and registers the DNS server's collectors; memo is the
// authority stage's answer table, whose size is read at scrape time.
func newMetrics(reg prometheus.Registerer, memo *answerMemo) (*metrics, error) {
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: name, Help: help}
	}
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts(opts("requests_total",
			"Queries received, by transport, address family (1 IPv4, 2 IPv6) and query type.")),
			[]string{"proto", "family", "type"}),
		responses: prometheus.NewCounterVec(prometheus.CounterOpts(opts("responses_total",
			"Replies sent, by response code.")), []string{"rcode"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "request_duration_seconds",
			Help:    "Time from a parsed query to its written reply, by transport.",
			Buckets: prometheus.ExponentialBuckets(0.00001, 2, 18),
		}, []string{"proto"}),
		size: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "response_size_bytes",
			Help:    "Size of the replies sent, by transport.",
			Buckets: []float64{0, 100, 200, 300, 400, 511, 1023, 1232, 2047, 4095, 8291, 16000, 32000, 48000, 64000},
		}, []string{"proto"}),
		panics: prometheus.NewCounter(prometheus.CounterOpts(opts("panics_total",
			"Panics recovered in the query chain; each was answered SERVFAIL."))),
		malformed: prometheus.NewCounterVec(prometheus.CounterOpts(opts("malformed_requests_total",
			"Messages that could not be parsed, by transport.")), []string{"proto"}),
		overload: prometheus.NewCounterVec(prometheus.CounterOpts(opts("overload_waits_total",
			"Times a listener stopped reading because its in-flight limit was reached, by transport.")),
			[]string{"proto"}),
	}
	memoBytes := prometheus.NewGaugeFunc(prometheus.GaugeOpts(opts("answer_memo_bytes",
		"Estimated memory held by the remembered authoritative answers (bounded at 64 MiB).")),
		func() float64 { return float64(memo.bytes()) })
	for _, c := range []prometheus.Collector{m.requests, m.responses, m.duration, m.size, m.panics, m.malformed, m.overload, memoBytes} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for p, proto := range protos {
		for f, fam := range [2]string{"1", "2"} {
			for i := range numTypes {
				t := "other"
				if i < len(monitoredTypes) {
					t = dns.TypeToString[monitoredTypes[i]]
				}
				m.reqC[p][f][i] = m.requests.WithLabelValues(proto, fam, t)
			}
		}
		m.durC[p] = m.duration.WithLabelValues(proto)
		m.sizeC[p] = m.size.WithLabelValues(proto)
		m.malformed.WithLabelValues(proto)
		m.overload.WithLabelValues(proto)
	}
	for rc := range numRcodes + 1 {
		name := "other"
		if rc < numRcodes {
			name = rcodeName(rc)
		}
		m.respC[rc] = m.responses.WithLabelValues(name)
	}
	return m, nil
}

func rcodeName(rc int) string {
	if s, ok := dns.RcodeToString[rc]; ok {
		return s
	}
	return strconv.Itoa(rc)
}

// metricsStage counts each query and its final rcode and times it. A panic
// passing through is counted as SERVFAIL, which is what the client gets.
func (s *Server) metricsStage(next Handler) Handler {
	return HandlerFunc(func(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
		start := time.Now()
		rw, _ := w.(*responseWriter)
		p, f := 0, 0
		if rw != nil {
			if rw.tcp {
				p = 1
			}
			f = rw.family - 1
		}
		t := numTypes - 1
		if len(r.Question) > 0 {
			if i, ok := typeIndex[r.Question[0].Qtype]; ok {
				t = i
			}
		}
		s.metrics.reqC[p][f][t].Inc()
		done := false
		defer func() {
			if !done {
				s.metrics.respC[dns.RcodeServerFailure].Inc()
				s.metrics.durC[p].Observe(time.Since(start).Seconds())
			}
		}()
		rcode, err := next.ServeDNS(ctx, w, r)
		done = true
		final := rcode
		if clientWrote(rcode) && rw != nil && rw.written {
			final = rw.rcode
			s.metrics.sizeC[p].Observe(float64(rw.size))
		}
		if final < 0 || final >= numRcodes {
			final = numRcodes
		}
		s.metrics.respC[final].Inc()
		s.metrics.durC[p].Observe(time.Since(start).Seconds())
		return rcode, err
	})
}
