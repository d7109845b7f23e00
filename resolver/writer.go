package resolver

import (
	"errors"
	"net"
	"sync"

	"github.com/miekg/dns"
)

// errWritten is returned for a second reply to the same query.
var errWritten = errors.New("reply already written")

// responseWriter applies the protocol rules every reply must follow,
// whichever stage built it: the OPT record (RFC 6891), the UDP size limit
// with TC=1, compression, and one reply per query. It records what was
// written for the metrics stage. One is made per query; it is not safe for
// concurrent use.
type responseWriter struct {
	dns.ResponseWriter
	tcp     bool
	family  int    // 1 for IPv4, 2 for IPv6 (CoreDNS's label values)
	edns    bool   // the query had an OPT record
	do      bool   // its DO bit (RFC 3225: copied into the reply)
	limit   int    // the largest reply this transport may carry
	ourSize uint16 // the payload size we advertise
	written bool
	rcode   int
	size    int
}

func newResponseWriter(w dns.ResponseWriter, r *dns.Msg, tcp bool, ourSize int) *responseWriter {
	rw := &responseWriter{ResponseWriter: w, tcp: tcp, family: 1, ourSize: uint16(ourSize), rcode: -1}
	if ip := addrIP(w.RemoteAddr()); ip != nil && ip.To4() == nil {
		rw.family = 2
	}
	opt := r.IsEdns0()
	if opt != nil {
		rw.edns, rw.do = true, opt.Do()
	}
	switch {
	case tcp:
		rw.limit = dns.MaxMsgSize
	case opt == nil:
		rw.limit = dns.MinMsgSize
	default:
		// RFC 6891 §6.2.5: below 512 means 512; never more than we
		// advertise.
		rw.limit = max(int(opt.UDPSize()), dns.MinMsgSize)
		rw.limit = min(rw.limit, ourSize)
	}
	return rw
}

func addrIP(a net.Addr) net.IP {
	switch a := a.(type) {
	case *net.UDPAddr:
		return a.IP
	case *net.TCPAddr:
		return a.IP
	}
	return nil
}

// packBufs holds reply buffers large enough for any DNS message.
var packBufs = sync.Pool{New: func() any { b := make([]byte, dns.MaxMsgSize+1); return &b }}

// WriteMsg writes m after putting the OPT record in order and fitting m to
// the transport: it modifies m's header, its Extra slice and, when
// truncating, its sections (never the records in them).
func (w *responseWriter) WriteMsg(m *dns.Msg) error {
	if w.written {
		return errWritten
	}
	w.written = true
	setOPT(m, w.edns, w.ourSize, w.do)
	m.Compress = true
	bp := packBufs.Get().(*[]byte)
	defer packBufs.Put(bp)
	out, err := m.PackBuffer(*bp)
	if err == nil && len(out) > w.limit {
		truncate(m, w.limit)
		out, err = m.PackBuffer(*bp)
	}
	if err != nil {
		// A record that cannot be packed is a server fault.
		fail := errorReply(m, dns.RcodeServerFailure)
		setOPT(fail, w.edns, w.ourSize, w.do)
		if out, err = fail.PackBuffer(*bp); err != nil {
			return err
		}
		m = fail
	}
	w.rcode, w.size = m.Rcode, len(out)
	_, err = w.ResponseWriter.Write(out)
	return err
}

// Write sends an already packed reply as it is; the caller has fitted it.
func (w *responseWriter) Write(b []byte) (int, error) {
	if w.written {
		return 0, errWritten
	}
	w.written = true
	w.size = len(b)
	if len(b) >= 4 {
		w.rcode = int(b[3] & 0x0f)
	}
	return w.ResponseWriter.Write(b)
}

// setOPT gives m exactly one OPT record when the query had one (version 0,
// our payload size, the query's DO bit, no options: unknown options are not
// echoed), and none otherwise. An extended rcode without EDNS becomes
// SERVFAIL, which needs none.
func setOPT(m *dns.Msg, edns bool, size uint16, do bool) {
	extra := m.Extra[:0:0]
	for _, rr := range m.Extra {
		if rr.Header().Rrtype != dns.TypeOPT {
			extra = append(extra, rr)
		}
	}
	if len(extra) != len(m.Extra) {
		m.Extra = extra
	}
	if !edns {
		if m.Rcode > 0xF {
			m.Rcode = dns.RcodeServerFailure
		}
		return
	}
	opt := &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}}
	opt.SetUDPSize(size)
	if do {
		opt.SetDo()
	}
	m.Extra = append(m.Extra, opt)
}
