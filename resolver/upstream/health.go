package upstream

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/miekg/dns"
)

// Health: an upstream is down after MaxFails consecutive failures, counting
// both probes and real queries, and up again after one success. Each
// upstream has a prober goroutine: every HealthCheckInterval while the probes
// succeed, and with exponential backoff (doubling, up to
// HealthCheckMaxInterval, with ±10% jitter) while they fail. Any answer that
// matches the probe counts, whatever its rcode: the server is alive.

// succeeded records a successful exchange or probe.
func (f *Forwarder) succeeded(u *upstream) {
	u.fails.Store(0)
	if u.healthy.CompareAndSwap(false, true) {
		f.transition(u, true)
	}
}

// failed records a failed exchange or probe.
func (f *Forwarder) failed(u *upstream, err error) {
	n := u.fails.Add(1)
	// Only a probed upstream may be marked down: nothing else brings it back.
	if f.probing.Load() && int(n) >= f.cfg.MaxFails && u.healthy.CompareAndSwap(true, false) {
		f.log.Warn("upstream down", "upstream", u.name, "consecutive_failures", n, "error", err)
		f.transition(u, false)
	}
}

func (f *Forwarder) transition(u *upstream, healthy bool) {
	if healthy {
		u.healthGauge.Set(1)
		f.log.Info("upstream healthy", "upstream", u.name)
	} else {
		u.healthGauge.Set(0)
	}
	if f.onHealth != nil {
		f.onHealth(u.name, healthy)
	}
}

// probeLoop runs until the Forwarder closes.
func (f *Forwarder) probeLoop(u *upstream) {
	base, ceiling := f.cfg.HealthCheckInterval, f.cfg.HealthCheckMaxInterval
	interval := base
	timer := time.NewTimer(jitter(interval))
	defer timer.Stop()
	for {
		select {
		case <-f.done:
			return
		case <-timer.C:
		}
		if f.probe(u) {
			interval = base
		} else {
			interval = min(interval*2, ceiling)
		}
		timer.Reset(jitter(interval))
	}
}

// probe sends the health query and records the outcome.
func (f *Forwarder) probe(u *upstream) bool {
	ctx, cancel := context.WithTimeout(f.base, f.cfg.HealthCheckTimeout)
	defer cancel()
	q := new(dns.Msg)
	q.SetQuestion(f.probeName, f.probeType)
	start := time.Now()
	_, err := u.primary.exchange(ctx, q)
	if f.base.Err() != nil {
		return true // closing: neither healthy nor not
	}
	if err != nil {
		u.probeFails.Inc()
		f.log.Debug("health probe failed", "upstream", u.name, "error", err)
		f.failed(u, err)
		return false
	}
	u.observe(time.Since(start))
	f.succeeded(u)
	return true
}

// jitter spreads d by ±10% so that probes of many upstreams do not align.
func jitter(d time.Duration) time.Duration {
	return d - d/10 + rand.N(d/5+1)
}
