package cluster

import (
	"bytes"
	hclog "github.com/hashicorp/go-hclog"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestHclogAdapter(t *testing.T) {
	var buf bytes.Buffer
	l := newHclog(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})), "raft")
	l.Debug("hidden")
	l.Info("shown", "term", 3)
	named := l.Named("transport").With("peer", "n2")
	for range 5 {
		named.Error("failed to appendEntries to")
	}
	out := buf.String()
	if strings.Contains(out, "hidden") {
		t.Errorf("debug line shown at info level:\n%s", out)
	}
	if !strings.Contains(out, "msg=shown logger=raft term=3") {
		t.Errorf("info line missing:\n%s", out)
	}
	if n := strings.Count(out, "failed to appendEntries"); n != 1 {
		t.Errorf("repeated error logged %d times, want once:\n%s", n, out)
	}
	if !strings.Contains(out, "logger=raft.transport") || !strings.Contains(out, "peer=n2") {
		t.Errorf("name and args not kept:\n%s", out)
	}
	if l.IsDebug() || !l.IsInfo() {
		t.Errorf("levels: debug %v info %v", l.IsDebug(), l.IsInfo())
	}

	lim := &repeatLimiter{seen: map[string]*repeatState{}}
	now := time.Now()
	lim.allow("m", now)
	lim.allow("m", now.Add(time.Second))
	lim.allow("m", now.Add(2*time.Second))
	if ok, n := lim.allow("m", now.Add(repeatWindow+time.Second)); !ok || n != 2 {
		t.Errorf("after the window: %v, %d suppressed; want true, 2", ok, n)
	}
}

func TestHclogFormatArgs(t *testing.T) {
	got := expandFormats([]any{"index", 1, "servers", hclog.Fmt("%+v", []int{1, 2})})
	if got[3] != "[1 2]" {
		t.Fatalf("hclog.Fmt rendered as %v", got[3])
	}
}
