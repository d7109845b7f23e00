package resolver_test

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/kudurru/kudurru/resolver"
	"github.com/kudurru/kudurru/resolver/cache"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// cacheBlob is the name the server keeps its cache dump under.
const cacheBlob = "dns-cache"

// TestCacheSurvivesRestart: a server with a warm cache closes, which dumps
// the cache; a new server with the same store answers the first query for a
// cached name without asking the upstream.
func TestCacheSurvivesRestart(t *testing.T) {
	up := startUpstream(t, "www.upstream.test. 300 IN A 192.0.2.1", "mail.upstream.test. 300 IN MX 10 mx.upstream.test.")
	blobs := &memBlobs{}
	reg1 := prometheus.NewRegistry()
	srv1 := startForwarder(t, fwdOptions{blobs: blobs, reg: reg1}, up)
	ask(t, srv1.Addr(), "www.upstream.test.", dns.TypeA, 1232)
	ask(t, srv1.Addr(), "mail.upstream.test.", dns.TypeMX, 1232)
	ask(t, srv1.Addr(), "nope.upstream.test.", dns.TypeA, 1232)
	if err := srv1.Close(); err != nil {
		t.Fatal(err)
	}
	if b, _ := blobs.GetBlob(cacheBlob); len(b) == 0 {
		t.Fatal("Close wrote no cache dump")
	}
	if got := counterValue(t, reg1, "kudurru_dns_cache_dumps_total", map[string]string{"result": "ok"}); got != 1 {
		t.Errorf("cache_dumps_total{result=ok} = %v, want 1", got)
	}
	before := up.queries.Load()

	lb, log := newLogBuffer(t)
	reg2 := prometheus.NewRegistry()
	srv2 := startForwarder(t, fwdOptions{blobs: blobs, reg: reg2, log: log}, up)
	r := ask(t, srv2.Addr(), "www.upstream.test.", dns.TypeA, 1232)
	if firstA(r) != "192.0.2.1" || r.Answer[0].Header().Ttl > 300 {
		t.Fatalf("after restart: %v", r)
	}
	if r := ask(t, srv2.Addr(), "nope.upstream.test.", dns.TypeA, 1232); r.Rcode != dns.RcodeNameError {
		t.Errorf("cached NXDOMAIN after restart: %v", r)
	}
	if n := up.queries.Load() - before; n != 0 {
		t.Errorf("upstream got %d queries after the restart, want 0", n)
	}
	if !strings.Contains(lb.String(), "cache restored") || !strings.Contains(lb.String(), "entries=3") {
		t.Errorf("no restore log line with entries=3:\n%s", lb.String())
	}
	if got := counterValue(t, reg2, "kudurru_dns_cache_restores_total", map[string]string{"result": "ok"}); got != 1 {
		t.Errorf("cache_restores_total{result=ok} = %v, want 1", got)
	}
}

// TestBadCacheDumpRefused: a damaged, foreign, too old or newer dump is
// refused with a log line naming why, and the server starts anyway.
func TestBadCacheDumpRefused(t *testing.T) {
	good := validDump(t, time.Now())
	damaged := bytes.Clone(good)
	damaged[len(damaged)-3] ^= 0xff
	newer := bytes.Clone(good)
	newer[9] = 9 // version 9, with a header checksum to match
	binary.BigEndian.PutUint32(newer[24:], crc32.Checksum(newer[:24], crc32.MakeTable(crc32.Castagnoli)))
	for _, c := range []struct {
		name, reason string
		blob         []byte
	}{
		{"damaged", "damaged", damaged},
		{"foreign", "not a cache dump", []byte("SQLite format 3\x00 something else entirely")},
		{"too old", "too old", validDump(t, time.Now().Add(-48*time.Hour))},
		{"newer format", "newer format", newer},
		{"truncated", "damaged", good[:len(good)/2]},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := startUpstream(t, "www.upstream.test. 300 IN A 192.0.2.1")
			blobs := &memBlobs{}
			blobs.PutBlob(cacheBlob, c.blob)
			lb, log := newLogBuffer(t)
			reg := prometheus.NewRegistry()
			srv := startForwarder(t, fwdOptions{blobs: blobs, reg: reg, log: log}, up)
			if r := ask(t, srv.Addr(), "www.upstream.test.", dns.TypeA, 1232); firstA(r) != "192.0.2.1" {
				t.Fatalf("server with a refused dump: %v", r)
			}
			if up.queries.Load() != 1 {
				t.Errorf("upstream got %d queries, want 1: nothing may have been restored", up.queries.Load())
			}
			logs := lb.String()
			if !strings.Contains(logs, "cache dump refused") ||
				!strings.Contains(logs, "reason="+c.reason) && !strings.Contains(logs, `reason="`+c.reason+`"`) {
				t.Errorf("want a refusal log line with reason %q:\n%s", c.reason, logs)
			}
			if got := counterValue(t, reg, "kudurru_dns_cache_restores_total", map[string]string{"result": "refused"}); got != 1 {
				t.Errorf("cache_restores_total{result=refused} = %v, want 1", got)
			}
		})
	}
}

// validDump is a dump holding one entry, written at the given time.
func validDump(t *testing.T, at time.Time) []byte {
	t.Helper()
	c, err := cache.New(cache.DefaultConfig(), slog.New(slog.DiscardHandler), nil,
		cache.WithClock(func() time.Time { return at }))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	q := new(dns.Msg)
	q.SetQuestion("other.upstream.test.", dns.TypeA)
	r := new(dns.Msg)
	r.SetReply(q)
	a, _ := dns.NewRR("other.upstream.test. 300 IN A 192.0.2.9")
	r.Answer = []dns.RR{a}
	if !c.Set(q, r) {
		t.Fatal("Set refused the test answer")
	}
	var buf bytes.Buffer
	if err := c.Dump(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestPersistenceOff(t *testing.T) {
	up := startUpstream(t, "www.upstream.test. 300 IN A 192.0.2.1")
	blobs := &memBlobs{}
	srv := startForwarder(t, fwdOptions{blobs: blobs, config: func(c *resolver.Config) { c.Cache.PersistInterval = 0 }}, up)
	ask(t, srv.Addr(), "www.upstream.test.", dns.TypeA, 1232)
	srv.Close()
	if b, _ := blobs.GetBlob(cacheBlob); b != nil {
		t.Error("persist_interval 0 wrote a dump")
	}
}
