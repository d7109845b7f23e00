package upstream

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
)

// streamTransport carries queries over one long-lived TCP or TLS connection
// at a time, pipelined (RFC 7766 §6.2.1.1): many queries in flight, answers
// matched by ID in any order. A dead or idle connection is replaced on the
// next query; a query lost with a reused connection is retried once on a
// fresh one, since the server may have closed it just as it was sent.
type streamTransport struct {
	name        string
	dial        func(ctx context.Context) (net.Conn, error)
	dialTimeout time.Duration
	idle        time.Duration
	base        context.Context // cancelled when the Forwarder closes
	goes        *tracker
	dropped     func()

	mu     sync.Mutex
	cur    *pconn // current connection, maybe dialling or dead; guarded by mu
	closed bool   // guarded by mu
}

// pconn is one pipelined connection. Its dialler goroutine becomes the
// reader; a second goroutine writes queued frames.
type pconn struct {
	ready    chan struct{} // closed once the dial finished
	err      error         // dial error; set before ready is closed
	writes   chan []byte
	done     chan struct{} // closed when the connection is dead
	answered atomic.Uint64

	mu      sync.Mutex
	conn    net.Conn         // guarded by mu until ready is closed
	pending map[uint16]*call // guarded by mu
	dead    bool             // guarded by mu
}

// call is a query waiting for its answer.
type call struct {
	q  *dns.Msg
	id uint16
	ch chan *dns.Msg // buffered: the reader never blocks
}

func (t *streamTransport) exchange(ctx context.Context, q *dns.Msg) (*dns.Msg, error) {
	for try := 0; ; try++ {
		pc, err := t.conn(ctx)
		if err != nil {
			return nil, err
		}
		r, reused, err := pc.exchange(ctx, q)
		if errors.Is(err, errConnLost) && reused && try == 0 {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.name, err)
		}
		return r, nil
	}
}

// conn returns a live connection, starting a dial if there is none.
func (t *streamTransport) conn(ctx context.Context) (*pconn, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, ErrClosed
	}
	pc := t.cur
	if pc == nil || pc.isDead() {
		pc = &pconn{
			ready:   make(chan struct{}),
			writes:  make(chan []byte, 64),
			done:    make(chan struct{}),
			pending: make(map[uint16]*call),
		}
		if !t.goes.goFunc(func() { t.run(pc) }) {
			t.mu.Unlock()
			return nil, ErrClosed
		}
		t.cur = pc
	}
	t.mu.Unlock()
	select {
	case <-pc.ready:
		if pc.err != nil {
			return nil, pc.err
		}
		return pc, nil
	case <-ctx.Done():
		return nil, ioError(ctx, ctx.Err())
	}
}

// run dials, then reads answers until the connection dies.
func (t *streamTransport) run(pc *pconn) {
	ctx, cancel := context.WithTimeout(t.base, t.dialTimeout)
	conn, err := t.dial(ctx)
	cancel()
	if err != nil {
		err = fmt.Errorf("dial %s: %w", t.name, ioError(ctx, err))
	}
	pc.mu.Lock()
	if err == nil && pc.dead {
		conn.Close()
		err = ErrClosed
	}
	if err != nil {
		pc.err = err
		if !pc.dead {
			pc.dead = true
			close(pc.done)
		}
	} else {
		pc.conn = conn
	}
	pc.mu.Unlock()
	close(pc.ready)
	if err != nil {
		return
	}
	if !t.goes.goFunc(func() { pc.writeLoop(t.idle) }) {
		pc.kill()
		return
	}
	pc.readLoop(t.idle, t.dropped)
}

func (pc *pconn) isDead() bool {
	select {
	case <-pc.done:
		return true
	default:
		return false
	}
}

// kill marks the connection dead, fails its pending queries and closes it.
func (pc *pconn) kill() {
	pc.mu.Lock()
	if pc.dead {
		pc.mu.Unlock()
		return
	}
	pc.dead = true
	close(pc.done)
	conn := pc.conn
	pc.pending = nil
	pc.mu.Unlock()
	if conn != nil {
		conn.Close()
	}
}

func (pc *pconn) forget(id uint16) {
	pc.mu.Lock()
	delete(pc.pending, id)
	pc.mu.Unlock()
}

// exchange sends q and waits for its answer. reused reports that the
// connection had answered before, so a loss may be a server-side close.
func (pc *pconn) exchange(ctx context.Context, q *dns.Msg) (r *dns.Msg, reused bool, err error) {
	pc.mu.Lock()
	if pc.dead {
		pc.mu.Unlock()
		return nil, false, errConnLost
	}
	if len(pc.pending) >= 1<<15 {
		pc.mu.Unlock()
		return nil, false, ErrOverloaded
	}
	id := randomID()
	for pc.pending[id] != nil {
		id = randomID()
	}
	c := &call{q: q, id: id, ch: make(chan *dns.Msg, 1)}
	pc.pending[id] = c
	reused = pc.answered.Load() > 0
	pc.mu.Unlock()

	msg, err := packWithID(q, id, nil)
	if err != nil {
		pc.forget(id)
		return nil, reused, err
	}
	frame := make([]byte, 2+len(msg))
	binary.BigEndian.PutUint16(frame, uint16(len(msg)))
	copy(frame[2:], msg)
	select {
	case pc.writes <- frame:
	case <-pc.done:
		return nil, reused, errConnLost
	case <-ctx.Done():
		pc.forget(id)
		return nil, reused, ioError(ctx, ctx.Err())
	}
	select {
	case r = <-c.ch:
	case <-pc.done:
		select {
		case r = <-c.ch:
		default:
			return nil, reused, errConnLost
		}
	case <-ctx.Done():
		pc.forget(id)
		return nil, reused, ioError(ctx, ctx.Err())
	}
	r.Id = q.Id
	return r, reused, nil
}

func (pc *pconn) writeLoop(timeout time.Duration) {
	for {
		select {
		case f := <-pc.writes:
			_ = pc.conn.SetWriteDeadline(time.Now().Add(timeout))
			if _, err := pc.conn.Write(f); err != nil {
				pc.kill()
				return
			}
		case <-pc.done:
			return
		}
	}
}

// readLoop delivers answers to their callers. The connection closes after
// idle time with nothing pending, or on any read error.
func (pc *pconn) readLoop(idle time.Duration, dropped func()) {
	defer pc.kill()
	br := bufio.NewReader(pc.conn)
	var lenBuf [2]byte
	for {
		_ = pc.conn.SetReadDeadline(time.Now().Add(idle))
		if _, err := io.ReadFull(br, lenBuf[:]); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && pc.hasPending() {
				continue
			}
			return
		}
		buf := make([]byte, binary.BigEndian.Uint16(lenBuf[:]))
		if _, err := io.ReadFull(br, buf); err != nil {
			return
		}
		r := new(dns.Msg)
		if r.Unpack(buf) != nil {
			dropped()
			continue
		}
		pc.mu.Lock()
		c := pc.pending[r.Id]
		if c != nil && matches(c.q, c.id, r) {
			delete(pc.pending, r.Id)
		} else {
			c = nil
		}
		pc.mu.Unlock()
		if c == nil {
			dropped()
			continue
		}
		pc.answered.Add(1)
		c.ch <- r
	}
}

func (pc *pconn) hasPending() bool {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return len(pc.pending) > 0
}

// close kills the current connection and refuses new ones.
func (t *streamTransport) close() {
	t.mu.Lock()
	t.closed = true
	pc := t.cur
	t.cur = nil
	t.mu.Unlock()
	if pc != nil {
		pc.kill()
	}
}
