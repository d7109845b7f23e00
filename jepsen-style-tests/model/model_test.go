package model

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

func TestHistoryRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	r, err := NewRecorder(path)
	if err != nil {
		t.Fatal(err)
	}
	inv := r.Now()
	r.Add(Op{Kind: KindWrite, Node: "n1", Key: "k", Value: "v", Invoke: inv, Complete: r.Now(), Outcome: OK})
	r.Nemesis(NemPartition, "isolate n2", []string{"n2"}, []string{"n2"})
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r.Add(Op{Kind: KindWrite}) // after Close: dropped
	h, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 2 || h[0].Seq != 1 || h[1].Nemesis != NemPartition || h[1].Minority[0] != "n2" {
		t.Fatalf("round trip: %+v", h)
	}
	if got := h.FirstFault(); got != h[1].Invoke {
		t.Errorf("FirstFault = %d, want %d", got, h[1].Invoke)
	}
	var buf bytes.Buffer
	if err := Write(&buf, h); err != nil {
		t.Fatal(err)
	}
	h2, err := Read(&buf)
	if err != nil || len(h2) != 2 {
		t.Fatalf("re-read: %v %d", err, len(h2))
	}
}

func TestRecorderMonotonic(t *testing.T) {
	r, _ := NewRecorder("")
	a := r.Now()
	time.Sleep(time.Millisecond)
	if b := r.Now(); b <= a {
		t.Fatalf("clock went from %d to %d", a, b)
	}
}

func cas(proc int, key, expect, val string, call, ret int64, out Outcome, code string) Op {
	return Op{Kind: KindCAS, Process: proc, Key: key, Expect: Str(expect), Value: val,
		Invoke: call, Complete: ret, Outcome: out, Code: code}
}

func TestCASModel(t *testing.T) {
	cases := []struct {
		name string
		h    History
		want porcupine.CheckResult
	}{
		{"sequential chain", History{
			cas(0, "k", "", "a", 0, 10, OK, ""),
			cas(1, "k", "a", "b", 20, 30, OK, ""),
			cas(0, "k", "a", "c", 40, 50, Fail, CodePrecondition),
		}, porcupine.Ok},
		{"two winners from the same value", History{
			cas(0, "k", "", "a", 0, 10, OK, ""),
			cas(1, "k", "a", "b", 20, 30, OK, ""),
			cas(2, "k", "a", "c", 40, 50, OK, ""),
		}, porcupine.Illegal},
		{"false mismatch", History{
			cas(0, "k", "", "a", 0, 10, OK, ""),
			cas(1, "k", "a", "b", 20, 30, Fail, CodePrecondition),
		}, porcupine.Illegal},
		{"unknown may have applied", History{
			cas(0, "k", "", "a", 0, 10, Unknown, "timeout"),
			cas(1, "k", "a", "b", 20, 30, OK, ""),
		}, porcupine.Ok},
		{"unknown may not have applied", History{
			cas(0, "k", "", "a", 0, 10, Unknown, "timeout"),
			cas(1, "k", "", "b", 20, 30, OK, ""),
		}, porcupine.Ok},
		{"no_quorum is left out", History{
			cas(0, "k", "", "a", 0, 10, Fail, "no_quorum"),
			cas(1, "k", "", "b", 20, 30, OK, ""),
		}, porcupine.Ok},
		{"keys are independent", History{
			cas(0, "k1", "", "a", 0, 10, OK, ""),
			cas(1, "k2", "", "b", 0, 10, OK, ""),
		}, porcupine.Ok},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := porcupine.CheckOperationsVerbose(CASModel, CASOperations(tc.h), 5*time.Second)
			if res != tc.want {
				t.Fatalf("got %v, want %v", res, tc.want)
			}
		})
	}
}
