//go:build linux

package resolver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"
)

// udpState is the UDP side of a Server on Linux: kudurru's own serving
// loop over each SO_REUSEPORT socket, with batched reads and writes
// (recvmmsg, sendmmsg) and the queries answered on the reading goroutine.
// See DESIGN.md, "The UDP serving loop".
type udpState struct {
	socks []*udpSocket

	live     atomic.Int64  // worker goroutines running
	gone     chan struct{} // closed once no worker runs after stopping
	goneOnce sync.Once

	watch watchdog
}

// startUDP starts serving the bound UDP sockets. It takes ownership of
// conns, closing them all if it fails. Serving starts at once (the sockets
// are bound), so there is nothing to wait for: it returns 0 listeners to
// wait on. Must hold s.mu.
func (s *Server) startUDP(conns []*net.UDPConn, _ func(), _ chan<- error) (int, error) {
	st := &s.udpSt
	st.gone = make(chan struct{})
	st.watch.init()
	for _, c := range conns {
		u, err := newUDPSocket(s, c)
		if err != nil {
			for _, c := range conns {
				c.Close()
			}
			st.socks = nil
			return 0, err
		}
		st.socks = append(st.socks, u)
	}
	// One reading goroutine per socket when there is a socket per CPU
	// (the default); more share a socket when there are fewer sockets.
	per := max(1, (runtime.GOMAXPROCS(0)+len(st.socks)-1)/len(st.socks))
	for _, u := range st.socks {
		u.mu.Lock()
		for range per {
			u.spawnLocked(nil)
		}
		u.mu.Unlock()
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.watchUDP()
	}()
	return 0, nil
}

// stopUDP stops reading and waits, until ctx ends, for the queries read
// to be answered.
func (s *Server) stopUDP(ctx context.Context) error {
	st := &s.udpSt
	if st.gone == nil {
		return nil // never started
	}
	past := time.Unix(1, 0)
	for _, u := range st.socks {
		u.conn.SetReadDeadline(past) // wakes the readers; they see s.stop
	}
	if st.live.Load() == 0 {
		st.goneOnce.Do(func() { close(st.gone) })
	}
	select {
	case <-st.gone:
		return nil
	case <-ctx.Done():
		// Unblock writers stuck on a full socket buffer; queries still
		// in a stage see s.ctx cancelled.
		for _, u := range st.socks {
			u.conn.SetWriteDeadline(past)
		}
		return fmt.Errorf("udp shutdown: %w", ctx.Err())
	}
}

// closeUDP closes the sockets once every goroutine has ended.
func (s *Server) closeUDP() {
	for _, u := range s.udpSt.socks {
		u.conn.Close()
	}
}

// udpSocket is one UDP socket and the workers that serve it.
type udpSocket struct {
	s       *Server
	conn    *net.UDPConn
	rc      syscall.RawConn
	lim     *slots
	pktinfo bool // the socket is bound to a wildcard address: replies need a source
	badMsgs prometheus.Counter

	mu      sync.Mutex   // guards the fields below
	workers []*udpWorker // running workers
	spare   []*readBatch // batches no worker holds, for the next worker to read into
}

func newUDPSocket(s *Server, c *net.UDPConn) (*udpSocket, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("udp socket %s: %w", c.LocalAddr(), err)
	}
	u := &udpSocket{s: s, conn: c, rc: rc,
		lim:     newSlots(s.cfg.UDPMaxInflight, s.stop, s.metrics.overload.WithLabelValues("udp")),
		badMsgs: s.metrics.malformed.WithLabelValues("udp")}
	if a, ok := c.LocalAddr().(*net.UDPAddr); ok && (a.IP.IsUnspecified() || forcePktinfo) {
		if err := enablePktinfo(rc, a.IP.To4() == nil); err != nil {
			return nil, fmt.Errorf("udp socket %s: packet info: %w", c.LocalAddr(), err)
		}
		u.pktinfo = true
	}
	return u, nil
}

// forcePktinfo makes sockets bound to a specific address use packet
// information as wildcard-bound ones do (tests only: they may bind
// 127.0.0.1 alone).
var forcePktinfo = false

// enablePktinfo asks for the destination address of each datagram, so that
// a socket bound to a wildcard address replies from the address a query was
// sent to (what miekg/dns does with the same options). An IPv6 socket may
// also carry IPv4, so it asks for both and fails only if both fail.
func enablePktinfo(rc syscall.RawConn, v6 bool) error {
	var err4, err6 error
	err := rc.Control(func(fd uintptr) {
		err4 = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_PKTINFO, 1)
		if v6 {
			err6 = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_RECVPKTINFO, 1)
		}
	})
	switch {
	case err != nil:
		return err
	case v6 && err6 != nil && err4 != nil:
		return err6
	case !v6:
		return err4
	}
	return nil
}

