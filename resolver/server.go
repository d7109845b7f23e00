package resolver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// ErrClosed is returned by Start after Close.
var ErrClosed = errors.New("dns server closed")

// Server serves DNS on UDP and TCP through the query chain.
type Server struct {
	cfg      Config
	deps     Deps
	log      *slog.Logger
	metrics  *metrics
	handler  Handler     // the compiled chain
	memo     *answerMemo // the authority stage's remembered lookups
	hostname string
	panics   panicLog

	ctx    context.Context // cancelled by Close; the base of every query's ctx
	cancel context.CancelFunc
	stop   chan struct{} // closed by Close: unblocks listeners waiting for a slot

	mu      sync.Mutex    // guards the fields below
	state   int           // stateNew, stateStarted, stateClosed
	servers []*dns.Server // miekg/dns servers: TCP, and UDP where udpState has none
	udpSt   udpState      // this platform's UDP serving state
	udp     []net.Addr
	tcp     net.Addr
	wg      sync.WaitGroup // every goroutine the server starts
	errs    []error        // listener errors, reported by Close
}

const (
	stateNew = iota
	stateStarted
	stateClosed
)

// New checks cfg and builds a Server; it binds nothing until Start.
func New(cfg Config, deps Deps) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("dns config: %w", err)
	}
	if deps.Zones == nil {
		return nil, errors.New("dns server: Deps.Zones is required")
	}
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	reg := deps.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	memo := newAnswerMemo()
	m, err := newMetrics(reg, memo)
	if err != nil {
		return nil, fmt.Errorf("dns metrics: %w", err)
	}
	host, _ := os.Hostname()
	s := &Server{cfg: cfg, deps: deps, log: log.With("component", "dns"), metrics: m,
		hostname: host, stop: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.memo = memo
	s.handler = s.chain()
	return s, nil
}

// Start binds the sockets and returns once every listener is serving, or
// with the first error (and nothing left running).
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.state {
	case stateStarted:
		return errors.New("dns server already started")
	case stateClosed:
		return ErrClosed
	}
	udp, tcp, err := listen(s.cfg.Addr, s.cfg.UDPSockets)
	if err != nil {
		return err
	}
	started := make(chan struct{}, len(udp)+1)
	failed := make(chan error, len(udp)+1)
	notify := func() { started <- struct{}{} }
	for _, pc := range udp {
		s.udp = append(s.udp, pc.LocalAddr())
	}
	waits, err := s.startUDP(udp, notify, failed)
	if err != nil {
		tcp.Close()
		s.state = stateStarted
		s.mu.Unlock()
		s.Close()
		s.mu.Lock()
		return fmt.Errorf("dns server start: %w", err)
	}
	idle := s.cfg.TCPIdleTimeout
	srv := &dns.Server{
		Listener: &limitListener{Listener: tcp, sem: make(chan struct{}, s.cfg.TCPMaxConns),
			stop: s.stop, full: s.metrics.overload.WithLabelValues("tcp")},
		Handler:           dnsHandler{s: s, tcp: true},
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       func() time.Duration { return idle },
		MaxTCPQueries:     s.cfg.TCPMaxQueries,
		MsgAcceptFunc:     func(h dns.Header) dns.MsgAcceptAction { return accept(h, nil) },
		MsgInvalidFunc:    func([]byte, error) { s.metrics.malformed.WithLabelValues("tcp").Inc() },
		NotifyStartedFunc: notify,
	}
	s.tcp = tcp.Addr()
	s.serve(srv, failed)
	s.state = stateStarted
	for range waits + 1 {
		select {
		case <-started:
		case err := <-failed:
			s.mu.Unlock()
			s.Close()
			s.mu.Lock()
			return fmt.Errorf("dns server start: %w", err)
		}
	}
	s.log.Info("dns server listening", "addr", s.tcp.String(), "udp_sockets", len(s.udp))
	return nil
}

