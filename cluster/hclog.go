package cluster

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// hclogAdapter lets hashicorp/raft, which logs through hclog, write to the
// node's slog.Logger. Levels map one to one (Trace goes to slog Debug-4);
// the slog handler decides what is shown, so SetLevel is ignored.
//
// While a peer is down raft logs the same warning or error every few
// milliseconds ("failed to appendEntries to", "failed to heartbeat to").
// The adapter lets each distinct Warn or Error message through once per
// repeatWindow and counts the rest, reported with the next one let through.
type hclogAdapter struct {
	base    *slog.Logger // the node's logger with the implied args
	l       *slog.Logger // base with the logger name
	name    string
	implied []any
	lim     *repeatLimiter // shared by every logger derived from one newHclog
}

const repeatWindow = 10 * time.Second

type repeatLimiter struct {
	mu   sync.Mutex // guards seen
	seen map[string]*repeatState
}

type repeatState struct {
	last       time.Time
	suppressed int
}

// allow reports whether msg may be logged now, and how many copies were
// suppressed since it last was.
func (r *repeatLimiter) allow(msg string, now time.Time) (bool, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.seen[msg]
	if st == nil {
		if len(r.seen) > 1000 { // raft has a bounded set of messages; be safe anyway
			clear(r.seen)
		}
		r.seen[msg] = &repeatState{last: now}
		return true, 0
	}
	if now.Sub(st.last) < repeatWindow {
		st.suppressed++
		return false, 0
	}
	n := st.suppressed
	st.last, st.suppressed = now, 0
	return true, n
}

func newHclog(l *slog.Logger, name string) hclog.Logger {
	a := newAdapter(l, name, nil)
	a.lim = &repeatLimiter{seen: map[string]*repeatState{}}
	return a
}

func newAdapter(base *slog.Logger, name string, implied []any) *hclogAdapter {
	a := &hclogAdapter{base: base, l: base, name: name, implied: implied}
	if name != "" {
		a.l = base.With("logger", name)
	}
	return a
}

func slogLevel(level hclog.Level) slog.Level {
	switch level {
	case hclog.Trace:
		return slog.LevelDebug - 4
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	default:
		return slog.LevelInfo
	}
}

func (a *hclogAdapter) Log(level hclog.Level, msg string, args ...any) {
	if level == hclog.Off {
		return
	}
	if level >= hclog.Warn && a.lim != nil {
		ok, suppressed := a.lim.allow(msg, time.Now())
		if !ok {
			return
		}
		if suppressed > 0 {
			args = append(args[:len(args):len(args)], "repeats_suppressed", suppressed)
		}
	}
	a.l.Log(context.Background(), slogLevel(level), msg, expandFormats(args)...)
}

// expandFormats renders hclog.Fmt values (raft logs its configuration with
// hclog.Fmt("%+v", servers)), which slog would print as a raw slice.
func expandFormats(args []any) []any {
	for i, v := range args {
		f, ok := v.(hclog.Format)
		if !ok || len(f) == 0 {
			continue
		}
		format, ok := f[0].(string)
		if !ok {
			continue
		}
		out := append([]any(nil), args...)
		out[i] = fmt.Sprintf(format, f[1:]...)
		return expandFormats(out)
	}
	return args
}

func (a *hclogAdapter) Trace(msg string, args ...any) { a.Log(hclog.Trace, msg, args...) }
func (a *hclogAdapter) Debug(msg string, args ...any) { a.Log(hclog.Debug, msg, args...) }
func (a *hclogAdapter) Info(msg string, args ...any)  { a.Log(hclog.Info, msg, args...) }
func (a *hclogAdapter) Warn(msg string, args ...any)  { a.Log(hclog.Warn, msg, args...) }
func (a *hclogAdapter) Error(msg string, args ...any) { a.Log(hclog.Error, msg, args...) }

func (a *hclogAdapter) enabled(level hclog.Level) bool {
	return a.l.Enabled(context.Background(), slogLevel(level))
}

func (a *hclogAdapter) IsTrace() bool { return a.enabled(hclog.Trace) }
func (a *hclogAdapter) IsDebug() bool { return a.enabled(hclog.Debug) }
func (a *hclogAdapter) IsInfo() bool  { return a.enabled(hclog.Info) }
func (a *hclogAdapter) IsWarn() bool  { return a.enabled(hclog.Warn) }
func (a *hclogAdapter) IsError() bool { return a.enabled(hclog.Error) }

func (a *hclogAdapter) ImpliedArgs() []any { return a.implied }

func (a *hclogAdapter) With(args ...any) hclog.Logger {
	return a.derive(a.base.With(args...), a.name, append(a.implied[:len(a.implied):len(a.implied)], args...))
}

func (a *hclogAdapter) Name() string { return a.name }

func (a *hclogAdapter) Named(name string) hclog.Logger {
	if a.name != "" {
		name = a.name + "." + name
	}
	return a.derive(a.base, name, a.implied)
}

func (a *hclogAdapter) ResetNamed(name string) hclog.Logger {
	return a.derive(a.base, name, a.implied)
}

func (a *hclogAdapter) derive(base *slog.Logger, name string, implied []any) *hclogAdapter {
	d := newAdapter(base, name, implied)
	d.lim = a.lim
	return d
}

func (a *hclogAdapter) SetLevel(hclog.Level) {}

func (a *hclogAdapter) GetLevel() hclog.Level {
	for _, l := range []hclog.Level{hclog.Trace, hclog.Debug, hclog.Info, hclog.Warn, hclog.Error} {
		if a.enabled(l) {
			return l
		}
	}
	return hclog.Off
}

func (a *hclogAdapter) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	level := slog.LevelInfo
	if opts != nil && opts.ForceLevel != hclog.NoLevel {
		level = slogLevel(opts.ForceLevel)
	}
	return slog.NewLogLogger(a.l.Handler(), level)
}

func (a *hclogAdapter) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	return a.StandardLogger(opts).Writer()
}
