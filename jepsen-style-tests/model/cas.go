package model

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/anishathalye/porcupine"
)

// CodePrecondition is the API error code of a compare-and-set whose check
// did not hold. Such a write is a definite observation: at its
// linearization point the RRset did not hold the expected value.
const CodePrecondition = "precondition_failed"

// CASInput is one compare-and-set on a TXT RRset: if Key holds Expect
// ("" = absent) replace it with New.
type CASInput struct {
	Key    string
	Expect string
	New    string
}

// CASResult is what the client learnt.
type CASResult int

// Results of a CAS.
const (
	CASApplied  CASResult = iota // 200: the check held and New was written
	CASMismatch                  // 409 precondition_failed: the check did not hold
	CASUnknown                   // 504 or no answer: it may or may not have been applied
)

func (r CASResult) String() string {
	return [...]string{"applied", "mismatch", "unknown"}[r]
}

// CASModel is a per-key register with compare-and-set, partitioned by
// owner name. It is non-deterministic so that a write with an unknown
// outcome may take effect or not; such writes never return (their Return
// is the end of the history), as in Jepsen and etcd's robustness tests.
var CASModel = (&porcupine.NondeterministicModel{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		var keys []string
		for _, o := range h {
			k := o.Input.(CASInput).Key
			if _, ok := by[k]; !ok {
				keys = append(keys, k)
			}
			by[k] = append(by[k], o)
		}
		slices.Sort(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, by[k])
		}
		return out
	},
	Init: func() []any { return []any{""} },
	Step: func(state, input, output any) []any {
		s, in, res := state.(string), input.(CASInput), output.(CASResult)
		switch res {
		case CASApplied:
			if s == in.Expect {
				return []any{in.New}
			}
			return nil
		case CASMismatch:
			if s != in.Expect {
				return []any{s}
			}
			return nil
		default:
			if s == in.Expect {
				return []any{s, in.New}
			}
			return []any{s}
		}
	},
	Equal: func(a, b any) bool { return a.(string) == b.(string) },
	Hash: func(s any) uint64 {
		h := fnv.New64a()
		h.Write([]byte(s.(string)))
		return h.Sum64()
	},
	DescribeOperation: func(input, output any) string {
		in := input.(CASInput)
		exp := in.Expect
		if exp == "" {
			exp = "∅"
		}
		return fmt.Sprintf("cas(%s: %s→%s) %s", in.Key, exp, in.New, output.(CASResult))
	},
	DescribeState: func(s any) string {
		if s.(string) == "" {
			return "∅"
		}
		return s.(string)
	},
}).ToModel()

// CASOperations turns the KindCAS ops of h into porcupine operations. A
// definite failure other than a precondition mismatch (503: nothing was
// written) is left out; an unknown outcome never returns.
func CASOperations(h History) []porcupine.Operation {
	end := h.End() + 1
	var ops []porcupine.Operation
	for _, o := range h {
		if o.Kind != KindCAS || o.Expect == nil {
			continue
		}
		in := CASInput{Key: o.Key, Expect: *o.Expect, New: o.Value}
		op := porcupine.Operation{ClientId: o.Process, Input: in, Call: o.Invoke, Return: o.Complete, Metadata: o.Node}
		switch {
		case o.Outcome == OK:
			op.Output = CASApplied
		case o.Outcome == Fail && o.Code == CodePrecondition:
			op.Output = CASMismatch
		case o.Outcome == Fail:
			continue
		default:
			op.Output = CASUnknown
			op.Return = end
		}
		if op.Return <= op.Call {
			op.Return = op.Call + 1
		}
		ops = append(ops, op)
	}
	slices.SortStableFunc(ops, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	return ops
}
