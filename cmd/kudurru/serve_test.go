package main

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kudurru/kudurru/cluster/httpapi/client"
	"github.com/miekg/dns"
)

// testLogger sends logs to t.Log.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestServeWiring runs the real wiring: a bootstrapped one-node cluster on
// kernel-chosen loopback ports, the demo zone loaded through the API and
// answered over DNS, then a clean shutdown.
func TestServeWiring(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Node.ID, cfg.Node.DataDir = "t1", t.TempDir()
	cfg.API.Addr = "127.0.0.1:0"
	cfg.Raft.Addr, cfg.Raft.Bootstrap = "127.0.0.1:0", true
	cfg.Raft.HeartbeatTimeout, cfg.Raft.ElectionTimeout, cfg.Raft.LeaderLeaseTimeout = 200*time.Millisecond, 200*time.Millisecond, 100*time.Millisecond
	cfg.DNS.Addr, cfg.DNS.UDPSockets = "127.0.0.1:0", 1
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan started, 1)
	done := make(chan error, 1)
	go func() { done <- runNode(ctx, cfg, testLogger(t), func(s started) { ready <- s }) }()
	var s started
	select {
	case s = <-ready:
	case err := <-done:
		t.Fatalf("runNode: %v", err)
	}

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c, err := client.New(s.APIURL, "", &http.Client{Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	if err := seedDemo(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := seedDemo(ctx, c); err != nil { // a second run finds the zone and leaves it
		t.Fatal(err)
	}
	m := new(dns.Msg).SetQuestion("www.example.test.", dns.TypeA)
	in, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, s.DNSAddr)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Answer) != 1 || in.Answer[0].(*dns.A).A.String() != "192.0.2.10" || !in.Authoritative {
		t.Fatalf("answer %v", in)
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
}

func TestServeConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"unknown flag", nil, []string{"--nodeid", "x"}, "unknown flag: --nodeid"},
		{"positional argument", nil, []string{"extra"}, "serve takes no arguments"},
		{"unknown env key", map[string]string{"KUDURRU_NODE_IDD": "x"}, nil, "KUDURRU_NODE_IDD"},
		{"missing id", nil, []string{"--data-dir", "/tmp/x"}, "node.id is empty"},
		{"public api without token", nil, []string{"--node-id", "n1", "--data-dir", "/tmp/x", "--api-addr", "0.0.0.0:8053", "--api-advertise", "http://192.0.2.1:8053"}, "api.token is empty"},
		{"missing config file", map[string]string{"KUDURRU_CONFIG": "/nonexistent/kudurru.yaml"}, nil, "/nonexistent/kudurru.yaml"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var env []string
			for k, v := range tc.env {
				env = append(env, k+"="+v)
			}
			var out, errOut strings.Builder
			a := &app{stdout: &out, stderr: &errOut, getenv: func(k string) string { return tc.env[k] }, environ: func() []string { return env }}
			if code := a.run(context.Background(), append([]string{"serve"}, tc.args...)); code != exitUsage {
				t.Fatalf("exit %d, want %d; stderr %q", code, exitUsage, errOut.String())
			}
			if !strings.Contains(errOut.String(), tc.want) {
				t.Fatalf("stderr %q lacks %q", errOut.String(), tc.want)
			}
		})
	}
}
