package httpapi

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kudurru/kudurru/cluster/httpapi/httpapitest"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeBackend is the shared fake node.
type fakeBackend = httpapitest.Backend

func newFake(t testing.TB, id string, leader bool) *fakeBackend {
	t.Helper()
	return httpapitest.New(id, leader)
}

// harness is a started Server over a backend, with an HTTP client.
type harness struct {
	t   *testing.T
	b   *fakeBackend
	s   *Server
	reg *prometheus.Registry
	url string
	tr  *http.Transport
}

// testConfig is a config for tests: a kernel-chosen loopback port and short
// waits.
func testConfig() Config {
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.LeaderWait = 200 * time.Millisecond
	cfg.ProposeTimeout = time.Second
	cfg.ForwardTimeout = 2 * time.Second
	cfg.ShutdownTimeout = time.Second
	return cfg
}

func start(t *testing.T, b *fakeBackend, mod func(*Config)) *harness {
	t.Helper()
	cfg := testConfig()
	cfg.Registry = prometheus.NewRegistry()
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(cfg, b)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := s.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	h := &harness{t: t, b: b, s: s, reg: cfg.Registry, url: s.URL(), tr: &http.Transport{}}
	t.Cleanup(func() {
		h.tr.CloseIdleConnections()
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return h
}

// do sends a request with the given headers ("Name: value") and returns the
// status, the headers and the body.
func (h *harness) do(method, path, body string, headers ...string) (int, http.Header, string) {
	h.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, h.url+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, kv := range headers {
		k, v, _ := strings.Cut(kv, ": ")
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Transport: h.tr}).Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}
