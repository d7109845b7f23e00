package cache

import (
	"strings"
	"testing"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

func testCounter(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	return testutil.ToFloat64(c)
}

// unitless lists the metrics that are deliberately not named *_total,
// *_seconds or *_bytes (see metrics.go).
var unitless = map[string]bool{"kudurru_cache_entries": true}

func TestMetricNames(t *testing.T) {
	clk := newClock()
	c, reg := newTestCache(t, clk, nil)
	req := question("m.example.", dns.TypeA, false, false)
	c.Set(req, reply(t, req, dns.RcodeSuccess, []string{"m.example. 60 IN A 192.0.2.1"}, nil, nil))
	c.Set(req, reply(t, req, dns.RcodeRefused, nil, nil, nil))
	c.Get(nil, req)
	c.Get(nil, question("other.example.", dns.TypeA, false, false))

	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	for _, mf := range mfs {
		name := mf.GetName()
		if !strings.HasPrefix(name, "kudurru_cache_") {
			t.Errorf("%s: want namespace kudurru, subsystem cache", name)
		}
		if !unitless[name] && !strings.HasSuffix(name, "_total") && !strings.HasSuffix(name, "_seconds") && !strings.HasSuffix(name, "_bytes") {
			t.Errorf("%s: name must end in _total, _seconds or _bytes", name)
		}
	}
	want := map[string]float64{
		"kudurru_cache_hits_total":   1,
		"kudurru_cache_misses_total": 1,
		"kudurru_cache_entries":      1,
	}
	for name, v := range want {
		if got, err := testutil.GatherAndCount(reg, name); err != nil || got != 1 {
			t.Errorf("%s: %d series, err %v", name, got, err)
			continue
		}
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			m := mf.GetMetric()[0]
			got := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			if got != v {
				t.Errorf("%s = %v, want %v", name, got, v)
			}
		}
	}
	if got := testCounter(t, c.metrics.rejected.WithLabelValues("rcode")); got != 1 {
		t.Errorf("uncacheable_total{reason=rcode} = %v, want 1", got)
	}
}

func TestSecondCacheOnOneRegistry(t *testing.T) {
	_, reg := newTestCache(t, newClock(), nil)
	if _, err := New(DefaultConfig(), testLogger(t), reg); err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Fatalf("second New on one registry: %v, want an already registered error", err)
	}
}
