package upstream

import (
	"context"
	"strings"
	"testing"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

// unitless lists the metrics that are deliberately not named *_total,
// *_seconds or *_bytes (see metrics.go).
var unitless = map[string]bool{"kudurru_upstream_healthy": true}

func TestMetricNames(t *testing.T) {
	ok := startDNS(t, answerA("192.0.2.1"))
	fail := startDNS(t, rcodeHandler(dns.RcodeServerFailure))
	f, reg := newForwarder(t, testConfig(map[string][]string{
		".":          {fail.url("udp"), ok.url("udp")},
		"x.example.": {ok.url("udp")},
	}), nil)
	for _, name := range []string{"a.example.", "b.x.example."} {
		if _, err := f.Exchange(context.Background(), query(name, dns.TypeA)); err != nil {
			t.Fatal(err)
		}
	}
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
		if !strings.HasPrefix(name, "kudurru_upstream_") {
			t.Errorf("%s: want namespace kudurru, subsystem upstream", name)
		}
		if !unitless[name] && !strings.HasSuffix(name, "_total") && !strings.HasSuffix(name, "_seconds") && !strings.HasSuffix(name, "_bytes") {
			t.Errorf("%s: name must end in _total, _seconds or _bytes", name)
		}
	}
	if got := testutil.ToFloat64(f.m.responses.WithLabelValues(fail.url("udp"), "SERVFAIL")); got != 1 {
		t.Errorf(`responses_total{rcode="SERVFAIL"} = %v, want 1`, got)
	}
	if got := testutil.ToFloat64(f.m.requests.WithLabelValues(ok.url("udp"))); got != 2 {
		t.Errorf("requests_total = %v, want 2", got)
	}
	if got := testutil.ToFloat64(f.m.exchanges.WithLabelValues("answered")); got != 2 {
		t.Errorf(`exchanges_total{result="answered"} = %v, want 2`, got)
	}
}

func TestSecondForwarderOnOneRegistry(t *testing.T) {
	cfg := testConfig(map[string][]string{".": {"udp://192.0.2.53"}})
	_, reg := newForwarder(t, cfg, nil)
	if _, err := New(cfg, testLogger(t), reg); err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Fatalf("second New on one registry: %v, want an already registered error", err)
	}
}
