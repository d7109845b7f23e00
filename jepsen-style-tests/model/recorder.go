package model

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"
)

// Recorder collects a run's history. It stamps times from one monotonic
// clock started by NewRecorder and streams every Op to history.jsonl as it
// is added, so a run that dies still leaves its history behind. Its methods
// are safe for concurrent use.
type Recorder struct {
	start time.Time // carries the monotonic clock reading

	mu   sync.Mutex // guards everything below
	seq  int64
	ops  History
	f    *os.File
	w    *bufio.Writer
	enc  *json.Encoder
	err  error // first write error
	done bool
}

// NewRecorder starts the clock and opens path for the history; an empty
// path keeps the history in memory only.
func NewRecorder(path string) (*Recorder, error) {
	r := &Recorder{start: time.Now()}
	if path != "" {
		f, err := os.Create(path)
		if err != nil {
			return nil, fmt.Errorf("create history: %w", err)
		}
		r.f = f
		r.w = bufio.NewWriterSize(f, 64<<10)
		r.enc = json.NewEncoder(r.w)
	}
	return r, nil
}

// Now is the time since the start of the run in nanoseconds, monotonic.
func (r *Recorder) Now() int64 { return int64(time.Since(r.start)) }

// Add appends o with the next sequence number and returns it. Ops added
// after Close are dropped.
func (r *Recorder) Add(o Op) Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return o
	}
	r.seq++
	o.Seq = r.seq
	if o.Complete == 0 {
		o.Complete = o.Invoke
	}
	r.ops = append(r.ops, o)
	if r.enc != nil && r.err == nil {
		r.err = r.enc.Encode(o)
	}
	return o
}

// Nemesis records a fault event at the current time.
func (r *Recorder) Nemesis(action, desc string, nodes, minority []string) Op {
	now := r.Now()
	return r.Add(Op{Kind: KindNemesis, Process: -1, Nemesis: action, Value: desc,
		Nodes: nodes, Minority: minority, Invoke: now, Complete: now, Outcome: OK})
}

// History returns a copy of what was recorded so far.
func (r *Recorder) History() History {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append(History(nil), r.ops...)
}

// Flush writes buffered lines to the file.
func (r *Recorder) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.w != nil && r.err == nil {
		r.err = r.w.Flush()
	}
	return r.err
}

// Close flushes and closes the file; later Adds are dropped. It is
// idempotent.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return r.err
	}
	r.done = true
	if r.w != nil {
		if err := r.w.Flush(); err != nil && r.err == nil {
			r.err = err
		}
		if err := r.f.Close(); err != nil && r.err == nil {
			r.err = err
		}
	}
	return r.err
}
