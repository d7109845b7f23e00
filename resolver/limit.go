package resolver

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// errStopping ends a listener's read loop when the server closes.
var errStopping = errors.New("dns server stopping")

// slots bounds the UDP queries of one socket being answered at once. A
// reader takes slots before it reads (as many as the datagrams it may read
// at once, at least one) and gives back those it did not use; each query
// gives its slot back when it is done. A flood therefore backs up in the
// kernel's socket buffer (and is dropped there) instead of growing
// goroutines and memory without bound.
//
// Usually one goroutine per socket acquires and the same goroutine
// releases, so the common path is one compare-and-swap per batch and one
// atomic add per query; a reader that finds no free slot sleeps until a
// release makes room.
type slots struct {
	max     int64
	free    atomic.Int64
	waiting atomic.Int32  // readers sleeping in acquire
	wake    chan struct{} // capacity 1: a release signals a sleeping reader
	stop    <-chan struct{}
	full    prometheus.Counter
}

func newSlots(max int, stop <-chan struct{}, full prometheus.Counter) *slots {
	l := &slots{max: int64(max), wake: make(chan struct{}, 1), stop: stop, full: full}
	l.free.Store(int64(max))
	return l
}

// acquire takes between 1 and want free slots, waiting while there are
// none, and returns how many it took. It fails only when the server stops.
func (l *slots) acquire(want int) (int, error) {
	counted := false
	for {
		if f := l.free.Load(); f > 0 {
			n := min(f, int64(want))
			if !l.free.CompareAndSwap(f, f-n) {
				continue
			}
			if f > n && l.waiting.Load() > 0 {
				l.signal() // slots are left for another sleeping reader
			}
			return int(n), nil
		}
		if !counted {
			l.full.Inc()
			counted = true
		}
		l.waiting.Add(1)
		if l.free.Load() > 0 { // a release came before we registered
			l.waiting.Add(-1)
			continue
		}
		select {
		case <-l.wake:
			l.waiting.Add(-1)
		case <-l.stop:
			l.waiting.Add(-1)
			return 0, errStopping
		}
	}
}

// release gives n slots back.
func (l *slots) release(n int) {
	if l.free.Add(int64(n)) == int64(n) && l.waiting.Load() > 0 {
		l.signal()
	}
}

func (l *slots) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// limitListener bounds open TCP connections: Accept waits for a free slot,
// and closing a connection frees it.
type limitListener struct {
	net.Listener
	sem  chan struct{}
	stop <-chan struct{}
	full prometheus.Counter
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	default:
		l.full.Inc()
		select {
		case l.sem <- struct{}{}:
		case <-l.stop:
			return nil, errStopping
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
