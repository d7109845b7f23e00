package cache

import (
	"fmt"
	"math"
	"time"
)

// Config is the cache's configuration. The zero value is not valid; start
// from DefaultConfig. The koanf tags are the configuration keys; see
// docs/FORWARDING.md.
type Config struct {
	// Shards is the number of independently locked shards; a power of two.
	Shards int `koanf:"shards"`
	// MaxBytes bounds the memory the cache accounts for: packed responses,
	// their keys, TTL offsets and a fixed per-entry overhead. Each shard gets
	// MaxBytes/Shards and evicts (CLOCK) beyond that.
	MaxBytes int64 `koanf:"max_bytes"`

	// MinTTL and MaxTTL clamp every record TTL of a stored response.
	MinTTL time.Duration `koanf:"min_ttl"`
	MaxTTL time.Duration `koanf:"max_ttl"`
	// MaxNegativeTTL caps how long NXDOMAIN and NODATA answers are kept
	// (RFC 2308 §5); 0 disables negative caching.
	MaxNegativeTTL time.Duration `koanf:"max_negative_ttl"`
	// ServfailTTL is how long a SERVFAIL answer is kept (RFC 2308 §7, at most
	// 5 minutes); 0 disables SERVFAIL caching.
	ServfailTTL time.Duration `koanf:"servfail_ttl"`

	// StaleWindow is how long past expiry an answer may still be served when
	// every upstream failed (RFC 8767, BIND max-stale-ttl); 0 disables
	// serve-stale.
	StaleWindow time.Duration `koanf:"stale_window"`
	// StaleAnswerTTL is the TTL of every record in a stale answer (RFC 8767
	// recommends 30 s).
	StaleAnswerTTL time.Duration `koanf:"stale_answer_ttl"`
	// StaleRefresh is how long, after a failed refresh, a stale answer is
	// served straight from the cache without asking upstreams again (RFC 8767
	// "failure recheck timer").
	StaleRefresh time.Duration `koanf:"stale_refresh"`

	// PrefetchHits is how many hits an entry needs before Get signals that it
	// should be refreshed ahead of expiry; 0 disables prefetch.
	PrefetchHits uint32 `koanf:"prefetch_hits"`
	// PrefetchPercent is the remaining fraction of the entry's TTL, in
	// percent, below which a popular entry is signalled for prefetch.
	PrefetchPercent int `koanf:"prefetch_percent"`

	// PersistInterval is how often the cache's owner (the query chain)
	// writes a dump to the node's local storage; it also dumps once at
	// shutdown and restores the dump at start. 0 turns persistence off. The
	// cache itself only checks the value.
	PersistInterval time.Duration `koanf:"persist_interval"`
	// PersistMaxAge is the oldest dump Load accepts.
	PersistMaxAge time.Duration `koanf:"persist_max_age"`
	// PersistGzip compresses the body of dumps written by Dump.
	PersistGzip bool `koanf:"persist_gzip"`
}

// DefaultConfig returns the defaults documented in docs/FORWARDING.md.
func DefaultConfig() Config {
	return Config{
		Shards:          64,
		MaxBytes:        64 << 20,
		MinTTL:          0,
		MaxTTL:          24 * time.Hour,
		MaxNegativeTTL:  time.Hour,
		ServfailTTL:     5 * time.Second,
		StaleWindow:     24 * time.Hour,
		StaleAnswerTTL:  30 * time.Second,
		StaleRefresh:    30 * time.Second,
		PrefetchHits:    3,
		PrefetchPercent: 10,
		PersistInterval: 5 * time.Minute,
		PersistMaxAge:   24 * time.Hour,
		PersistGzip:     true,
	}
}

const (
	// minShardBytes keeps a shard able to hold a useful number of entries.
	minShardBytes = 4096
	// maxServfailTTL is the RFC 2308 §7 ceiling for caching SERVFAIL.
	maxServfailTTL = 5 * time.Minute
	// maxTTL is the largest TTL RFC 2181 §8 allows.
	maxTTL = time.Duration(math.MaxInt32) * time.Second
)

