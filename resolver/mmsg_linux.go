//go:build linux

package resolver

import (
	"net"
	"strconv"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	// batchSize is the most datagrams one recvmmsg or sendmmsg moves.
	batchSize = 32
	// slotSize is how much of each datagram is read into its own slot.
	// The rest of a longer one goes to the batch's shared overflow
	// buffer (see readBatch.datagram).
	slotSize = 4096
	// oobSize holds the packet-information control messages of one
	// datagram: IP_PKTINFO and IPV6_PKTINFO both fit.
	oobSize = 128
)

// readBatch is the receive side of one recvmmsg call. Its slots are handed
// out one at a time (claim), so that a helper can serve the rest of a batch
// whose reader is held up in a slow query (see watchdog_linux.go).
//
// The fields that hold pointers come first: the garbage collector scans an
// object only up to its last pointer, not through the buffers.
type readBatch struct {
	hdrs     [batchSize]unix.Mmsghdr
	iovs     [batchSize][2]unix.Iovec
	overflow []byte

	n    int          // datagrams read
	big  int          // the last slot whose datagram overflowed, or -1
	next atomic.Int32 // the next slot to hand out
	// refs counts the handed-out slots not yet parsed plus one for the
	// worker serving the batch (a rescue hands that one to the helper);
	// whoever drops it to zero may reuse the batch.
	refs atomic.Int32

	addrs [batchSize]unix.RawSockaddrInet6
	oob   [batchSize][oobSize]byte
	bufs  [batchSize][slotSize]byte
}

func newReadBatch(pktinfo bool) *readBatch {
	b := &readBatch{overflow: make([]byte, 65536)}
	for i := range b.hdrs {
		b.iovs[i][0].Base = &b.bufs[i][0]
		b.iovs[i][0].SetLen(slotSize)
		b.iovs[i][1].Base = &b.overflow[0]
		b.iovs[i][1].SetLen(len(b.overflow))
		h := &b.hdrs[i].Hdr
		h.Name = (*byte)(unsafe.Pointer(&b.addrs[i]))
		h.Iov = &b.iovs[i][0]
		h.SetIovlen(2)
		if pktinfo {
			h.Control = &b.oob[i][0]
		}
	}
	return b
}

// prepare resets the first n headers for a read.
func (b *readBatch) prepare(n int) {
	for i := range n {
		h := &b.hdrs[i]
		h.Len = 0
		h.Hdr.Namelen = unix.SizeofSockaddrInet6
		h.Hdr.Flags = 0
		if h.Hdr.Control != nil {
			h.Hdr.SetControllen(oobSize)
		}
	}
}

// loaded records that n datagrams were read and sets up the claims: one
// reference per slot and one for the reading worker.
func (b *readBatch) loaded(n int) {
	b.n = n
	b.big = -1
	for i := range n {
		if b.hdrs[i].Len > slotSize {
			b.big = i
		}
	}
	b.next.Store(0)
	b.refs.Store(int32(n) + 1)
}

// claim hands out the next unserved slot, or -1 when none is left.
func (b *readBatch) claim() int {
	if int(b.next.Load()) >= b.n {
		return -1
	}
	if i := int(b.next.Add(1)) - 1; i < b.n {
		return i
	}
	return -1
}

// unref drops one reference and reports whether it was the last.
func (b *readBatch) unref() bool { return b.refs.Add(-1) == 0 }

// datagram returns the bytes of slot i. All slots share one overflow
// buffer, so of the datagrams longer than slotSize only the last one read
// is whole; for an earlier one ok is false and data holds its first
// slotSize bytes, enough for the header. The datagram of the last one is
// copied out of the shared buffer.
func (b *readBatch) datagram(i int) (data []byte, ok bool) {
	n := int(b.hdrs[i].Len)
	if b.hdrs[i].Hdr.Flags&unix.MSG_TRUNC != 0 {
		return b.bufs[i][:], false
	}
	if n <= slotSize {
		return b.bufs[i][:n], true
	}
	if i != b.big {
		return b.bufs[i][:], false
	}
	data = make([]byte, n)
	copy(data, b.bufs[i][:])
	copy(data[slotSize:], b.overflow[:n-slotSize])
	return data, true
}

