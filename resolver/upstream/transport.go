package upstream

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// transport sends one query to one upstream and returns its validated
// answer, with the query's own ID restored. It picks the wire ID itself.
type transport interface {
	exchange(ctx context.Context, q *dns.Msg) (*dns.Msg, error)
	close()
}

// randomID returns an unpredictable message ID (RFC 5452 §9.2).
func randomID() uint16 {
	var b [2]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return binary.BigEndian.Uint16(b[:])
}

// packWithID packs q with another ID without touching q.
func packWithID(q *dns.Msg, id uint16, buf []byte) ([]byte, error) {
	m := *q // shallow: Pack does not modify the sections
	m.Id = id
	return m.PackBuffer(buf)
}

// matches reports whether r answers q sent with ID id: QR set, same ID,
// opcode and exactly q's question (name compared case-insensitively). Any
// other packet is dropped (RFC 5452 §9.1).
func matches(q *dns.Msg, id uint16, r *dns.Msg) bool {
	if !r.Response || r.Id != id || r.Opcode != q.Opcode || len(r.Question) != 1 || len(q.Question) != 1 {
		return false
	}
	a, b := q.Question[0], r.Question[0]
	return a.Qtype == b.Qtype && a.Qclass == b.Qclass && equalFoldASCII(a.Name, b.Name)
}

// equalFoldASCII compares DNS names ignoring ASCII case only (RFC 4343).
func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// ioError turns a deadline error into ErrTimeout, or the context's error
// when the caller cancelled.
func ioError(ctx context.Context, err error) error {
	if ctx.Err() == context.Canceled {
		return context.Canceled
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return ErrTimeout
	}
	return err
}

// tracker owns goroutines: it starts them, refuses to once closed, and
// waits for them (the raft goFunc pattern).
type tracker struct {
	mu     sync.Mutex
	closed bool // guarded by mu
	wg     sync.WaitGroup
}

// goFunc runs f in a tracked goroutine and reports false after close.
func (t *tracker) goFunc(f func()) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		f()
	}()
	return true
}

// enter counts a unit of work not run by goFunc (an attempt on the caller's
// goroutine); false after close. Each true enter needs a leave.
func (t *tracker) enter() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.wg.Add(1)
	return true
}

func (t *tracker) leave() { t.wg.Done() }

// closeAndWait refuses new goroutines and waits for running ones.
func (t *tracker) closeAndWait() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.wg.Wait()
}

// aLongTimeAgo is a deadline in the past: setting it unblocks pending I/O.
var aLongTimeAgo = time.Unix(1, 0)
