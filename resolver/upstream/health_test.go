package upstream

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// healthConfig probes every 20 ms, backing off to 80 ms.
func healthConfig(addrs ...string) Config {
	cfg := testConfig(map[string][]string{".": addrs})
	cfg.HealthCheckInterval = 20 * time.Millisecond
	cfg.HealthCheckMaxInterval = 80 * time.Millisecond
	cfg.HealthCheckTimeout = 100 * time.Millisecond
	cfg.AttemptTimeout = 200 * time.Millisecond
	cfg.MaxFails = 2
	return cfg
}

func TestHealthDownAndBack(t *testing.T) {
	a := startDNS(t, answerA("192.0.2.1"))
	b := startDNS(t, answerA("192.0.2.2"))
	events := newHealthEvents()
	f, _ := newForwarder(t, healthConfig(a.url("udp"), b.url("udp")), events.hook)
	ask := func() string {
		t.Helper()
		r, err := f.Exchange(context.Background(), query("h.example.", dns.TypeA))
		if err != nil {
			t.Fatalf("Exchange: %v", err)
		}
		return r.Answer[0].(*dns.A).A.String()
	}
	if got := ask(); got != "192.0.2.1" {
		t.Fatalf("answered by %s, want the first upstream", got)
	}

	a.stop()
	events.wait(t, a.url("udp")+" down")
	if got := testutil.ToFloat64(f.m.healthy.WithLabelValues(a.url("udp"))); got != 0 {
		t.Errorf("healthy gauge %v, want 0", got)
	}
	before := a.udpQueries.Load()
	for range 5 {
		if got := ask(); got != "192.0.2.2" {
			t.Fatalf("answered by %s while the first upstream is down", got)
		}
	}
	if a.udpQueries.Load() != before {
		t.Error("a down upstream still got queries")
	}

	a.restart()
	events.wait(t, a.url("udp")+" up")
	if got := ask(); got != "192.0.2.1" {
		t.Errorf("answered by %s after the first upstream came back", got)
	}
	if got := testutil.ToFloat64(f.m.probeFails.WithLabelValues(a.url("udp"))); got < 2 {
		t.Errorf("healthcheck_failures_total = %v, want at least 2", got)
	}
}

func TestHealthPassiveFailures(t *testing.T) {
	// With probes far apart, real query failures alone take an upstream
	// out of rotation.
	a := startDNS(t, silent)
	b := startDNS(t, answerA("192.0.2.2"))
	cfg := healthConfig(a.url("udp"), b.url("udp"))
	cfg.HealthCheckInterval = time.Hour
	cfg.HealthCheckMaxInterval = time.Hour
	cfg.AttemptTimeout = 50 * time.Millisecond
	events := newHealthEvents()
	f, _ := newForwarder(t, cfg, events.hook)
	for i := range 2 {
		if _, err := f.Exchange(context.Background(), query(fmt.Sprintf("p%d.example.", i), dns.TypeA)); err != nil {
			t.Fatal(err)
		}
	}
	events.wait(t, a.url("udp")+" down")
	before := a.udpQueries.Load()
	if _, err := f.Exchange(context.Background(), query("p3.example.", dns.TypeA)); err != nil {
		t.Fatal(err)
	}
	if a.udpQueries.Load() != before {
		t.Error("the down upstream was tried first")
	}
}

func TestHealthAnyAnswerCounts(t *testing.T) {
	// An upstream that refuses the probe is alive.
	a := startDNS(t, rcodeHandler(dns.RcodeRefused))
	events := newHealthEvents()
	f, _ := newForwarder(t, healthConfig(a.url("udp")), events.hook)
	u := f.groups["."].ups[0]
	u.healthy.Store(false) // as if it had failed before
	events.wait(t, a.url("udp")+" up")
}

func TestHealthProbeQuery(t *testing.T) {
	probes := make(chan dns.Question, 16)
	a := startDNS(t, func(w dns.ResponseWriter, r *dns.Msg) {
		select {
		case probes <- r.Question[0]:
		default:
		}
		answerA("192.0.2.1")(w, r)
	})
	cfg := healthConfig(a.url("udp"))
	cfg.HealthCheckName = "health.example"
	cfg.HealthCheckType = "a"
	newForwarder(t, cfg, nil)
	select {
	case q := <-probes:
		if q.Name != "health.example." || q.Qtype != dns.TypeA {
			t.Errorf("probe %v, want health.example. A", q)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no probe arrived")
	}
}

func TestJitter(t *testing.T) {
	for range 1000 {
		if d := jitter(time.Second); d < 900*time.Millisecond || d > 1100*time.Millisecond {
			t.Fatalf("jitter(1s) = %s, want within ±10%%", d)
		}
	}
	if d := jitter(0); d != 0 {
		t.Errorf("jitter(0) = %s", d)
	}
}
