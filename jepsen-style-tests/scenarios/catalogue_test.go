package scenarios

import (
	"slices"
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

// TestSelectRepeats: a name listed again runs again under its own name,
// so that each run keeps its own artifacts.
func TestSelectRepeats(t *testing.T) {
	set, err := Select("cold-start, cold-start,kill-restart,cold-start")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range set {
		names = append(names, s.Name)
	}
	want := []string{"cold-start", "cold-start-2", "kill-restart", "cold-start-3"}
	if !slices.Equal(names, want) {
		t.Fatalf("Select = %v, want %v", names, want)
	}
	if _, err := Select("cold-start,nope"); err == nil {
		t.Fatal("Select accepted an unknown name")
	}
}
