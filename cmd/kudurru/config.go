package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/kudurru/kudurru/cluster"
	"github.com/kudurru/kudurru/cluster/httpapi"
	"github.com/kudurru/kudurru/resolver"
	"github.com/prometheus/client_golang/prometheus"
)

// Config is the configuration of `kudurru serve`. The koanf tags are the
// configuration keys; docs/CONFIG.md lists every one with its default,
// environment variable and flag.
type Config struct {
	Node NodeConfig      `koanf:"node"`
	API  APIConfig       `koanf:"api"`
	Raft RaftConfig      `koanf:"raft"`
	DNS  resolver.Config `koanf:"dns"` // defined by the resolver package (docs/DNS.md)
	Log  LogConfig       `koanf:"log"`
}

// NodeConfig is the node's identity and storage.
type NodeConfig struct {
	ID              string        `koanf:"id"`
	DataDir         string        `koanf:"data_dir"`
	LocalDBDebounce time.Duration `koanf:"local_db_debounce"`
}

// APIConfig is the HTTP admin API.
type APIConfig struct {
	Addr            string        `koanf:"addr"`
	Advertise       string        `koanf:"advertise"` // base URL other nodes use; default http://<addr>
	Token           string        `koanf:"token"`
	MetricsAuth     bool          `koanf:"metrics_auth"`
	MaxBodyBytes    int64         `koanf:"max_body_bytes"`
	LeaderWait      time.Duration `koanf:"leader_wait"`
	ForwardTimeout  time.Duration `koanf:"forward_timeout"`
	ShutdownTimeout time.Duration `koanf:"shutdown_timeout"`
}

// RaftConfig is membership and Raft tuning.
type RaftConfig struct {
	Addr               string        `koanf:"addr"`
	Advertise          string        `koanf:"advertise"`
	Bootstrap          bool          `koanf:"bootstrap"`
	Join               []string      `koanf:"join"`
	ApplyTimeout       time.Duration `koanf:"apply_timeout"`
	HeartbeatTimeout   time.Duration `koanf:"heartbeat_timeout"`
	ElectionTimeout    time.Duration `koanf:"election_timeout"`
	LeaderLeaseTimeout time.Duration `koanf:"leader_lease_timeout"`
	CommitTimeout      time.Duration `koanf:"commit_timeout"`
	SnapshotInterval   time.Duration `koanf:"snapshot_interval"`
	SnapshotThreshold  uint64        `koanf:"snapshot_threshold"`
	TrailingLogs       uint64        `koanf:"trailing_logs"`
	MaxAppendEntries   int           `koanf:"max_append_entries"`
	PromoteInterval    time.Duration `koanf:"promote_interval"`
	PromoteMaxLag      uint64        `koanf:"promote_max_lag"`
}

// LogConfig is the process log.
type LogConfig struct {
	Level  string `koanf:"level"`  // debug, info, warn, error
	Format string `koanf:"format"` // text, json
}

// DefaultConfig returns the defaults of every key. They come from the
// packages' own defaults, so the two cannot disagree.
func DefaultConfig() Config {
	cc := cluster.DefaultConfig()
	ac := httpapi.DefaultConfig()
	return Config{
		Node: NodeConfig{LocalDBDebounce: cc.LocalDBDebounce},
		API: APIConfig{
			Addr: ac.Addr, MetricsAuth: ac.MetricsAuth, MaxBodyBytes: ac.MaxBodyBytes,
			LeaderWait: ac.LeaderWait, ForwardTimeout: ac.ForwardTimeout, ShutdownTimeout: ac.ShutdownTimeout,
		},
		Raft: RaftConfig{
			Addr: cc.RaftAddr, ApplyTimeout: cc.ApplyTimeout,
			HeartbeatTimeout: cc.HeartbeatTimeout, ElectionTimeout: cc.ElectionTimeout,
			LeaderLeaseTimeout: cc.LeaderLeaseTimeout, CommitTimeout: cc.CommitTimeout,
			SnapshotInterval: cc.SnapshotInterval, SnapshotThreshold: cc.SnapshotThreshold,
			TrailingLogs: cc.TrailingLogs, MaxAppendEntries: cc.MaxAppendEntries,
			PromoteInterval: cc.PromoteInterval, PromoteMaxLag: cc.PromoteMaxLag,
		},
		DNS: resolver.DefaultConfig(),
		Log: LogConfig{Level: "info", Format: "text"},
	}
}

