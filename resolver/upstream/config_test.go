package upstream

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig invalid: %v", err)
	}
	ok := map[string][]string{".": {"udp://192.0.2.53"}}
	cases := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"zone without upstreams", func(c *Config) { c.Forward = map[string][]string{"corp.example.": nil} }, `forward zone "corp.example." has no upstreams`},
		{"bad zone", func(c *Config) { c.Forward = map[string][]string{"bad..zone": {"udp://192.0.2.53"}} }, `forward zone "bad..zone"`},
		{"empty zone", func(c *Config) { c.Forward = map[string][]string{"": {"udp://192.0.2.53"}} }, `forward zone ""`},
		{"same zone twice", func(c *Config) {
			c.Forward = map[string][]string{"Corp.Example": {"udp://192.0.2.53"}, "corp.example.": {"udp://192.0.2.54"}}
		}, "are the same zone"},
		{"bad address", func(c *Config) { c.Forward = map[string][]string{".": {"udp://dns.example"}} }, `"udp://dns.example"`},
		{"policy", func(c *Config) { c.Policy = "fastest" }, `policy "fastest"`},
		{"query timeout", func(c *Config) { c.QueryTimeout = 0 }, "query_timeout 0s"},
		{"attempt above query", func(c *Config) { c.AttemptTimeout = 10 * time.Second }, "attempt_timeout 10s"},
		{"max attempts", func(c *Config) { c.MaxAttempts = 0 }, "max_attempts 0"},
		{"max inflight", func(c *Config) { c.MaxInflight = 0 }, "max_inflight 0"},
		{"negative health interval", func(c *Config) { c.HealthCheckInterval = -time.Second }, "health_check_interval -1s"},
		{"health max below interval", func(c *Config) { c.HealthCheckMaxInterval = time.Second }, "health_check_max_interval 1s"},
		{"health timeout", func(c *Config) { c.HealthCheckTimeout = 0 }, "health_check_timeout 0s"},
		{"max fails", func(c *Config) { c.MaxFails = 0 }, "max_fails 0"},
		{"health name", func(c *Config) { c.HealthCheckName = "a..b" }, `health_check_name "a..b"`},
		{"health type", func(c *Config) { c.HealthCheckType = "BOGUS" }, `health_check_type "BOGUS"`},
		{"doh method", func(c *Config) { c.DoHMethod = "PUT" }, `doh_method "PUT"`},
		{"idle timeout", func(c *Config) { c.IdleTimeout = 0 }, "idle_timeout 0s"},
		{"ca file", func(c *Config) { c.CAFile = filepath.Join(t.TempDir(), "missing.pem") }, "ca_file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Forward = ok
			tc.mutate(&cfg)
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want an error containing %q", err, tc.want)
			}
			if _, err := New(cfg, testLogger(t), nil); err == nil {
				t.Error("New accepted an invalid config")
			}
		})
	}
	t.Run("health checks off need no health settings", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.HealthCheckInterval, cfg.HealthCheckTimeout, cfg.MaxFails, cfg.HealthCheckName = 0, 0, 0, ""
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("ca file without certificates", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Forward = ok
		cfg.CAFile = filepath.Join("testdata", "not-a-cert.pem")
		if _, err := New(cfg, testLogger(t), nil); err == nil || !strings.Contains(err.Error(), "no PEM certificates") {
			t.Errorf("New = %v, want a ca_file error", err)
		}
	})
}

func TestSharedUpstreamAcrossZones(t *testing.T) {
	cfg := testConfig(map[string][]string{
		".":             {"udp://192.0.2.53", "udp://192.0.2.54"},
		"corp.example.": {"udp://192.0.2.53:53", "UDP://192.0.2.53"},
	})
	f, _ := newForwarder(t, cfg, nil)
	if len(f.ups) != 2 {
		t.Errorf("%d upstreams, want 2: one address is one upstream", len(f.ups))
	}
	if g := f.groups["corp.example."]; len(g.ups) != 1 || g.ups[0] != f.groups["."].ups[0] {
		t.Error("the zone's upstream is not shared with the default zone")
	}
}
