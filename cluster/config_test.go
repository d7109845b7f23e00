package cluster

import (
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	valid := func() Config {
		c := DefaultConfig()
		c.NodeID, c.DataDir = "n1", "/tmp/x"
		return c
	}
	if err := valid().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	cases := []struct {
		name string
		mod  func(*Config)
		want string // part of the message: the field and its value
	}{
		{"empty node ID", func(c *Config) { c.NodeID = "" }, `NodeID ""`},
		{"node ID with space", func(c *Config) { c.NodeID = "a b" }, `NodeID "a b"`},
		{"no data dir", func(c *Config) { c.DataDir = "" }, "DataDir"},
		{"raft addr without port", func(c *Config) { c.RaftAddr = "127.0.0.1" }, `RaftAddr "127.0.0.1"`},
		{"all interfaces without advertise", func(c *Config) { c.RaftAddr = "0.0.0.0:7000" }, "RaftAdvertise"},
		{"unspecified advertise", func(c *Config) { c.RaftAdvertise = "0.0.0.0:7000" }, `RaftAdvertise "0.0.0.0:7000"`},
		{"api addr not a URL", func(c *Config) { c.APIAddr = "127.0.0.1:8053" }, `APIAddr "127.0.0.1:8053"`},
		{"bad join", func(c *Config) { c.Join = []string{"ftp://x"} }, `Join[0] "ftp://x"`},
		{"bootstrap and join", func(c *Config) { c.Bootstrap = true; c.Join = []string{"http://a:1"} }, "Bootstrap"},
		{"lease above heartbeat", func(c *Config) { c.LeaderLeaseTimeout = 2 * time.Second }, "LeaderLeaseTimeout 2s"},
		{"election below heartbeat", func(c *Config) { c.ElectionTimeout = 500 * time.Millisecond }, "ElectionTimeout 500ms"},
		{"zero apply timeout", func(c *Config) { c.ApplyTimeout = 0 }, "ApplyTimeout 0s"},
		{"zero debounce", func(c *Config) { c.LocalDBDebounce = 0 }, "LocalDBDebounce 0s"},
		{"huge batches", func(c *Config) { c.MaxAppendEntries = 5000 }, "MaxAppendEntries 5000"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := valid()
			c.mod(&cfg)
			err := cfg.Validate()
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not name %q", err, c.want)
			}
		})
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	c := testConfig("", t.TempDir())
	if _, err := New(c); err == nil || !strings.Contains(err.Error(), "NodeID") {
		t.Errorf("New with an empty NodeID: %v", err)
	}
}