// Validate checks every field and the relations between them; the error
// names the field and its value.
func (c Config) Validate() error {
	switch {
	case c.Shards < 1 || c.Shards > 1<<16 || c.Shards&(c.Shards-1) != 0:
		return fmt.Errorf("cache config: shards %d must be a power of two between 1 and 65536", c.Shards)
	case c.MaxBytes < int64(c.Shards)*minShardBytes:
		return fmt.Errorf("cache config: max_bytes %d must be at least %d (shards %d × %d)",
			c.MaxBytes, int64(c.Shards)*minShardBytes, c.Shards, minShardBytes)
	case c.MinTTL < 0:
		return fmt.Errorf("cache config: min_ttl %s must not be negative", c.MinTTL)
	case c.MaxTTL < time.Second || c.MaxTTL > maxTTL:
		return fmt.Errorf("cache config: max_ttl %s must be between 1s and %s", c.MaxTTL, maxTTL)
	case c.MinTTL > c.MaxTTL:
		return fmt.Errorf("cache config: min_ttl %s must not exceed max_ttl %s", c.MinTTL, c.MaxTTL)
	case c.MaxNegativeTTL < 0 || c.MaxNegativeTTL > c.MaxTTL:
		return fmt.Errorf("cache config: max_negative_ttl %s must be between 0 and max_ttl %s", c.MaxNegativeTTL, c.MaxTTL)
	case c.ServfailTTL < 0 || c.ServfailTTL > maxServfailTTL:
		return fmt.Errorf("cache config: servfail_ttl %s must be between 0 and %s (RFC 2308 §7)", c.ServfailTTL, maxServfailTTL)
	case c.StaleWindow < 0 || c.StaleWindow > maxTTL:
		return fmt.Errorf("cache config: stale_window %s must be between 0 and %s", c.StaleWindow, maxTTL)
	case c.StaleWindow > 0 && (c.StaleAnswerTTL < time.Second || c.StaleAnswerTTL > time.Hour):
		return fmt.Errorf("cache config: stale_answer_ttl %s must be between 1s and 1h", c.StaleAnswerTTL)
	case c.StaleWindow > 0 && (c.StaleRefresh < time.Second || c.StaleRefresh > c.StaleWindow):
		return fmt.Errorf("cache config: stale_refresh %s must be between 1s and stale_window %s", c.StaleRefresh, c.StaleWindow)
	case c.PrefetchHits > 0 && (c.PrefetchPercent < 1 || c.PrefetchPercent > 99):
		return fmt.Errorf("cache config: prefetch_percent %d must be between 1 and 99", c.PrefetchPercent)
	case c.PersistInterval != 0 && (c.PersistInterval < time.Second || c.PersistInterval > maxTTL):
		return fmt.Errorf("cache config: persist_interval %s must be 0 (off) or between 1s and %s", c.PersistInterval, maxTTL)
	case c.PersistMaxAge <= 0:
		return fmt.Errorf("cache config: persist_max_age %s must be positive", c.PersistMaxAge)
	}
	// TTLs are whole seconds: 500ms would silently become 0 (no caching).
	for _, f := range []struct {
		key string
		d   time.Duration
	}{{"min_ttl", c.MinTTL}, {"max_ttl", c.MaxTTL}, {"max_negative_ttl", c.MaxNegativeTTL},
		{"servfail_ttl", c.ServfailTTL}, {"stale_answer_ttl", c.StaleAnswerTTL}} {
		if f.d%time.Second != 0 {
			return fmt.Errorf("cache config: %s %s must be whole seconds (a TTL)", f.key, f.d)
		}
	}
	return nil
}

// seconds converts a configured duration to whole TTL seconds.
func seconds(d time.Duration) uint32 {
	if d <= 0 {
		return 0
	}
	s := d / time.Second
	if s > math.MaxInt32 {
		return math.MaxInt32
	}
	return uint32(s)
}
