//go:build linux

package resolver

import (
	"sync/atomic"
	"time"
)

const (
	// watchTick is how often the watchdog looks at the UDP workers. A
	// query found in the chain at two looks in a row (so running for 2 to
	// 4 ms) gets its worker rescued.
	watchTick = 2 * time.Millisecond
	// watchIdleTicks is how many looks without a query started make the
	// watchdog sleep until the next query.
	watchIdleTicks = 50
)

// watchdog lets the UDP workers answer queries on their own goroutine
// without a slow query (a stage waiting on the network, say) holding up the
// socket. A worker runs one query at a time; when one stays in the chain
// across two looks, the watchdog rescues its worker: it sends the replies
// the worker has queued, and starts a helper that serves the rest of the
// worker's batch and then reads the socket in its place. The rescued worker
// finishes its query, sends its reply at once and exits. Helpers count
// against udp_max_inflight, so goroutines stay bounded.
//
// The watchdog sleeps when no query has started for watchIdleTicks looks;
// the next query to start wakes it (busy).
type watchdog struct {
	parked atomic.Bool
	wake   chan struct{} // capacity 1: the worker that unparks the watchdog signals here
}

func (d *watchdog) init() { d.wake = make(chan struct{}, 1) }

// busy is called by a worker as a query enters the chain.
func (d *watchdog) busy() {
	if d.parked.Load() && d.parked.CompareAndSwap(true, false) {
		select {
		case d.wake <- struct{}{}:
		default:
		}
	}
}

// watchUDP is the watchdog's loop; it returns when the server stops.
func (s *Server) watchUDP() {
	d := &s.udpSt.watch
	t := time.NewTicker(watchTick)
	defer t.Stop()
	idle := 0
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		if s.lookUDP() {
			idle = 0
			continue
		}
		if idle++; idle < watchIdleTicks {
			continue
		}
		// Park. A worker checks parked after it marks a query started,
		// and we look again after setting it, so one of us sees the other.
		d.parked.Store(true)
		if s.lookUDP() {
			if !d.parked.CompareAndSwap(true, false) {
				<-d.wake // a worker unparked us first and signalled
			}
			idle = 0
			continue
		}
		t.Stop()
		select {
		case <-s.stop:
			return
		case <-d.wake:
		}
		idle = 0
		t.Reset(watchTick)
	}
}

// lookUDP looks at every worker once, rescues those held up by a slow
// query, and reports whether any query started or was running.
func (s *Server) lookUDP() bool {
	active := false
	for _, u := range s.udpSt.socks {
		if u.look() {
			active = true
		}
	}
	return active
}

func (u *udpSocket) look() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	active := false
	for _, w := range u.workers { // rescue may append; new workers wait for the next look
		v := w.state.Load()
		switch {
		case v != w.seen:
			active = true
		case v&1 == 1: // the same query as at the last look
			active = true
			u.rescueLocked(w)
		}
		w.seen = v
	}
	return active
}

// rescueLocked sends what w has queued and starts a helper that takes over
// the rest of w's batch and the socket. Must hold u.mu.
func (u *udpSocket) rescueLocked(w *udpWorker) {
	if !w.rescued.CompareAndSwap(false, true) {
		return // already rescued; its query is still running
	}
	spawn := !stopped(u.s.stop) && len(u.workers) <= u.s.cfg.UDPMaxInflight
	var b *readBatch
	// TryLock: never wait on a worker. If it holds the lock it is writing
	// (so not stuck in a stage), and from now on it sends every reply at
	// once because it is marked rescued.
	if w.mu.TryLock() {
		w.flushLocked()
		if spawn && w.in != nil {
			// The helper takes the batch over with w's reference: w
			// stops claiming from it, and the helper reads into it
			// next, so a rescue allocates no batch.
			b, w.in = w.in, nil
		}
		w.mu.Unlock()
	}
	if spawn {
		u.spawnLocked(b)
	}
}
