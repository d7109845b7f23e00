package resolver

import (
	"encoding/binary"
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
	opt     dns.OPT // the reply's OPT record, kept here to save an allocation
}

// init prepares w for the reply to r, written through tw, the transport's
// writer. family is 1 for IPv4 clients and 2 for IPv6.
func (w *responseWriter) init(tw dns.ResponseWriter, r *dns.Msg, tcp bool, family, ourSize int) {
	*w = responseWriter{ResponseWriter: tw, tcp: tcp, family: family, ourSize: uint16(ourSize), rcode: -1}
	opt := r.IsEdns0()
	if opt != nil {
		w.edns, w.do = true, opt.Do()
	}
	switch {
	case tcp:
		w.limit = dns.MaxMsgSize
	case opt == nil:
		w.limit = dns.MinMsgSize
	default:
		// RFC 6891 §6.2.5: below 512 means 512; never more than we
		// advertise.
		w.limit = max(int(opt.UDPSize()), dns.MinMsgSize)
		w.limit = min(w.limit, ourSize)
	}
}

// familyOf is CoreDNS's family label of a client address: 2 for IPv6, 1
// otherwise (IPv4, including IPv4-mapped IPv6 addresses).
func familyOf(a net.Addr) int {
	var ip net.IP
	switch a := a.(type) {
	case *net.UDPAddr:
		ip = a.IP
	case *net.TCPAddr:
		ip = a.IP
	}
	if ip != nil && ip.To4() == nil {
		return 2
	}
	return 1
}

// packBufs holds reply buffers large enough for any DNS message.
var packBufs = sync.Pool{New: func() any { b := make([]byte, dns.MaxMsgSize+1); return &b }}

// WriteMsg writes m after putting the OPT record in order and fitting m to
// the transport: it modifies m's header, its Extra slice and, when
// truncating, its sections (never the records in them).
//
// A reply of at most compressMin bytes uncompressed is sent uncompressed:
// compression is optional for a sender (RFC 1035 §4.1.4) and, for a reply
// that small, costs more CPU time than the bytes it saves are worth. It
// cannot change truncation: every size limit is at least 512 bytes. Larger
// replies are compressed, then cut to the limit if they still exceed it.
func (w *responseWriter) WriteMsg(m *dns.Msg) error {
	if w.written {
		return errWritten
	}
	w.written = true
	w.setOPT(m)
	bp := packBufs.Get().(*[]byte)
	defer packBufs.Put(bp)
	m.Compress = false
	out, err := m.PackBuffer(*bp)
	if err == nil && len(out) > compressMin {
		m.Compress = true
		out, err = m.PackBuffer(*bp)
		if err == nil && len(out) > w.limit {
			truncate(m, w.limit)
			out, err = m.PackBuffer(*bp)
		}
	}
	if err != nil {
		// A record that cannot be packed is a server fault.
		fail := errorReply(m, dns.RcodeServerFailure)
		w.setOPT(fail)
		if out, err = fail.PackBuffer(*bp); err != nil {
			return err
		}
		m = fail
	}
	w.rcode, w.size = m.Rcode, len(out)
	_, err = w.ResponseWriter.Write(out)
	return err
}

// compressMin is the largest reply sent uncompressed: the smallest size
// limit there is (a UDP reply without EDNS).
const compressMin = dns.MinMsgSize

// optLen is the length of the OPT record setOPT adds: root name, type,
// class (payload size), TTL (extended rcode, version, flags), RDLENGTH 0.
const optLen = 11

// writeTemplate writes the reply to r from tmpl, a reply packed by
// packTemplate: it patches in r's ID, RD and CD bits (as SetReply copies
// them) and appends the OPT record setOPT would add. It returns false,
// having written nothing, when the reply would not fit the transport's
// limit: WriteMsg must truncate it.
func (w *responseWriter) writeTemplate(tmpl []byte, r *dns.Msg) (bool, error) {
	n := len(tmpl)
	if w.edns {
		n += optLen
	}
	if n > w.limit || len(tmpl) < 12 {
		return false, nil
	}
	bp := packBufs.Get().(*[]byte)
	defer packBufs.Put(bp)
	b := append((*bp)[:0], tmpl...)
	binary.BigEndian.PutUint16(b[0:], r.Id)
	if r.RecursionDesired {
		b[2] |= 0x01
	}
	if r.CheckingDisabled {
		b[3] |= 0x10
	}
	if w.edns {
		binary.BigEndian.PutUint16(b[10:], binary.BigEndian.Uint16(b[10:])+1) // ARCOUNT
		var flags byte
		if w.do {
			flags = 0x80
		}
		b = append(b, 0, 0, byte(dns.TypeOPT), byte(w.ourSize>>8), byte(w.ourSize), 0, 0, flags, 0, 0, 0)
	}
	_, err := w.Write(b)
	return true, err
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
func (w *responseWriter) setOPT(m *dns.Msg) {
	for i, rr := range m.Extra {
		if rr.Header().Rrtype == dns.TypeOPT {
			extra := append([]dns.RR(nil), m.Extra[:i]...)
			for _, rr := range m.Extra[i+1:] {
				if rr.Header().Rrtype != dns.TypeOPT {
					extra = append(extra, rr)
				}
			}
			m.Extra = extra
			break
		}
	}
	if !w.edns {
		if m.Rcode > 0xF {
			m.Rcode = dns.RcodeServerFailure
		}
		return
	}
	// One OPT per writer: the error reply that replaces a reply that did
	// not pack reuses it, and m never reaches the client with another.
	w.opt = dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}}
	w.opt.SetUDPSize(w.ourSize)
	if w.do {
		w.opt.SetDo()
	}
	m.Extra = append(m.Extra, &w.opt)
}
