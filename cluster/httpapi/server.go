package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Server is the admin API of one node.
type Server struct {
	cfg  Config
	b    Backend
	log  *slog.Logger
	m    *metrics
	http *http.Server
	fwd  *forwarder

	closing chan struct{} // closed by Close; handlers waiting for a leader give up

	mu      sync.Mutex // guards ln, started and closed
	ln      net.Listener
	started bool
	closed  bool

	wg sync.WaitGroup // the serve goroutine and the leader watches of forwarded writes
}

// New returns a Server for backend. It does not listen yet: call Start.
func New(cfg Config, backend Backend) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if backend == nil {
		return nil, errors.New("httpapi: nil backend")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		cfg:     cfg,
		b:       backend,
		log:     log.With("component", "httpapi"),
		m:       newMetrics(registerer(cfg.Registry)),
		closing: make(chan struct{}),
	}
	s.fwd = newForwarder(cfg, backend.NodeID(), s.m)
	s.http = &http.Server{
		Handler:           s.routes(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	return s, nil
}

// registerer avoids a typed nil: a nil *Registry must register nothing.
func registerer(r *prometheus.Registry) prometheus.Registerer {
	if r == nil {
		return nil
	}
	return r
}

// Start listens on the configured address and serves in the background.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("httpapi: start after close")
	}
	if s.started {
		return errors.New("httpapi: already started")
	}
	ln := s.cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", s.cfg.Addr); err != nil {
			return fmt.Errorf("listen api %s: %w", s.cfg.Addr, err)
		}
	}
	s.ln, s.started = ln, true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("api server stopped", "err", err)
		}
	}()
	s.log.Info("api listening", "addr", ln.Addr().String(), "auth", s.cfg.Token != "")
	return nil
}

// Addr returns the address the server listens on, or nil before Start.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// URL returns the base URL of the server (http://host:port), or "" before
// Start.
func (s *Server) URL() string {
	a := s.Addr()
	if a == nil {
		return ""
	}
	return "http://" + a.String()
}

// Close stops the server: it stops accepting, lets requests in flight finish
// for up to ShutdownTimeout, then closes their connections. It is safe to
// call more than once; later calls return nil at once.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	started := s.started
	s.mu.Unlock()

	close(s.closing)
	var err error
	if started {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
		err = s.http.Shutdown(ctx)
		cancel()
		if err != nil {
			err = s.http.Close()
		}
		s.wg.Wait()
	}
	s.fwd.close()
	return err
}