// Validate checks the configuration as a whole, naming keys and values,
// then each component's own rules.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Node.ID == "" {
		bad("node.id is empty: give every node a stable, unique ID (--node-id, KUDURRU_NODE_ID)")
	}
	if c.Node.DataDir == "" {
		bad("node.data_dir is empty: say where the node keeps its state (--data-dir, KUDURRU_NODE_DATA_DIR)")
	}
	if c.Raft.Bootstrap && len(c.Raft.Join) > 0 {
		bad("raft.bootstrap is set together with raft.join %q: a node either creates a cluster or joins one", c.Raft.Join)
	}
	if c.API.ForwardTimeout <= c.Raft.ApplyTimeout {
		bad("api.forward_timeout %s must exceed raft.apply_timeout %s, or a follower gives up on a write before the leader answers",
			c.API.ForwardTimeout, c.Raft.ApplyTimeout)
	}
	if _, err := parseLevel(c.Log.Level); err != nil {
		bad("log.level: %v", err)
	}
	if c.Log.Format != "text" && c.Log.Format != "json" {
		bad("log.format %q: use text or json", c.Log.Format)
	}
	if err := c.apiConfig(nil, nil).Validate(); err != nil {
		bad("%v", err)
	}
	if _, err := c.apiAdvertise(); err != nil {
		bad("%v", err)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := c.clusterConfig(nil, nil).Validate(); err != nil {
		return err
	}
	if err := c.DNS.Validate(); err != nil {
		return fmt.Errorf("dns: %w", err)
	}
	return nil
}

// apiAdvertise returns the base URL other nodes reach this node's API at:
// api.advertise, or http://<api.addr> when that names a host.
func (c Config) apiAdvertise() (string, error) {
	if c.API.Advertise != "" {
		u, err := url.Parse(c.API.Advertise)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "", fmt.Errorf("api.advertise %q: want a base URL like http://192.0.2.10:8053", c.API.Advertise)
		}
		return strings.TrimRight(c.API.Advertise, "/"), nil
	}
	host, port, err := net.SplitHostPort(c.API.Addr)
	if err != nil {
		return "", fmt.Errorf("api.addr %q: %v", c.API.Addr, err)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		return "", fmt.Errorf("api.addr %q listens on every interface: set api.advertise to the URL other nodes use", c.API.Addr)
	}
	if port == "0" {
		// Resolved once bound: runNode binds the API before the node starts.
		return "http://" + net.JoinHostPort(host, "0"), nil
	}
	return "http://" + net.JoinHostPort(host, port), nil
}

// apiConfig maps the api section onto httpapi.Config.
func (c Config) apiConfig(log *slog.Logger, reg *prometheus.Registry) httpapi.Config {
	return httpapi.Config{
		Addr: c.API.Addr, Token: c.API.Token, MetricsAuth: c.API.MetricsAuth, MaxBodyBytes: c.API.MaxBodyBytes,
		LeaderWait: c.API.LeaderWait, ProposeTimeout: c.Raft.ApplyTimeout, ForwardTimeout: c.API.ForwardTimeout,
		ShutdownTimeout: c.API.ShutdownTimeout, Logger: log, Registry: reg,
	}
}

// clusterConfig maps the node and raft sections onto cluster.Config.
func (c Config) clusterConfig(log *slog.Logger, reg prometheus.Registerer) cluster.Config {
	adv, _ := c.apiAdvertise()
	return cluster.Config{
		NodeID: c.Node.ID, DataDir: c.Node.DataDir, LocalDBDebounce: c.Node.LocalDBDebounce,
		RaftAddr: c.Raft.Addr, RaftAdvertise: c.Raft.Advertise, APIAddr: adv,
		Bootstrap: c.Raft.Bootstrap, Join: c.Raft.Join, Token: c.API.Token,
		ApplyTimeout: c.Raft.ApplyTimeout, LeaderWait: c.API.LeaderWait,
		PromoteInterval: c.Raft.PromoteInterval, PromoteMaxLag: c.Raft.PromoteMaxLag,
		HeartbeatTimeout: c.Raft.HeartbeatTimeout, ElectionTimeout: c.Raft.ElectionTimeout,
		LeaderLeaseTimeout: c.Raft.LeaderLeaseTimeout, CommitTimeout: c.Raft.CommitTimeout,
		SnapshotInterval: c.Raft.SnapshotInterval, SnapshotThreshold: c.Raft.SnapshotThreshold,
		TrailingLogs: c.Raft.TrailingLogs, MaxAppendEntries: c.Raft.MaxAppendEntries,
		Logger: log, Registry: reg,
	}
}

// parseLevel parses a log level name.
func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("%q: use debug, info, warn or error", s)
	}
	return l, nil
}
