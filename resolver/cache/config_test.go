package cache

import (
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig invalid: %v", err)
	}
	cases := []struct {
		name   string
		mutate func(*Config)
		want   string // substring naming field and value
	}{
		{"shards not a power of two", func(c *Config) { c.Shards = 48 }, "shards 48"},
		{"shards zero", func(c *Config) { c.Shards = 0 }, "shards 0"},
		{"max_bytes too small", func(c *Config) { c.MaxBytes = 1000 }, "max_bytes 1000"},
		{"negative min_ttl", func(c *Config) { c.MinTTL = -time.Second }, "min_ttl -1s"},
		{"max_ttl zero", func(c *Config) { c.MaxTTL = 0 }, "max_ttl 0s"},
		{"min above max", func(c *Config) { c.MinTTL = 2 * time.Hour; c.MaxTTL = time.Hour }, "min_ttl 2h0m0s must not exceed max_ttl 1h0m0s"},
		{"negative ttl above max", func(c *Config) { c.MaxNegativeTTL = 48 * time.Hour }, "max_negative_ttl 48h0m0s"},
		{"servfail beyond RFC 2308", func(c *Config) { c.ServfailTTL = 10 * time.Minute }, "servfail_ttl 10m0s"},
		{"negative stale window", func(c *Config) { c.StaleWindow = -time.Second }, "stale_window -1s"},
		{"stale answer ttl zero", func(c *Config) { c.StaleAnswerTTL = 0 }, "stale_answer_ttl 0s"},
		{"stale refresh beyond window", func(c *Config) { c.StaleWindow = time.Minute; c.StaleRefresh = time.Hour }, "stale_refresh 1h0m0s"},
		{"prefetch percent", func(c *Config) { c.PrefetchPercent = 100 }, "prefetch_percent 100"},
		{"persist max age", func(c *Config) { c.PersistMaxAge = 0 }, "persist_max_age 0s"},
		{"persist interval", func(c *Config) { c.PersistInterval = time.Millisecond }, "persist_interval 1ms"},
		{"stale window beyond a TTL", func(c *Config) { c.StaleWindow = maxTTL + time.Second }, "stale_window"},
		{"servfail ttl not whole seconds", func(c *Config) { c.ServfailTTL = 500 * time.Millisecond }, "servfail_ttl 500ms must be whole seconds"},
		{"negative ttl not whole seconds", func(c *Config) { c.MaxNegativeTTL = 1500 * time.Millisecond }, "max_negative_ttl 1.5s"},
		{"min ttl not whole seconds", func(c *Config) { c.MinTTL = 100 * time.Millisecond }, "min_ttl 100ms"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
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
	t.Run("disabled features need no companions", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.StaleWindow, cfg.StaleAnswerTTL, cfg.StaleRefresh = 0, 0, 0
		cfg.PrefetchHits, cfg.PrefetchPercent = 0, 0
		cfg.ServfailTTL, cfg.MaxNegativeTTL = 0, 0
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
	})
}
