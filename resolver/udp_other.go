//go:build !linux

package resolver

import (
	"context"
	"net"
	"time"

	"github.com/miekg/dns"
)

// udpState is empty where UDP is served by miekg/dns: its servers are in
// Server.servers with the TCP one.
type udpState struct{}

// startUDP serves each socket with a miekg/dns server, which starts a
// goroutine per packet; the socket's in-flight slots bound them. It returns
// the number of listeners that will call notify. Must hold s.mu.
func (s *Server) startUDP(conns []*net.UDPConn, notify func(), failed chan<- error) (int, error) {
	for _, pc := range conns {
		lim := newSlots(s.cfg.UDPMaxInflight, s.stop, s.metrics.overload.WithLabelValues("udp"))
		srv := &dns.Server{
			PacketConn:        pc,
			Handler:           dnsHandler{s: s, lim: lim},
			UDPSize:           dns.MaxMsgSize,
			ReadTimeout:       s.cfg.ReadTimeout,
			WriteTimeout:      s.cfg.WriteTimeout,
			MsgAcceptFunc:     func(h dns.Header) dns.MsgAcceptAction { return accept(h, lim) },
			MsgInvalidFunc:    func([]byte, error) { s.metrics.malformed.WithLabelValues("udp").Inc(); lim.release(1) },
			DecorateReader:    func(r dns.Reader) dns.Reader { return limitedReader{Reader: r, lim: lim} },
			NotifyStartedFunc: notify,
		}
		s.serve(srv, failed)
	}
	return len(conns), nil
}

// stopUDP has nothing to do: Close shuts the miekg/dns servers down.
func (s *Server) stopUDP(context.Context) error { return nil }

// closeUDP has nothing to do: miekg/dns closes its sockets.
func (s *Server) closeUDP() {}

// limitedReader takes an in-flight slot for every packet it reads. Each
// read packet gives the slot back exactly once, on one of the paths
// miekg/dns takes: the handler finishing, the accept function ignoring it,
// or the invalid-message hook (a short or unparsable packet).
type limitedReader struct {
	dns.Reader
	lim *slots
}

func (r limitedReader) ReadUDP(conn *net.UDPConn, timeout time.Duration) ([]byte, *dns.SessionUDP, error) {
	if _, err := r.lim.acquire(1); err != nil {
		return nil, nil, err
	}
	m, s, err := r.Reader.ReadUDP(conn, timeout)
	if err != nil {
		r.lim.release(1)
	}
	return m, s, err
}
