package upstream

import (
	"context"
	"net"
	"sync"

	"github.com/miekg/dns"
)

// udpTransport sends each query from a new socket, so each gets a fresh
// kernel-chosen source port, with a fresh random ID (RFC 5452). It reads
// until a matching answer or the deadline, dropping everything else.
type udpTransport struct {
	addr   string
	dialer net.Dialer
	// dropped counts packets that did not match the query.
	dropped func()
}

// udpBufs holds 64 KiB read buffers: an answer larger than the buffer would
// be cut by the kernel and fail to parse.
var udpBufs = sync.Pool{New: func() any { b := make([]byte, 65535); return &b }}

func (t *udpTransport) exchange(ctx context.Context, q *dns.Msg) (*dns.Msg, error) {
	conn, err := t.dialer.DialContext(ctx, "udp", t.addr)
	if err != nil {
		return nil, ioError(ctx, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	// Unblock the read when the caller cancels before the deadline.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(aLongTimeAgo) })
	defer stop()

	bp := udpBufs.Get().(*[]byte)
	defer udpBufs.Put(bp)
	buf := *bp

	id := randomID()
	out, err := packWithID(q, id, buf[:0])
	if err != nil {
		return nil, err
	}
	if _, err := conn.Write(out); err != nil {
		return nil, ioError(ctx, err)
	}
	for {
		n, err := conn.Read(buf)
		if err != nil {
			return nil, ioError(ctx, err)
		}
		if n < 12 || uint16(buf[0])<<8|uint16(buf[1]) != id {
			t.dropped()
			continue
		}
		r := new(dns.Msg)
		if r.Unpack(buf[:n]) != nil || !matches(q, id, r) {
			t.dropped()
			continue
		}
		r.Id = q.Id
		return r, nil
	}
}

func (t *udpTransport) close() {}
