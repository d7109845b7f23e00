package resolver_test

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/kudurru/kudurru/resolver"
	"github.com/kudurru/kudurru/resolver/resolvertest"
	"github.com/miekg/dns"
)

// FuzzQuery feeds arbitrary bytes to a running server as one TCP message,
// followed on the same connection by a known query. The server answers a
// connection's queries in order, so every reply before the known query's
// belongs to the fuzz input: there may be none or one, and it must parse,
// be a response, and carry the input's ID. The input then goes as a UDP
// datagram, followed by the known query, through the server's own UDP loop,
// with the same checks on the replies read before the known query's. A
// panic anywhere fails the run (the recover stage would answer SERVFAIL;
// neither miekg/dns nor the UDP loop has one).
//
// Crashers found by `go test -fuzz=FuzzQuery` are kept in
// testdata/fuzz/FuzzQuery and run as seeds by every `go test`.
func FuzzQuery(f *testing.F) {
	srv := resolvertest.Start(f, resolvertest.NewZones(testView(f)), resolvertest.Options{
		Config: func(c *resolver.Config) { c.TCPMaxQueries = -1 },
	})
	for _, m := range []*dns.Msg{
		query("www.example.test.", dns.TypeA),
		query("WWW.example.TEST.", dns.TypeANY),
		query("x.wild.example.test.", dns.TypeTXT),
		query("chain1.example.test.", dns.TypeA),
		query("www.deleg.example.test.", dns.TypeA),
		query("version.bind.", dns.TypeTXT),
		query("health.kudurru.internal.", dns.TypeTXT),
		func() *dns.Msg { m := query("many.example.test.", dns.TypeA); m.SetEdns0(512, true); return m }(),
		func() *dns.Msg {
			m := query("a.", dns.TypeA)
			m.SetEdns0(1232, false)
			m.IsEdns0().SetVersion(3)
			return m
		}(),
		func() *dns.Msg { m := new(dns.Msg); m.SetUpdate("example.test."); return m }(),
	} {
		b, err := m.Pack()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{0, 1, 0, 0, 0, 1})
	f.Add(make([]byte, 12))

	var mu sync.Mutex
	var conn net.Conn
	f.Cleanup(func() {
		if conn != nil {
			conn.Close()
		}
	})
	sentinel := query("sentinel.example.test.", dns.TypeA)
	sentinel.Id = 0xfeed
	sentinelWire, _ := sentinel.Pack()

	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > dns.MaxMsgSize {
			in = in[:dns.MaxMsgSize]
		}
		mu.Lock()
		defer mu.Unlock()
		for attempt := 0; ; attempt++ {
			if conn == nil {
				c, err := net.Dial("tcp", srv.Addr())
				if err != nil {
					t.Fatal(err)
				}
				conn = c
			}
			replies, err := exchangeWithSentinel(conn, in, sentinelWire)
			if err != nil {
				conn.Close()
				conn = nil
				if attempt < 2 {
					continue // the server may close a connection; retry once on a new one
				}
				t.Fatalf("server stopped answering: %v", err)
			}
			checkFuzzReplies(t, "tcp", in, replies)
			break
		}
		// The same over UDP (a datagram of at most 65507 bytes), read by
		// the server's own loop. A socket per input, so that a reply that
		// comes after the sentinel's (two goroutines may share a server
		// socket) can never be taken for the next input's.
		if len(in) > 65507 {
			return
		}
		uc, err := net.Dial("udp", srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer uc.Close()
		replies, err := udpExchangeWithSentinel(uc, in, sentinelWire)
		if err != nil {
			t.Fatalf("server stopped answering over UDP: %v", err)
		}
		checkFuzzReplies(t, "udp", in, replies)
	})
}

// checkFuzzReplies checks the replies to one fuzz input: at most one, which
// parses, is a response and carries the input's ID.
func checkFuzzReplies(t *testing.T, proto string, in []byte, replies [][]byte) {
	t.Helper()
	if len(replies) > 1 {
		t.Fatalf("%d replies to one message over %s", len(replies), proto)
	}
	for _, b := range replies {
		r := new(dns.Msg)
		if err := r.Unpack(b); err != nil {
			t.Fatalf("reply over %s does not parse: %v\n% x", proto, err, b)
		}
		if !r.Response {
			t.Fatalf("reply over %s without QR: %v", proto, r)
		}
		if len(in) >= 2 && r.Id != binary.BigEndian.Uint16(in) {
			t.Fatalf("reply over %s: ID %d, query ID %d", proto, r.Id, binary.BigEndian.Uint16(in))
		}
	}
}

// udpExchangeWithSentinel sends in and then the sentinel query as two
// datagrams, and returns the replies read before the sentinel's.
func udpExchangeWithSentinel(c net.Conn, in, sentinel []byte) ([][]byte, error) {
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(in); err != nil {
		return nil, err
	}
	if _, err := c.Write(sentinel); err != nil {
		return nil, err
	}
	var replies [][]byte
	buf := make([]byte, dns.MaxMsgSize)
	for {
		n, err := c.Read(buf)
		if err != nil {
			return nil, err
		}
		b := append([]byte(nil), buf[:n]...)
		r := new(dns.Msg)
		if r.Unpack(b) == nil && r.Id == 0xfeed && len(r.Question) == 1 && r.Question[0].Name == "sentinel.example.test." {
			return replies, nil
		}
		replies = append(replies, b)
	}
}

// exchangeWithSentinel writes in and then the sentinel query, and returns
// the replies read before the sentinel's.
func exchangeWithSentinel(c net.Conn, in, sentinel []byte) ([][]byte, error) {
	c.SetDeadline(time.Now().Add(5 * time.Second))
	var buf []byte
	for _, m := range [][]byte{in, sentinel} {
		buf = binary.BigEndian.AppendUint16(buf, uint16(len(m)))
		buf = append(buf, m...)
	}
	if _, err := c.Write(buf); err != nil {
		return nil, err
	}
	var replies [][]byte
	for {
		var l [2]byte
		if _, err := io.ReadFull(c, l[:]); err != nil {
			return nil, err
		}
		b := make([]byte, binary.BigEndian.Uint16(l[:]))
		if _, err := io.ReadFull(c, b); err != nil {
			return nil, err
		}
		r := new(dns.Msg)
		if r.Unpack(b) == nil && r.Id == 0xfeed && len(r.Question) == 1 && r.Question[0].Name == "sentinel.example.test." {
			return replies, nil
		}
		replies = append(replies, b)
	}
}