// serve runs one dns.Server on a tracked goroutine. Must hold s.mu.
func (s *Server) serve(srv *dns.Server, failed chan<- error) {
	s.servers = append(s.servers, srv)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		err := srv.ActivateAndServe()
		select {
		case <-s.stop:
			return // errors while stopping are expected
		default:
		}
		if err != nil {
			s.log.Error("dns listener stopped", "error", err)
			s.mu.Lock()
			s.errs = append(s.errs, err)
			s.mu.Unlock()
			failed <- err
		}
	}()
}

// UDPAddrs returns the bound UDP socket addresses (one per socket, all with
// the same address when SO_REUSEPORT is used). Empty before Start.
func (s *Server) UDPAddrs() []net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]net.Addr(nil), s.udp...)
}

// TCPAddr returns the bound TCP address, nil before Start.
func (s *Server) TCPAddr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tcp
}

// Addr returns the host:port the server is bound to ("" before Start).
func (s *Server) Addr() string {
	if a := s.TCPAddr(); a != nil {
		return a.String()
	}
	return ""
}

// Close stops the listeners, waits up to ShutdownTimeout for queries in
// flight and returns once every goroutine has ended. It is safe to call
// more than once and from any goroutine; later calls return nil.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.state == stateClosed {
		s.mu.Unlock()
		return nil
	}
	s.state = stateClosed
	close(s.stop)
	s.cancel()
	servers := s.servers
	s.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	var errs []error
	if err := s.stopUDP(ctx); err != nil {
		errs = append(errs, err)
	}
	for _, srv := range servers {
		if err := srv.ShutdownContext(ctx); err != nil && !isNotStarted(err) {
			errs = append(errs, err)
		}
	}
	s.wg.Wait()
	s.closeUDP()
	s.mu.Lock()
	errs = append(errs, s.errs...)
	s.mu.Unlock()
	if len(errs) > 0 {
		return fmt.Errorf("dns server close: %w", errors.Join(errs...))
	}
	return nil
}

// isNotStarted matches miekg/dns's error for a server whose loop already
// ended (it exited on errStopping).
func isNotStarted(err error) bool { return err != nil && err.Error() == "dns: server not started" }

// accept is the first look at a message, from its header alone. Responses
// are dropped without a reply (they could only be reflection); everything
// else is parsed and goes to the chain, whose ingress stage answers FORMERR
// or NOTIMP, so that every reply is counted in one place.
func accept(h dns.Header, lim *slots) dns.MsgAcceptAction {
	if h.Bits&(1<<15) != 0 { // QR
		if lim != nil {
			lim.release(1)
		}
		return dns.MsgIgnore
	}
	return dns.MsgAccept
}

// dnsHandler adapts the chain to miekg/dns: it wraps the writer, runs the
// chain, and writes the error reply for the rcodes that mean "nothing
// written". Where miekg/dns serves UDP it gives the socket's in-flight slot
// back.
type dnsHandler struct {
	s   *Server
	tcp bool
	lim *slots // nil for TCP
}

func (h dnsHandler) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	if h.lim != nil {
		defer h.lim.release(1)
	}
	rw := new(responseWriter)
	rw.init(w, r, h.tcp, familyOf(w.RemoteAddr()), h.s.cfg.EDNSUDPSize)
	h.s.serveMsg(rw, r)
}

// serveMsg runs one parsed query through the chain; rw wraps the
// transport's writer for r.
func (s *Server) serveMsg(rw *responseWriter, r *dns.Msg) {
	rcode, err := s.handler.ServeDNS(s.ctx, rw, r)
	if !rw.written {
		if clientWrote(rcode) {
			// A stage broke the contract; the client still gets a reply.
			err = errors.Join(err, fmt.Errorf("stage returned rcode %d without writing", rcode))
			rcode = dns.RcodeServerFailure
		}
		if werr := rw.WriteMsg(errorReply(r, rcode)); werr != nil {
			err = errors.Join(err, werr)
		}
	}
	if err != nil && s.log.Enabled(s.ctx, slog.LevelDebug) {
		args := []any{"error", err, "peer", rw.RemoteAddr().String()}
		if len(r.Question) > 0 {
			args = append(args, "qname", r.Question[0].Name, "qtype", dns.Type(r.Question[0].Qtype).String())
		}
		s.log.Debug("query failed", args...)
	}
}
