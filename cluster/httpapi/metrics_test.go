package httpapi

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestMetricNames lints the API's metrics as Prometheus would.
func TestMetricNames(t *testing.T) {
	leader, follower := pair(t, nil)
	follower.do("POST", "/v1/zones", zoneA)
	leader.do("GET", "/v1/zones", "")
	for _, h := range []*harness{leader, follower} {
		problems, err := testutil.GatherAndLint(h.reg)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Errorf("%s: %s", p.Metric, p.Text)
		}
		n, err := testutil.GatherAndCount(h.reg, "kudurru_http_requests_total", "kudurru_http_request_duration_seconds")
		if err != nil || n == 0 {
			t.Fatalf("request metrics missing: %d %v", n, err)
		}
	}
	if n, _ := testutil.GatherAndCount(follower.reg, "kudurru_http_forwards_total"); n != 1 {
		t.Fatalf("forwards series = %d", n)
	}
}
