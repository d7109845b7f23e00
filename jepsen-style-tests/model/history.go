// Package model holds what the partition suite records and reasons about:
// the history of one scenario run (one JSON line per client operation,
// poll, nemesis event and final read, all on one monotonic timeline) and
// the porcupine model of the compare-and-set write path.
//
// The history is the only input of the checkers, so every checker can be
// unit-tested with a crafted history and a scenario can be re-checked later
// from its history.jsonl alone.
package model

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
)

// Kind says what an Op records.
type Kind string

// Kinds of history entries.
const (
	KindWrite   Kind = "write"   // a unique-record write through the HTTP API
	KindCAS     Kind = "cas"     // a compare-and-set write through the HTTP API
	KindRead    Kind = "read"    // a DNS TXT query
	KindSOA     Kind = "soa"     // a DNS SOA query by the serial poller
	KindStatus  Kind = "status"  // a GET /v1/cluster poll
	KindDigest  Kind = "digest"  // a convergence probe: one node's zone after the final heal
	KindFinal   Kind = "final"   // the final read of one node's zone
	KindNemesis Kind = "nemesis" // a fault injected or healed
)

// Outcome is how an operation ended.
type Outcome string

// Outcomes. A write whose outcome is unknown may or may not have committed.
const (
	OK      Outcome = "ok"
	Fail    Outcome = "fail"
	Unknown Outcome = "unknown"
)

// Nemesis actions, the Nemesis field of a KindNemesis Op.
const (
	NemPartition = "partition"  // drop rules installed; Nodes are cut as described in Value
	NemHeal      = "heal"       // every drop rule removed
	NemKill      = "kill"       // SIGKILL
	NemStop      = "stop"       // SIGTERM, graceful
	NemStart     = "start"      // process (re)started
	NemPause     = "pause"      // SIGSTOP
	NemResume    = "resume"     // SIGCONT
	NemRemove    = "remove"     // removed from the Raft configuration
	NemJoin      = "join"       // a new node joined
	NemForeign   = "foreign"    // a node was given another cluster's local.db; Value is the marker, Code the foreign cluster ID
	NemNetem     = "netem"      // tc netem delay/loss added
	NemFinalHeal = "final-heal" // every fault is gone; Nodes are the members that must converge
)

// Op is one line of history.jsonl. Fields that do not apply to a Kind are
// left empty. Times are nanoseconds since the start of the run on a
// monotonic clock.
type Op struct {
	Seq      int64    `json:"seq"`
	Kind     Kind     `json:"kind"`
	Process  int      `json:"process"`          // client process; a new one after an unknown outcome; -1 for the nemesis
	Worker   int      `json:"worker,omitempty"` // stable worker index across processes
	Node     string   `json:"node,omitempty"`   // node the request went to
	Key      string   `json:"key,omitempty"`    // owner name, relative to the zone
	Value    string   `json:"value,omitempty"`  // value written, or nemesis description
	Expect   *string  `json:"expect,omitempty"` // CAS precondition; "" means absent
	Invoke   int64    `json:"invoke_ns"`
	Complete int64    `json:"complete_ns"`
	Outcome  Outcome  `json:"outcome"`
	Status   int      `json:"status,omitempty"` // HTTP status
	Code     string   `json:"code,omitempty"`   // API error code, DNS rcode name, or "timeout"
	Error    string   `json:"error,omitempty"`
	Serial   uint32   `json:"serial,omitempty"`
	Index    uint64   `json:"index,omitempty"`
	Values   []string `json:"values,omitempty"` // values read; for KindFinal the owner names present
	// Status polls.
	State     string `json:"state,omitempty"`
	Term      uint64 `json:"term,omitempty"`
	Leader    string `json:"leader,omitempty"`
	Ready     bool   `json:"ready,omitempty"`
	ClusterID string `json:"cluster_id,omitempty"`
	// Convergence probes and final reads.
	Digest string            `json:"digest,omitempty"`
	Round  int               `json:"round,omitempty"`
	KV     map[string]string `json:"kv,omitempty"` // CAS key -> value in the final read
	// Nemesis events.
	Nemesis  string   `json:"nemesis,omitempty"`
	Nodes    []string `json:"nodes,omitempty"`
	Minority []string `json:"minority,omitempty"` // nodes cut off from any majority while this fault stands
}

// Duration is Complete-Invoke in nanoseconds.
func (o Op) Duration() int64 { return o.Complete - o.Invoke }

// Str returns a pointer to s, for Op.Expect.
func Str(s string) *string { return &s }

// History is a run's operations.
type History []Op

// Filter returns the ops of the given kinds, in history order.
func (h History) Filter(kinds ...Kind) History {
	var out History
	for _, o := range h {
		if slices.Contains(kinds, o.Kind) {
			out = append(out, o)
		}
	}
	return out
}

// Nemeses returns the nemesis events sorted by time.
func (h History) Nemeses() History {
	n := h.Filter(KindNemesis)
	slices.SortStableFunc(n, func(a, b Op) int { return cmpInt64(a.Invoke, b.Invoke) })
	return n
}

// FirstFault is the time of the first nemesis event, or -1 without one.
func (h History) FirstFault() int64 {
	for _, o := range h.Nemeses() {
		if o.Nemesis != NemFinalHeal {
			return o.Invoke
		}
	}
	return -1
}

// FinalHeal returns the final-heal event, if any.
func (h History) FinalHeal() (Op, bool) {
	for _, o := range h.Nemeses() {
		if o.Nemesis == NemFinalHeal {
			return o, true
		}
	}
	return Op{}, false
}

// End is the latest completion time in the history.
func (h History) End() int64 {
	var end int64
	for _, o := range h {
		end = max(end, o.Complete, o.Invoke)
	}
	return end
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ReadFile loads a history.jsonl.
func ReadFile(path string) (History, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f)
}

// Read decodes one Op per line.
func Read(r io.Reader) (History, error) {
	var h History
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var o Op
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
			return nil, fmt.Errorf("history line %d: %w", line, err)
		}
		h = append(h, o)
	}
	return h, sc.Err()
}

// Write encodes h as JSON lines.
func Write(w io.Writer, h History) error {
	enc := json.NewEncoder(w)
	for _, o := range h {
		if err := enc.Encode(o); err != nil {
			return err
		}
	}
	return nil
}