// spawnLocked starts a worker, first serving what is left of b when b is
// not nil. Must hold u.mu.
func (u *udpSocket) spawnLocked(b *readBatch) {
	w := &udpWorker{u: u}
	w.rio.init(u.rc)
	w.wio.init(u.rc)
	u.workers = append(u.workers, w)
	st := &u.s.udpSt
	st.live.Add(1)
	u.s.wg.Add(1)
	go func() {
		defer u.s.wg.Done()
		w.run(b)
		u.exit(w)
	}()
}

// exit removes a finished worker.
func (u *udpSocket) exit(w *udpWorker) {
	u.mu.Lock()
	for i, x := range u.workers {
		if x == w {
			u.workers = append(u.workers[:i], u.workers[i+1:]...)
			break
		}
	}
	u.mu.Unlock()
	st := &u.s.udpSt
	if st.live.Add(-1) == 0 && stopped(u.s.stop) {
		st.goneOnce.Do(func() { close(st.gone) })
	}
}

// getBatch returns a batch to read into.
func (u *udpSocket) getBatch() *readBatch {
	u.mu.Lock()
	defer u.mu.Unlock()
	if n := len(u.spare); n > 0 {
		b := u.spare[n-1]
		u.spare = u.spare[:n-1]
		return b
	}
	return newReadBatch(u.pktinfo)
}

// putBatch keeps a batch nobody holds for a later reader; a few are enough.
func (u *udpSocket) putBatch(b *readBatch) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.spare) < 4 {
		u.spare = append(u.spare, b)
	}
}

func stopped(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// udpWorker is a goroutine serving one socket: it reads a batch of
// datagrams, answers each query in turn on its own goroutine, and sends the
// replies together.
type udpWorker struct {
	u   *udpSocket
	rio mmsgIO // reads: the worker's own

	// state is the number of queries this worker has started, shifted
	// left by one, with the low bit set while a query runs in the chain.
	// The watchdog reads it to find a worker held up by a slow query.
	state   atomic.Uint64
	calls   uint64      // the worker's own count behind state
	rescued atomic.Bool // the watchdog gave the socket to a helper: finish and exit
	seen    uint64      // state at the watchdog's last look; watchdog only

	mu  sync.Mutex // guards in, out and wio (the watchdog takes them over)
	in  *readBatch // the batch being served, nil between batches
	out writeBatch // replies not yet sent
	wio mmsgIO     // writes
}

// run is the worker's loop. A helper starts with what is left of the
// batch of the worker it replaces; a worker started with the socket begins
// with a read.
func (w *udpWorker) run(b *readBatch) {
	if b != nil {
		b = w.serveBatch(b)
	}
	for !w.rescued.Load() && !stopped(w.u.s.stop) {
		if b == nil {
			b = w.u.getBatch()
		}
		if err := w.read(b); err != nil {
			if stopped(w.u.s.stop) {
				break
			}
			if temporary(err) {
				continue
			}
			w.u.s.listenerFailed(fmt.Errorf("udp read on %s: %w", w.u.conn.LocalAddr(), err))
			break
		}
		b = w.serveBatch(b)
	}
	if b != nil {
		w.u.putBatch(b)
	}
}

// temporary reports whether a read error may go away by itself.
func temporary(err error) bool {
	return errors.Is(err, unix.ENOBUFS) || errors.Is(err, unix.ENOMEM) || errors.Is(err, unix.EINTR)
}

// listenerFailed records a listener that stopped serving, for Close.
func (s *Server) listenerFailed(err error) {
	s.log.Error("dns listener stopped", "error", err)
	s.mu.Lock()
	s.errs = append(s.errs, err)
	s.mu.Unlock()
}

// read fills b with the datagrams waiting on the socket, at least one, and
// with no more than the free in-flight slots.
func (w *udpWorker) read(b *readBatch) error {
	lim := w.u.lim
	want, err := lim.acquire(batchSize)
	if err != nil {
		return err
	}
	n, err := w.rio.recv(b, want)
	if n < want {
		lim.release(want - n)
	}
	if err != nil {
		return err
	}
	b.loaded(n)
	return nil
}

// serveBatch answers the queries of b that nobody else has claimed, sends
// the replies, and returns b if it can be read into again (no one else
// holds it).
//
// A rescue hands b, with the worker's reference, to a helper (w.in becomes
// nil): the worker then stops claiming and leaves b to it.
func (w *udpWorker) serveBatch(b *readBatch) *readBatch {
	w.mu.Lock()
	w.in = b
	w.mu.Unlock()
	for i := b.claim(); i >= 0; i = b.claim() {
		w.serveSlot(b, i)
		if w.rescued.Load() && !w.holds(b) {
			break
		}
	}
	w.mu.Lock()
	held := w.in == b
	w.in = nil
	w.flushLocked()
	w.mu.Unlock()
	if held && b.unref() {
		return b
	}
	return nil // a helper has it, or a slot not yet parsed: the last one puts it back
}

// holds reports whether w still serves b (no helper took it over).
func (w *udpWorker) holds(b *readBatch) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.in == b
}

