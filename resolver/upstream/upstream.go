package upstream

import (
	"context"
	"errors"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// upstream is one configured server: its transports, health, smoothed
// latency and in-flight count. An address listed in several zones is one
// upstream.
type upstream struct {
	addr    Addr
	name    string
	primary transport
	tcp     transport // TC=1 fallback of a udp upstream; nil otherwise

	maxInflight int64
	inflight    atomic.Int64
	healthy     atomic.Bool
	fails       atomic.Int32
	ewmaBits    atomic.Uint64 // float64 seconds; 0 = not measured yet

	// Metrics curried with this upstream's label.
	requests, dropped, tcpFallbacks, probeFails prometheus.Counter
	duration                                    prometheus.Observer
	responses, errors                           *prometheus.CounterVec
	healthGauge                                 prometheus.Gauge
}

// ewmaAlpha weighs a new latency sample.
const ewmaAlpha = 0.3

// acquire takes an in-flight slot; false means the upstream is at its cap.
func (u *upstream) acquire() bool {
	if u.inflight.Add(1) > u.maxInflight {
		u.inflight.Add(-1)
		return false
	}
	return true
}

func (u *upstream) release() { u.inflight.Add(-1) }

// latency returns the smoothed response time in seconds.
func (u *upstream) latency() float64 { return math.Float64frombits(u.ewmaBits.Load()) }

func (u *upstream) observe(d time.Duration) {
	sample := d.Seconds()
	for {
		old := u.ewmaBits.Load()
		v := sample
		if old != 0 {
			v = ewmaAlpha*sample + (1-ewmaAlpha)*math.Float64frombits(old)
		}
		if u.ewmaBits.CompareAndSwap(old, math.Float64bits(v)) {
			return
		}
	}
}

// exchange sends q over the primary transport, and over TCP when a UDP
// answer is truncated.
func (u *upstream) exchange(ctx context.Context, q *dns.Msg) (*dns.Msg, error) {
	u.requests.Inc()
	start := time.Now()
	r, err := u.primary.exchange(ctx, q)
	if err == nil && r.Truncated && u.tcp != nil {
		u.tcpFallbacks.Inc()
		u.requests.Inc()
		r, err = u.tcp.exchange(ctx, q)
	}
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			u.errors.WithLabelValues(errReason(err)).Inc()
		}
		return nil, err
	}
	u.duration.Observe(time.Since(start).Seconds())
	u.responses.WithLabelValues(rcodeName(r.Rcode)).Inc()
	return r, nil
}

// upstreamFault reports whether an attempt's error says something about the
// upstream's health (not the caller's cancellation or our own limits).
func upstreamFault(err error) bool {
	return err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, ErrOverloaded) &&
		!errors.Is(err, ErrClosed) && !errors.Is(err, errRcode)
}

func rcodeName(rc int) string {
	if s, ok := dns.RcodeToString[rc]; ok {
		return s
	}
	return "RCODE" + strconv.Itoa(rc)
}
