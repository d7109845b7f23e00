package harness

import (
	"slices"
	"testing"
)

func TestCutPairs(t *testing.T) {
	nodes := []string{"n1", "n2", "n3", "n4", "n5"}
	cases := []struct {
		name   string
		groups [][]string
		cut    [][2]string // some pairs that must be cut
		linked [][2]string // some pairs that must not be
		total  int
	}{
		{"halves", [][]string{{"n1", "n2"}, {"n3", "n4", "n5"}},
			[][2]string{{"n1", "n3"}, {"n5", "n2"}}, [][2]string{{"n1", "n2"}, {"n3", "n5"}}, 12},
		{"bridge", [][]string{{"n1", "n2", "n3"}, {"n3", "n4", "n5"}},
			[][2]string{{"n1", "n4"}, {"n5", "n2"}}, [][2]string{{"n3", "n1"}, {"n3", "n5"}}, 8},
		{"majorities ring", [][]string{{"n1", "n2"}, {"n2", "n3"}, {"n3", "n4"}, {"n4", "n5"}, {"n5", "n1"}},
			[][2]string{{"n1", "n3"}, {"n1", "n4"}}, [][2]string{{"n1", "n2"}, {"n1", "n5"}}, 10},
		{"isolate one, others untouched", [][]string{{"n1"}, {"n2", "n3"}},
			[][2]string{{"n1", "n2"}, {"n3", "n1"}}, [][2]string{{"n4", "n1"}, {"n2", "n3"}}, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := cutPairs(nodes, tc.groups)
			for _, p := range tc.cut {
				if !got[p] {
					t.Errorf("%v not cut", p)
				}
			}
			for _, p := range tc.linked {
				if got[p] {
					t.Errorf("%v cut", p)
				}
			}
			if len(got) != tc.total {
				t.Errorf("%d pairs cut, want %d: %v", len(got), tc.total, got)
			}
		})
	}
}

func TestMinorityOf(t *testing.T) {
	five := []string{"n1", "n2", "n3", "n4", "n5"}
	all := map[string]bool{"n1": true, "n2": true, "n3": true, "n4": true, "n5": true}
	cases := []struct {
		name    string
		members []string
		serving map[string]bool
		blocked map[[2]string]bool
		want    []string
	}{
		{"healthy", five, all, nil, nil},
		{"halves", five, all, cutPairs(five, [][]string{{"n1", "n2"}, {"n3", "n4", "n5"}}), []string{"n1", "n2"}},
		{"bridge has no minority", five, all, cutPairs(five, [][]string{{"n1", "n2", "n3"}, {"n3", "n4", "n5"}}), nil},
		{"partial: n1 reaches only n2, which reaches everyone", five, all,
			cutPairs(five, [][]string{{"n1", "n2"}, {"n2", "n3", "n4", "n5"}}), nil},
		{"two of three killed", []string{"n1", "n2", "n3"}, map[string]bool{"n1": true}, nil, []string{"n1"}},
		{"one of three killed", []string{"n1", "n2", "n3"}, map[string]bool{"n1": true, "n2": true}, nil, nil},
		{"removed node still isolated", []string{"n1", "n2", "n4"}, map[string]bool{"n1": true, "n2": true, "n3": true, "n4": true},
			cutPairs([]string{"n1", "n2", "n3", "n4"}, [][]string{{"n3"}, {"n1", "n2", "n4"}}), []string{"n3"}},
		{"majorities ring has no minority", five, all,
			cutPairs(five, [][]string{{"n1", "n2"}, {"n2", "n3"}, {"n3", "n4"}, {"n4", "n5"}, {"n5", "n1"}}), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := minorityOf(tc.members, tc.serving, tc.blocked)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNodeAddr(t *testing.T) {
	nw, err := NewNetwork("10.77.0.0/24")
	if err != nil {
		t.Skip(err) // needs iproute2 and iptables installed
	}
	if nw.HostAddr() != "10.77.0.1" || nw.NodeAddr(1) != "10.77.0.11" {
		t.Fatalf("addresses %s %s", nw.HostAddr(), nw.NodeAddr(1))
	}
	if _, err := NewNetwork("8.8.8.0/24"); err == nil {
		t.Fatal("a public subnet was accepted")
	}
}
