package cluster

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

func TestMetricsLint(t *testing.T) {
	tc := newTestCluster(t)
	tn := tc.bootstrap("n1")
	tc.mustPropose(createZone(t, testZone))
	mfs, err := tn.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
	want := map[string]bool{
		"kudurru_raft_state": false, "kudurru_raft_term": false, "kudurru_raft_leader_changes_total": false,
		"kudurru_cluster_propose_total": false, "kudurru_cluster_propose_duration_seconds": false,
		"kudurru_cluster_localdb_writes_total": false, "kudurru_cluster_localdb_write_errors_total": false,
		"kudurru_raft_last_contact_seconds": false,
	}
	for _, mf := range mfs {
		if _, ok := want[mf.GetName()]; ok {
			want[mf.GetName()] = true
		}
	}
	for name, seen := range want {
		if !seen {
			t.Errorf("metric %s missing", name)
		}
	}
}
