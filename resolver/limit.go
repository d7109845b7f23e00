package resolver

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// errStopping ends a listener's read loop when the server closes.
var errStopping = errors.New("dns server stopping")

// inflight bounds the UDP queries of one socket being answered at once.
// miekg/dns starts a goroutine per packet; the socket's reader takes a slot
// before it reads and the query gives it back when done, so a flood backs up
// in the kernel's socket buffer (and is dropped there) instead of growing
// goroutines without bound.
//
// Only the socket's single read loop acquires; any query goroutine
// releases. The common path is one atomic add each way; a full reader
// sleeps on wake until a release makes room.
type inflight struct {
	max  int64
	n    atomic.Int64  // slots taken, plus one while the reader waits
	wake chan struct{} // capacity 1: a release signals a waiting reader
	stop <-chan struct{}
	full prometheus.Counter
}

func newInflight(max int, stop <-chan struct{}, full prometheus.Counter) *inflight {
	return &inflight{max: int64(max), wake: make(chan struct{}, 1), stop: stop, full: full}
}

func (l *inflight) acquire() error {
	if l.n.Add(1) <= l.max {
		return nil
	}
	l.full.Inc()
	for {
		select {
		case <-l.wake:
			if l.n.Load() <= l.max {
				return nil
			}
		case <-l.stop:
			l.n.Add(-1)
			return errStopping
		}
	}
}

func (l *inflight) release() {
	if l.n.Add(-1) >= l.max {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}

// limitedReader takes an inflight slot for every packet it reads. Each read
// packet gives the slot back exactly once, on one of the paths miekg/dns
// takes: the handler finishing, the accept function ignoring it, or the
// invalid-message hook (a short or unparsable packet).
type limitedReader struct {
	dns.Reader
	lim *inflight
}

func (r limitedReader) ReadUDP(conn *net.UDPConn, timeout time.Duration) ([]byte, *dns.SessionUDP, error) {
	if err := r.lim.acquire(); err != nil {
		return nil, nil, err
	}
	m, s, err := r.Reader.ReadUDP(conn, timeout)
	if err != nil {
		r.lim.release()
	}
	return m, s, err
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