// serveSlot answers the datagram in slot i of b: parse, run the chain,
// queue the reply. It frees the slot as soon as the query is parsed.
func (w *udpWorker) serveSlot(b *readBatch, i int) {
	s := w.u.s
	data, whole := b.datagram(i)
	if len(data) < 12 || data[2]&0x80 != 0 {
		// Shorter than a header: malformed, no reply. A response (QR):
		// no reply either, it could only serve reflection.
		if len(data) < 12 {
			w.u.badMsgs.Inc()
		}
		w.done(b)
		return
	}
	q := &udpQuery{w: w}
	h := &b.hdrs[i].Hdr
	var oob []byte
	if w.u.pktinfo {
		oob = b.oob[i][:h.Controllen]
	}
	q.peer.set(&b.addrs[i], h.Namelen, oob)
	q.peer.udpAddr(&q.raddr, &q.rip)
	r := &q.req
	var err error
	if whole {
		err = r.Unpack(data)
	} else {
		// Longer than the buffers could keep: answer from the header.
		err = r.Unpack(data[:12])
		if err == nil {
			err = errors.New("datagram too long")
		}
	}
	if b.unref() {
		// The last reference: a helper took b over while this slot was
		// being parsed, and has finished with it.
		w.u.putBatch(b)
	}
	if err != nil {
		w.u.badMsgs.Inc()
		if reply, perr := formErr(r); perr == nil {
			q.Write(reply)
		}
		w.u.lim.release(1)
		return
	}
	w.calls++
	w.state.Store(w.calls<<1 | 1)
	s.udpSt.watch.busy()
	q.rw.init(q, r, false, q.peer.family(), s.cfg.EDNSUDPSize)
	s.serveMsg(&q.rw, r)
	q.finished.Store(true)
	w.state.Store(w.calls << 1)
	w.u.lim.release(1)
}

// formErr is the reply to a message whose header parsed but whose body did
// not, built as miekg/dns builds it on TCP: the header with QR, opcode
// QUERY and FORMERR, the question if it parsed, nothing else. It does not
// pass the chain (there is no query to give it) and carries no OPT record.
func formErr(req *dns.Msg) ([]byte, error) {
	req.SetRcodeFormatError(req)
	req.Zero = false
	req.Ns, req.Answer, req.Extra = nil, nil, nil
	return req.Pack()
}

// done ends a slot that gets no reply.
func (w *udpWorker) done(b *readBatch) {
	if b.unref() {
		w.u.putBatch(b)
	}
	w.u.lim.release(1)
}

// queue adds a reply to the worker's write batch. The batch is sent when it
// is full, when the worker has served all it holds, and at once for a
// worker the watchdog has rescued or a reply written after its query
// finished (a stage that wrote late from another goroutine).
func (w *udpWorker) queue(reply []byte, p *peer, now bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.out.n == batchSize {
		w.flushLocked()
	}
	w.out.add(reply, p)
	if now || w.rescued.Load() {
		w.flushLocked()
	}
}

// flushLocked sends the queued replies. Must hold w.mu.
func (w *udpWorker) flushLocked() {
	if w.out.n == 0 {
		return
	}
	if lost, err := w.wio.send(&w.out); err != nil {
		s := w.u.s
		if s.log.Enabled(s.ctx, slog.LevelDebug) {
			s.log.Debug("udp replies not sent", "error", err, "lost", lost)
		}
	}
}

// udpQuery is one UDP query: its message, its dns.ResponseWriter and the
// chain's responseWriter that wraps it, in one allocation. It is never
// reused, so a stage may keep a reference to any of them.
type udpQuery struct {
	req      dns.Msg
	rw       responseWriter
	w        *udpWorker
	peer     peer
	raddr    net.UDPAddr // the sender, for RemoteAddr
	rip      [16]byte    // raddr's IP
	finished atomic.Bool
}

// Write queues b as the reply; it is sent with the worker's batch.
func (q *udpQuery) Write(b []byte) (int, error) {
	if len(b) > dns.MaxMsgSize {
		return 0, errors.New("reply larger than a UDP datagram")
	}
	q.w.queue(b, &q.peer, q.finished.Load())
	return len(b), nil
}

// WriteMsg packs m and writes it as it is. The chain's responseWriter
// wraps this writer and does not call it; it is here for the interface.
func (q *udpQuery) WriteMsg(m *dns.Msg) error {
	b, err := m.Pack()
	if err != nil {
		return err
	}
	_, err = q.Write(b)
	return err
}

func (q *udpQuery) LocalAddr() net.Addr  { return q.w.u.conn.LocalAddr() }
func (q *udpQuery) RemoteAddr() net.Addr { return &q.raddr }
func (q *udpQuery) Close() error         { return nil }
func (q *udpQuery) TsigStatus() error    { return nil }
func (q *udpQuery) TsigTimersOnly(bool)  {}
func (q *udpQuery) Hijack()              {}

var _ dns.ResponseWriter = (*udpQuery)(nil)
