// Package resolvertest starts resolver servers on loopback for tests and
// checks their replies: a settable Zones, zone file loading, a server on a
// kernel-chosen 127.0.0.1 port with logs routed to the test, exchange
// helpers and the Case shape of DNS expectations.
package resolvertest

import (
	"io"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kudurru/kudurru/fsm/zone"
	"github.com/kudurru/kudurru/resolver"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// Zones is a resolver.Zones whose View a test sets.
type Zones struct{ v atomic.Pointer[zone.View] }

// NewZones returns Zones serving v.
func NewZones(v *zone.View) *Zones {
	z := &Zones{}
	z.v.Store(v)
	return z
}

// Current implements resolver.Zones.
func (z *Zones) Current() *zone.View { return z.v.Load() }

// Set publishes v.
func (z *Zones) Set(v *zone.View) { z.v.Store(v) }

// View builds a View holding zs.
func View(zs ...*zone.Zone) *zone.View {
	b := zone.Empty.Edit()
	for _, z := range zs {
		b.PutZone(z)
	}
	return b.View()
}

// ParseZone builds a zone from zone file text; file names $INCLUDEs and
// errors.
func ParseZone(t testing.TB, origin, text string) *zone.Zone {
	t.Helper()
	z, err := parseZone(origin, "text", strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse zone %s: %v", origin, err)
	}
	return z
}

// LoadZoneFile builds a zone from a zone file.
func LoadZoneFile(t testing.TB, origin, path string) *zone.Zone {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := parseZone(origin, path, f)
	if err != nil {
		t.Fatalf("load zone %s from %s: %v", origin, path, err)
	}
	return z
}

func parseZone(origin, file string, r io.Reader) (*zone.Zone, error) {
	zp := dns.NewZoneParser(r, dns.Fqdn(origin), file)
	var rrs []dns.RR
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		rrs = append(rrs, rr)
	}
	if err := zp.Err(); err != nil {
		return nil, err
	}
	return zone.NewZone(origin, rrs, 0, false)
}

// Options adjust a test server.
type Options struct {
	Config   func(*resolver.Config) // edits the config before New
	Status   resolver.Status
	Registry prometheus.Registerer
	Logger   *slog.Logger // default: the test's log at Info level
	Blobs    resolver.BlobStore
}

// Start starts a server for zones on 127.0.0.1 with a kernel-chosen port
// and two UDP sockets, and closes it when the test ends. Start returns once
// the server listens.
func Start(t testing.TB, zones resolver.Zones, o Options) *resolver.Server {
	t.Helper()
	cfg := resolver.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.UDPSockets = 2
	if o.Config != nil {
		o.Config(&cfg)
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	s, err := resolver.New(cfg, resolver.Deps{Zones: zones, Status: o.Status, Registry: o.Registry, Logger: log,
		Blobs: o.Blobs})
	if err != nil {
		t.Fatalf("resolver.New: %v", err)
	}
	if err := s.Start(); err != nil {
		t.Fatalf("resolver start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("resolver close: %v", err)
		}
	})
	return s
}

// tWriter sends log lines to t.Log.
type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