// writeBatch is the send side of one sendmmsg call: replies queued by the
// queries a worker serves, sent together when the worker has no more
// queries at hand.
type writeBatch struct {
	hdrs [batchSize]unix.Mmsghdr
	iovs [batchSize]unix.Iovec
	bufs [batchSize][]byte // grown to the largest reply each slot has held
	n    int

	addrs [batchSize]unix.RawSockaddrInet6
	oob   [batchSize][oobSize]byte
}

// add queues a copy of reply to peer.
func (b *writeBatch) add(reply []byte, p *peer) {
	i := b.n
	b.n++
	b.bufs[i] = append(b.bufs[i][:0], reply...)
	b.addrs[i] = p.addr
	h := &b.hdrs[i]
	h.Len = 0
	h.Hdr = unix.Msghdr{Name: (*byte)(unsafe.Pointer(&b.addrs[i])), Namelen: p.addrLen, Iov: &b.iovs[i]}
	h.Hdr.SetIovlen(1)
	if len(reply) > 0 {
		b.iovs[i].Base = &b.bufs[i][0]
	} else {
		b.iovs[i].Base = nil
	}
	b.iovs[i].SetLen(len(reply))
	if n := p.sourceCmsg(b.oob[i][:]); n > 0 {
		h.Hdr.Control = &b.oob[i][0]
		h.Hdr.SetControllen(n)
	}
}

// mmsgIO issues recvmmsg and sendmmsg on one socket through the runtime's
// poller: a call that would block parks the goroutine until the socket is
// ready. Each worker has its own; the bound functions avoid a closure
// allocation per call.
type mmsgIO struct {
	rc syscall.RawConn

	hdrs  *unix.Mmsghdr // the call's arguments and results
	vlen  int
	n     int
	errno syscall.Errno

	recvF, sendF func(fd uintptr) bool
}

func (m *mmsgIO) init(rc syscall.RawConn) {
	m.rc = rc
	m.recvF = m.recvmmsg
	m.sendF = m.sendmmsg
}

func (m *mmsgIO) recvmmsg(fd uintptr) bool { return m.call(unix.SYS_RECVMMSG, fd) }
func (m *mmsgIO) sendmmsg(fd uintptr) bool { return m.call(unix.SYS_SENDMMSG, fd) }

// call makes one non-blocking system call; false asks the poller to wait
// for readiness and call again.
//
// It is a raw system call: the runtime is not told, so the goroutine keeps
// its P. With MSG_DONTWAIT the call never sleeps, but sending a batch on
// loopback runs the receivers' network stack too and can take tens of
// microseconds; told of a system call that long, the runtime's monitor
// hands the P to another thread, waking one each time, which cost more
// than the work itself. (The poller, not the call, does the waiting.)
func (m *mmsgIO) call(trap, fd uintptr) bool {
	for {
		r, _, e := unix.RawSyscall6(trap, fd, uintptr(unsafe.Pointer(m.hdrs)), uintptr(m.vlen), unix.MSG_DONTWAIT, 0, 0)
		switch e {
		case 0:
			m.n, m.errno = int(r), 0
			return true
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		}
		m.n, m.errno = 0, e
		return true
	}
}

// recv reads up to n datagrams into b, waiting for the first.
func (m *mmsgIO) recv(b *readBatch, n int) (int, error) {
	b.prepare(n)
	m.hdrs, m.vlen = &b.hdrs[0], n
	if err := m.rc.Read(m.recvF); err != nil {
		return 0, err
	}
	if m.errno != 0 {
		return 0, m.errno
	}
	return m.n, nil
}

// send sends the queued replies of b and empties it. A reply the kernel
// refuses is dropped; the first such error is returned with the number of
// replies lost.
func (m *mmsgIO) send(b *writeBatch) (lost int, err error) {
	for i := 0; i < b.n; {
		m.hdrs, m.vlen = &b.hdrs[i], b.n-i
		if werr := m.rc.Write(m.sendF); werr != nil {
			lost += b.n - i
			err = werr
			break
		}
		if m.errno != 0 {
			// The reply at i failed; sendmmsg reports it only when it is
			// the first of the call. Skip it.
			lost++
			if err == nil {
				err = m.errno
			}
			i++
			continue
		}
		i += max(m.n, 1) // sendmmsg sends at least one or fails
	}
	b.n = 0
	return lost, err
}

// peer is the address a query came from and, on a socket bound to a
// wildcard address, the local address it was sent to, which its reply must
// come from.
type peer struct {
	addr    unix.RawSockaddrInet6 // a sockaddr_in or sockaddr_in6
	addrLen uint32
	dst     [16]byte // the query's destination address
	dstLen  uint8    // 0 (unknown), 4 or 16
}

