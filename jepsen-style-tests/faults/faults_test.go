package faults

import (
	"context"
	"errors"
	"testing"

	"github.com/kudurru/kudurru/jepsen-style-tests/harness"
)

func TestOthers(t *testing.T) {
	a, b, c := &harness.Node{ID: "n1"}, &harness.Node{ID: "n2"}, &harness.Node{ID: "n3"}
	got := others([]*harness.Node{a, b, c}, b)
	if len(got) != 2 || got[0] != a || got[1] != c {
		t.Fatalf("others: %v", harness.IDs(got))
	}
}

func TestSequenceStopsAtFirstError(t *testing.T) {
	var ran []int
	boom := errors.New("boom")
	f := Sequence(
		func(context.Context, *Env) error { ran = append(ran, 1); return nil },
		func(context.Context, *Env) error { ran = append(ran, 2); return boom },
		func(context.Context, *Env) error { ran = append(ran, 3); return nil },
	)
	if err := f(context.Background(), &Env{}); !errors.Is(err, boom) || len(ran) != 2 {
		t.Fatalf("err %v ran %v", err, ran)
	}
}
