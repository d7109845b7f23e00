package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"
)

// serveFlags declares serve's flags. Those in flagKeys set configuration
// keys; their defaults are shown for help only (the defaults layer is
// DefaultConfig).
func serveFlags(stderr io.Writer) (*pflag.FlagSet, *string, *bool) {
	d := DefaultConfig()
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: kudurru serve [flags]\n\nRuns a node. Configuration: defaults < --config file < KUDURRU_* environment < flags (docs/CONFIG.md).\n\nFlags:\n%s", fs.FlagUsages())
	}
	config := fs.String("config", "", "YAML configuration file (or KUDURRU_CONFIG)")
	dev := fs.Bool("dev", false, "run a single self-bootstrapped node on loopback addresses with a temporary data dir and a demo zone")
	fs.String("node-id", "", "node.id: this node's stable, unique ID")
	fs.String("data-dir", "", "node.data_dir: where the node keeps its state")
	fs.String("api-addr", d.API.Addr, "api.addr: listen address of the admin API")
	fs.String("api-advertise", "", "api.advertise: base URL other nodes reach the API at (default http://<api-addr>)")
	fs.String("token", "", "api.token: bearer token of the admin API (required off loopback)")
	fs.String("raft-addr", d.Raft.Addr, "raft.addr: listen address of the Raft transport")
	fs.String("raft-advertise", "", "raft.advertise: address other nodes dial for Raft (default raft-addr)")
	fs.Bool("bootstrap", false, "raft.bootstrap: create a new cluster with this node as its first member")
	fs.StringSlice("join", nil, "raft.join: API base URLs of members to join through, comma-separated")
	fs.String("dns-addr", d.DNS.Addr, "dns.addr: listen address of the DNS server (UDP and TCP)")
	fs.String("log-level", d.Log.Level, "log.level: debug, info, warn or error")
	fs.String("log-format", d.Log.Format, "log.format: text or json")
	return fs, config, dev
}

// cmdServe runs `kudurru serve`.
func cmdServe(ctx context.Context, a *app, args []string) int {
	fs, configPath, dev := serveFlags(a.stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitOK
		}
		return a.usageErr("%v", err)
	}
	if fs.NArg() > 0 {
		return a.usageErr("serve takes no arguments, got %q", fs.Args())
	}
	path := *configPath
	if path == "" {
		path = a.getenv("KUDURRU_CONFIG")
	}
	var preset map[string]any
	if *dev {
		preset = devPreset()
	}
	cfg, err := loadConfig(DefaultConfig(), preset, path, a.environ(), fs)
	if err != nil {
		return a.fail(exitUsage, err)
	}
	if *dev && cfg.Node.DataDir == "" {
		dir, err := os.MkdirTemp("", "kudurru-dev-")
		if err != nil {
			return a.fail(exitErr, fmt.Errorf("create a temporary data dir: %w", err))
		}
		defer os.RemoveAll(dir)
		cfg.Node.DataDir = dir
	}
	if err := cfg.Validate(); err != nil {
		return a.fail(exitUsage, fmt.Errorf("config: %w", err))
	}
	log, err := newLogger(cfg.Log, a.stderr)
	if err != nil {
		return a.fail(exitUsage, err)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var ready func(started)
	if *dev {
		ready = func(s started) { devReady(ctx, a, cfg, s, log) }
	}
	if err := runNode(ctx, cfg, log, ready); err != nil {
		return a.fail(exitErr, err)
	}
	return exitOK
}

// newLogger builds the process logger.
func newLogger(c LogConfig, w io.Writer) (*slog.Logger, error) {
	level, err := parseLevel(c.Level)
	if err != nil {
		return nil, fmt.Errorf("log.level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), nil
}
