package scenarios

import (
	"testing"
)

func TestCatalogue(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range All() {
		if seen[s.Name] || s.About == "" || s.Fault == nil || (s.Nodes != 3 && s.Nodes != 5) {
			t.Errorf("scenario %+v", s.Name)
		}
		seen[s.Name] = true
	}
	q := Quick()
	if len(q) != 3 {
		t.Fatalf("quick set has %d scenarios", len(q))
	}
	got, err := Select("cold-start, partition-ring")
	if err != nil || len(got) != 2 || got[1].Nodes != 5 {
		t.Fatalf("Select: %v %v", got, err)
	}
	if _, err := Select("nope"); err == nil {
		t.Fatal("unknown name accepted")
	}
}
