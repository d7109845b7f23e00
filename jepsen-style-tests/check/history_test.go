package check

import (
	"fmt"
	"slices"
	"time"

	"github.com/kudurru/kudurru/jepsen-style-tests/model"
)

// This file builds the crafted histories the checker tests start from: a
// clean three-node run in which n3 is partitioned away from 5 s to 15 s.

var nodes3 = []string{"n1", "n2", "n3"}

func sec(s float64) int64 { return int64(s * float64(time.Second)) }

// builder assembles a history in time order.
type builder struct{ h model.History }

func (b *builder) add(o model.Op) *model.Op {
	o.Seq = int64(len(b.h) + 1)
	if o.Complete == 0 {
		o.Complete = o.Invoke + int64(time.Millisecond)
	}
	b.h = append(b.h, o)
	return &b.h[len(b.h)-1]
}

func (b *builder) nemesis(at float64, action string, nodes, minority []string) {
	b.add(model.Op{Kind: model.KindNemesis, Process: -1, Nemesis: action, Nodes: nodes, Minority: minority,
		Invoke: sec(at), Complete: sec(at), Outcome: model.OK})
}

func (b *builder) write(worker int, node, key string, at, dur float64, out model.Outcome, code string) *model.Op {
	return b.add(model.Op{Kind: model.KindWrite, Process: worker, Worker: worker, Node: node, Key: key, Value: key,
		Invoke: sec(at), Complete: sec(at + dur), Outcome: out, Code: code})
}

func (b *builder) cas(proc int, node, key, expect, val string, at, dur float64, out model.Outcome, code string) *model.Op {
	return b.add(model.Op{Kind: model.KindCAS, Process: proc, Worker: proc, Node: node, Key: key, Expect: model.Str(expect),
		Value: val, Invoke: sec(at), Complete: sec(at + dur), Outcome: out, Code: code})
}

func (b *builder) read(node, key string, at float64, out model.Outcome, values ...string) *model.Op {
	code := "NOERROR"
	if out != model.OK {
		code = "timeout"
	}
	return b.add(model.Op{Kind: model.KindRead, Process: 100, Node: node, Key: key, Values: values,
		Invoke: sec(at), Outcome: out, Code: code})
}

func (b *builder) soa(node string, at float64, serial uint32) *model.Op {
	return b.add(model.Op{Kind: model.KindSOA, Process: 200, Node: node, Invoke: sec(at), Serial: serial, Outcome: model.OK, Code: "NOERROR"})
}

func (b *builder) status(node string, at float64, state string, term uint64, leader string) *model.Op {
	return b.add(model.Op{Kind: model.KindStatus, Process: 300, Node: node, Invoke: sec(at), State: state,
		Term: term, Leader: leader, Ready: true, ClusterID: "c-main", Outcome: model.OK})
}

func (b *builder) digest(node string, round int, at float64, serial uint32, index uint64, digest string) *model.Op {
	return b.add(model.Op{Kind: model.KindDigest, Node: node, Round: round, Invoke: sec(at), Serial: serial,
		Index: index, Digest: digest, Outcome: model.OK})
}

func (b *builder) final(node string, at float64, keys []string, kv map[string]string) *model.Op {
	return b.add(model.Op{Kind: model.KindFinal, Node: node, Invoke: sec(at), Values: keys, KV: kv,
		Serial: 500, Index: 900, Digest: "d-final", Outcome: model.OK})
}

// cleanRun returns a history that satisfies every invariant.
func cleanRun() *builder {
	b := &builder{}
	var okKeys []string
	serial := uint32(100)
	casVal := ""
	for i := 0; i < 200; i++ { // 0 s .. 20 s, one tick every 100 ms
		t := float64(i) / 10
		node := nodes3[i%3]
		key := fmt.Sprintf("w-%d", i)
		partitioned := t >= 5 && t < 15
		switch {
		case t >= 15:
			// writes stopped at the final heal
		case partitioned && node == "n3":
			b.write(i%3, node, key, t, 0.05, model.Fail, "no_quorum")
		default:
			b.write(i%3, node, key, t, 0.02, model.OK, "")
			okKeys = append(okKeys, key)
			serial++
		}
		if t < 15 && i%2 == 0 && !(partitioned && node == "n3") {
			next := fmt.Sprintf("c%d", i)
			b.cas(10+i%3, node, "ck", casVal, next, t, 0.03, model.OK, "")
			casVal = next
		}
		for _, n := range nodes3 {
			b.read(n, "ck", t+0.01, model.OK, casValueOrNone(casVal)...)
			s := serial
			if n == "n3" && partitioned {
				s = 150 // n3 is stuck at what it had before the partition
			}
			b.soa(n, t+0.02, s)
		}
		if i%5 == 0 {
			b.status("n1", t, "leader", 2, "n1")
			b.status("n2", t, "follower", 2, "n1")
			b.status("n3", t, "follower", 2, "n1")
		}
		switch t {
		case 5:
			b.nemesis(5, model.NemPartition, []string{"n3"}, []string{"n3"})
		case 15:
			b.nemesis(15, model.NemFinalHeal, nodes3, nil)
			b.digest("n1", 1, 15.1, serial, 900, "d-final")
			b.digest("n2", 1, 15.1, serial, 900, "d-final")
			b.digest("n3", 1, 15.1, 150, 400, "d-old")
			for _, n := range nodes3 {
				b.digest(n, 2, 15.6, serial, 900, "d-final")
			}
		}
	}
	for _, n := range nodes3 {
		b.final(n, 20.5, slices.Clone(okKeys), map[string]string{"ck": casVal})
	}
	return b
}

func casValueOrNone(v string) []string {
	if v == "" {
		return nil
	}
	return []string{v}
}

// find returns a pointer to the first op matching pred.
func (b *builder) find(pred func(o *model.Op) bool) *model.Op {
	for i := range b.h {
		if pred(&b.h[i]) {
			return &b.h[i]
		}
	}
	panic("no op matches")
}
