//go:build linux

package resolver

import (
	"bytes"
	"net"
	"testing"
	"time"
	"unsafe"

	"github.com/kudurru/kudurru/fsm/zone"
	"github.com/miekg/dns"
	"golang.org/x/sys/unix"
)

// pktinfo builds the control message the kernel attaches to a datagram.
func pktinfo(v6 bool, dst []byte) []byte {
	n := unix.SizeofInet4Pktinfo
	if v6 {
		n = unix.SizeofInet6Pktinfo
	}
	b := make([]byte, unix.CmsgSpace(n))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.SetLen(unix.CmsgLen(n))
	data := b[unix.CmsgLen(0):]
	if v6 {
		h.Level, h.Type = unix.IPPROTO_IPV6, unix.IPV6_PKTINFO
		copy(data, dst) // ipi6_addr
	} else {
		h.Level, h.Type = unix.IPPROTO_IP, unix.IP_PKTINFO
		copy(data[8:], dst) // ipi_addr
	}
	return b
}

func TestSourceAddressControlMessage(t *testing.T) {
	v4 := net.ParseIP("192.0.2.7").To4()
	v6 := net.ParseIP("2001:db8::7")
	mapped := net.ParseIP("::ffff:192.0.2.7")
	for _, c := range []struct {
		name    string
		oob     []byte
		level   int32
		typ     int32
		wantSrc []byte // at the data offset of the reply's control message
	}{
		{"IPv4", pktinfo(false, v4), unix.IPPROTO_IP, unix.IP_PKTINFO, append(make([]byte, 4), v4...)},
		{"IPv6", pktinfo(true, v6), unix.IPPROTO_IPV6, unix.IPV6_PKTINFO, v6},
		{"IPv4-mapped on an IPv6 socket", pktinfo(true, mapped), unix.IPPROTO_IP, unix.IP_PKTINFO, append(make([]byte, 4), v4...)},
		{"both: IPv6 wins", append(pktinfo(false, net.ParseIP("198.51.100.1").To4()), pktinfo(true, v6)...),
			unix.IPPROTO_IPV6, unix.IPV6_PKTINFO, v6},
	} {
		t.Run(c.name, func(t *testing.T) {
			var p peer
			p.set(&unix.RawSockaddrInet6{Family: unix.AF_INET}, unix.SizeofSockaddrInet4, c.oob)
			buf := make([]byte, oobSize)
			n := p.sourceCmsg(buf)
			if n == 0 {
				t.Fatal("no control message for the reply")
			}
			h := (*unix.Cmsghdr)(unsafe.Pointer(&buf[0]))
			if h.Level != c.level || h.Type != c.typ {
				t.Fatalf("control message level %d type %d, want %d %d", h.Level, h.Type, c.level, c.typ)
			}
			data := buf[unix.CmsgLen(0):int(h.Len)]
			if !bytes.HasPrefix(data, c.wantSrc) {
				t.Errorf("data % x, want it to start with % x", data, c.wantSrc)
			}
		})
	}
	t.Run("none without packet information", func(t *testing.T) {
		var p peer
		p.set(&unix.RawSockaddrInet6{Family: unix.AF_INET}, unix.SizeofSockaddrInet4, nil)
		if n := p.sourceCmsg(make([]byte, oobSize)); n != 0 {
			t.Errorf("control message of %d bytes, want none", n)
		}
	})
}

type fixedZones struct{ v *zone.View }

func (z fixedZones) Current() *zone.View { return z.v }

// TestRepliesWithPacketInformation serves with the packet-information path
// of wildcard-bound sockets on 127.0.0.1 (tests may not bind a wildcard
// address): a connected client accepts a reply only from the address it
// sent to, so an answer proves the source was set right.
func TestRepliesWithPacketInformation(t *testing.T) {
	forcePktinfo = true
	defer func() { forcePktinfo = false }()
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.UDPSockets = 1
	s, err := New(cfg, Deps{Zones: fixedZones{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	if !s.udpSt.socks[0].pktinfo {
		t.Fatal("packet information is not on")
	}
	m := new(dns.Msg)
	m.SetQuestion(HealthName, dns.TypeTXT)
	c := &dns.Client{Net: "udp", Timeout: 5 * time.Second}
	for range 3 {
		r, _, err := c.Exchange(m, s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Answer) != 1 {
			t.Fatalf("reply %v", r)
		}
	}
}
