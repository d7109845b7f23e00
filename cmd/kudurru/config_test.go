package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// load runs loadConfig with a YAML file (when yaml is not empty), an
// environment and serve's command-line flags.
func load(t *testing.T, yaml string, env []string, args ...string) (Config, error) {
	t.Helper()
	path := ""
	if yaml != "" {
		path = filepath.Join(t.TempDir(), "kudurru.yaml")
		if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	fs, _, dev := serveFlags(discard{})
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	var preset map[string]any
	if *dev {
		preset = devPreset()
	}
	return loadConfig(DefaultConfig(), preset, path, env, fs)
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func TestConfigLayering(t *testing.T) {
	const file = "node:\n  id: from-file\napi:\n  addr: 127.0.0.1:9001\nraft:\n  heartbeat_timeout: 2s\n  election_timeout: 3s\n"
	tests := []struct {
		name     string
		yaml     string
		env      []string
		args     []string
		id, addr string
	}{
		{"defaults", "", nil, nil, "", "127.0.0.1:8053"},
		{"file over defaults", file, nil, nil, "from-file", "127.0.0.1:9001"},
		{"env over file", file, []string{"KUDURRU_NODE_ID=from-env"}, nil, "from-env", "127.0.0.1:9001"},
		{"flag over env", file, []string{"KUDURRU_NODE_ID=from-env", "KUDURRU_API_ADDR=127.0.0.1:9002"}, []string{"--node-id", "from-flag"}, "from-flag", "127.0.0.1:9002"},
		{"dev preset under file", "node:\n  id: from-file\n", nil, []string{"--dev"}, "from-file", devAPIAddr},
		{"dev preset under flags", "", nil, []string{"--dev", "--api-addr", "127.0.0.1:9003"}, "dev", "127.0.0.1:9003"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := load(t, tc.yaml, tc.env, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Node.ID != tc.id || cfg.API.Addr != tc.addr {
				t.Fatalf("node.id %q api.addr %q; want %q %q", cfg.Node.ID, cfg.API.Addr, tc.id, tc.addr)
			}
		})
	}
}

func TestConfigValues(t *testing.T) {
	cfg, err := load(t,
		"raft:\n  join: [http://10.0.0.1:8053]\n  snapshot_threshold: 100\ndns:\n  udp_sockets: 1\n  tcp_idle_timeout: 30s\nlog:\n  format: json\n",
		[]string{
			"KUDURRU_RAFT_HEARTBEAT_TIMEOUT=250ms", "KUDURRU_API_METRICS_AUTH=true", "KUDURRU_API_MAX_BODY_BYTES=1048576",
			"KUDURRU_API=http://cli-only:1", "KUDURRU_TOKEN=cli-only", "KUDURRU_CONFIG=x", "OTHER_VAR=1",
		},
		"--join", "http://10.0.0.2:8053,http://10.0.0.3:8053", "--bootstrap=false")
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case !slices.Equal(cfg.Raft.Join, []string{"http://10.0.0.2:8053", "http://10.0.0.3:8053"}):
		t.Errorf("raft.join %q", cfg.Raft.Join)
	case cfg.Raft.SnapshotThreshold != 100 || cfg.Raft.HeartbeatTimeout != 250*time.Millisecond:
		t.Errorf("raft %+v", cfg.Raft)
	case !cfg.API.MetricsAuth || cfg.API.MaxBodyBytes != 1<<20 || cfg.API.Token != "":
		t.Errorf("api %+v", cfg.API)
	case cfg.DNS.UDPSockets != 1 || cfg.DNS.TCPIdleTimeout != 30*time.Second:
		t.Errorf("dns %+v", cfg.DNS)
	case cfg.Log.Format != "json" || cfg.Log.Level != "info":
		t.Errorf("log %+v", cfg.Log)
	}
	cfg, err = load(t, "", []string{"KUDURRU_RAFT_JOIN=http://a:1,http://b:2"})
	if err != nil || !slices.Equal(cfg.Raft.Join, []string{"http://a:1", "http://b:2"}) {
		t.Fatalf("join from env: %q %v", cfg.Raft.Join, err)
	}
}

// TestConfigErrors: typos and bad values fail naming the key and where it
// came from.
func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		env  []string
		args []string
		want []string
	}{
		{"unknown key in file", "api:\n  tokn: x\n", nil, nil, []string{`"api.tokn"`, "config file"}},
		{"unknown section in file", "nodes:\n  id: x\n", nil, nil, []string{`"nodes.id"`}},
		{"unknown key in env", "", []string{"KUDURRU_API_TOKN=x"}, nil, []string{`"api.tokn"`, "KUDURRU_API_TOKN"}},
		{"unknown dns key", "dns:\n  adr: 127.0.0.1:53\n", nil, nil, []string{`"dns.adr"`}},
		{"bad duration", "raft:\n  heartbeat_timeout: 1x\n", nil, nil, []string{"raft.heartbeat_timeout", `"1x" is not a duration`}},
		{"duration without unit", "api:\n  leader_wait: 5\n", nil, nil, []string{"api.leader_wait", "with a unit"}},
		{"bad duration in env", "", []string{"KUDURRU_API_FORWARD_TIMEOUT=soon"}, nil, []string{"api.forward_timeout", "environment"}},
		{"bad bool in env", "", []string{"KUDURRU_RAFT_BOOTSTRAP=yes"}, nil, []string{"raft.bootstrap"}},
		{"bad number", "raft:\n  snapshot_threshold: many\n", nil, nil, []string{"raft.snapshot_threshold"}},
		{"negative unsigned", "raft:\n  trailing_logs: -1\n", nil, nil, []string{"raft.trailing_logs"}},
		{"list for a string", "node:\n  id: [a, b]\n", nil, nil, []string{"node.id"}},
		{"section given a value", "api: 5\n", nil, nil, []string{"api"}},
		{"bad yaml", "node: [\n", nil, nil, []string{"config file"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.yaml, tc.env, tc.args...)
			if err == nil {
				t.Fatal("loaded")
			}
			t.Log(err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	if _, err := loadConfig(DefaultConfig(), nil, filepath.Join(t.TempDir(), "missing.yaml"), nil, nil); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	valid := func() Config {
		c := DefaultConfig()
		c.Node.ID, c.Node.DataDir = "n1", "/var/lib/kudurru"
		return c
	}
	tests := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"valid", func(*Config) {}, ""},
		{"no id", func(c *Config) { c.Node.ID = "" }, "node.id is empty"},
		{"no data dir", func(c *Config) { c.Node.DataDir = "" }, "node.data_dir is empty"},
		{"public api without token", func(c *Config) { c.API.Addr, c.API.Advertise = "192.0.2.1:8053", "http://192.0.2.1:8053" }, "api.token is empty"},
		{"public api with token", func(c *Config) {
			c.API.Addr, c.API.Advertise, c.API.Token = "0.0.0.0:8053", "http://192.0.2.1:8053", "t"
		}, ""},
		{"wildcard api without advertise", func(c *Config) { c.API.Addr, c.API.Token = "0.0.0.0:8053", "t" }, "api.advertise"},
		{"bootstrap and join", func(c *Config) { c.Raft.Bootstrap, c.Raft.Join = true, []string{"http://a:1"} }, "either creates a cluster or joins"},
		{"forward not above apply", func(c *Config) { c.API.ForwardTimeout = c.Raft.ApplyTimeout }, "api.forward_timeout"},
		{"bad level", func(c *Config) { c.Log.Level = "loud" }, "log.level"},
		{"bad format", func(c *Config) { c.Log.Format = "xml" }, "log.format"},
		{"bad join url", func(c *Config) { c.Raft.Join = []string{"10.0.0.1:8053"} }, "Join[0]"},
		{"raft timings", func(c *Config) { c.Raft.ElectionTimeout = 10 * time.Millisecond }, "ElectionTimeout"},
		{"dns addr", func(c *Config) { c.DNS.Addr = "nowhere" }, "dns: addr"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			tc.mod(&c)
			err := c.Validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
}