// set copies the sender and, when oob holds one, the destination address
// of a datagram.
func (p *peer) set(addr *unix.RawSockaddrInet6, addrLen uint32, oob []byte) {
	p.addr, p.addrLen = *addr, addrLen
	p.dstLen = 0
	if len(oob) > 0 {
		p.parsePktinfo(oob)
	}
}

// parsePktinfo finds the destination address in the control messages of a
// datagram; IPV6_PKTINFO wins over IP_PKTINFO when there are both (as in
// miekg/dns).
func (p *peer) parsePktinfo(oob []byte) {
	hdrLen := unix.CmsgLen(0)
	for len(oob) >= hdrLen {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < hdrLen || l > len(oob) {
			return
		}
		data := oob[hdrLen:l]
		switch {
		case h.Level == unix.IPPROTO_IPV6 && h.Type == unix.IPV6_PKTINFO && len(data) >= unix.SizeofInet6Pktinfo:
			copy(p.dst[:], data[:16]) // in6_pktinfo.ipi6_addr
			p.dstLen = 16
		case h.Level == unix.IPPROTO_IP && h.Type == unix.IP_PKTINFO && len(data) >= unix.SizeofInet4Pktinfo && p.dstLen == 0:
			copy(p.dst[:4], data[8:12]) // in_pktinfo.ipi_addr
			p.dstLen = 4
		}
		oob = oob[min(unix.CmsgSpace(l-hdrLen), len(oob)):]
	}
}

// sourceCmsg writes into buf the control message that makes the kernel
// send a reply from the query's destination address, and returns its
// length (0: none needed). An IPv4-mapped destination gets IP_PKTINFO, as
// in miekg/dns.
func (p *peer) sourceCmsg(buf []byte) int {
	var ip [16]byte
	v4 := false
	switch p.dstLen {
	case 4:
		copy(ip[:4], p.dst[:4])
		v4 = true
	case 16:
		if a := net.IP(p.dst[:]); a.To4() != nil {
			copy(ip[:4], a.To4())
			v4 = true
		} else {
			ip = p.dst
		}
	default:
		return 0
	}
	for i := range unix.CmsgSpace(unix.SizeofInet6Pktinfo) {
		buf[i] = 0
	}
	h := (*unix.Cmsghdr)(unsafe.Pointer(&buf[0]))
	data := buf[unix.CmsgLen(0):]
	if v4 {
		h.Level, h.Type = unix.IPPROTO_IP, unix.IP_PKTINFO
		h.SetLen(unix.CmsgLen(unix.SizeofInet4Pktinfo))
		copy(data[4:8], ip[:4]) // in_pktinfo.ipi_spec_dst
		return unix.CmsgSpace(unix.SizeofInet4Pktinfo)
	}
	h.Level, h.Type = unix.IPPROTO_IPV6, unix.IPV6_PKTINFO
	h.SetLen(unix.CmsgLen(unix.SizeofInet6Pktinfo))
	copy(data[:16], ip[:]) // in6_pktinfo.ipi6_addr
	return unix.CmsgSpace(unix.SizeofInet6Pktinfo)
}

// family is CoreDNS's family label: 2 for IPv6, 1 for IPv4 and
// IPv4-mapped IPv6 addresses.
func (p *peer) family() int {
	if p.addr.Family == unix.AF_INET6 && net.IP(p.addr.Addr[:]).To4() == nil {
		return 2
	}
	return 1
}

// udpAddr fills a with the sender, its IP stored in ip.
func (p *peer) udpAddr(a *net.UDPAddr, ip *[16]byte) {
	if p.addr.Family == unix.AF_INET {
		sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(&p.addr))
		copy(ip[:4], sa.Addr[:])
		*a = net.UDPAddr{IP: ip[:4], Port: int(ntohs(sa.Port))}
		return
	}
	*ip = p.addr.Addr
	*a = net.UDPAddr{IP: ip[:], Port: int(ntohs(p.addr.Port))}
	if p.addr.Scope_id != 0 {
		a.Zone = strconv.FormatUint(uint64(p.addr.Scope_id), 10)
	}
}

// ntohs converts a port in network byte order as it sits in memory.
func ntohs(port uint16) uint16 {
	b := (*[2]byte)(unsafe.Pointer(&port))
	return uint16(b[0])<<8 | uint16(b[1])
}
