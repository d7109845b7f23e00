package cache

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// warmCache fills a cache with a positive, a negative, a DO and a short-lived
// entry, plus a SERVFAIL that Dump must leave out.
func warmCache(t testing.TB, clk *fakeClock, gz bool) *Cache {
	t.Helper()
	c, _ := newTestCache(t, clk, func(cfg *Config) { cfg.PersistGzip = gz })
	set := func(req *dns.Msg, rcode int, answer, ns []string) {
		if !c.Set(req, reply(t, req, rcode, answer, ns, nil)) {
			t.Fatalf("Set %s refused", req.Question[0].Name)
		}
	}
	set(question("www.example.", dns.TypeA, false, false), dns.RcodeSuccess,
		[]string{"www.example. 3600 IN A 192.0.2.1"}, nil)
	set(question("nx.example.", dns.TypeA, false, false), dns.RcodeNameError, nil,
		[]string{"example. 3600 IN SOA ns.example. host.example. 1 7200 900 1209600 600"})
	set(question("sec.example.", dns.TypeA, true, true), dns.RcodeSuccess,
		[]string{"sec.example. 1800 IN A 192.0.2.2"}, nil)
	set(question("brief.example.", dns.TypeA, false, false), dns.RcodeSuccess,
		[]string{"brief.example. 5 IN A 192.0.2.3"}, nil)
	set(question("broken.example.", dns.TypeA, false, false), dns.RcodeServerFailure, nil, nil)
	return c
}

func dump(t testing.TB, c *Cache) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := c.Dump(&buf); err != nil {
		t.Fatalf("Dump: %v", err)
	}
	return buf.Bytes()
}

func TestDumpLoadRoundTrip(t *testing.T) {
	for _, gz := range []bool{true, false} {
		name := "plain"
		if gz {
			name = "gzip"
		}
		t.Run(name, func(t *testing.T) {
			clk := newClock()
			src := warmCache(t, clk, gz)
			clk.Advance(100 * time.Second) // entries have aged before the dump
			blob := dump(t, src)
			if got := be16(blob[10:]) & dumpFlagGzip; (got != 0) != gz {
				t.Fatalf("gzip flag = %v, want %v", got != 0, gz)
			}

			clk.Advance(20 * time.Second) // downtime
			dst, _ := newTestCache(t, clk, nil)
			st, err := dst.Load(bytes.NewReader(blob), clk.Now())
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if st.Loaded != 3 || st.Expired != 0 || st.Skipped != 0 || !st.WrittenAt.Equal(clk.Now().Add(-20*time.Second)) {
				t.Errorf("Stats = %+v, want 3 loaded, written 20s ago", st)
			}
			cases := []struct {
				req   *dns.Msg
				rcode int
				ttls  []uint32
			}{
				{question("WWW.example.", dns.TypeA, false, false), dns.RcodeSuccess, []uint32{3480}},
				{question("nx.example.", dns.TypeA, false, false), dns.RcodeNameError, []uint32{480}},
				{question("sec.example.", dns.TypeA, true, true), dns.RcodeSuccess, []uint32{1680}},
			}
			for _, tc := range cases {
				m, _ := mustGet(t, dst, tc.req)
				if m.Rcode != tc.rcode || !slices.Equal(ttls(m), tc.ttls) || m.Question[0].Name != tc.req.Question[0].Name {
					t.Errorf("%s: rcode %s TTLs %v name %s, want %s %v %s", tc.req.Question[0].Name,
						dns.RcodeToString[m.Rcode], ttls(m), m.Question[0].Name,
						dns.RcodeToString[tc.rcode], tc.ttls, tc.req.Question[0].Name)
				}
			}
			for _, name := range []string{"brief.example.", "broken.example."} {
				if _, res := dst.Get(nil, question(name, dns.TypeA, false, false)); res.Found {
					t.Errorf("%s restored: expired and SERVFAIL entries are not dumped", name)
				}
			}
		})
	}
}

func TestLoadSkipsEntriesExpiredDuringDowntime(t *testing.T) {
	clk := newClock()
	src := warmCache(t, clk, true)
	blob := dump(t, src)
	clk.Advance(time.Hour) // www (3600 s) and nx (600 s) expire; sec (1800 s) too
	dst, _ := newTestCache(t, clk, nil)
	st, err := dst.Load(bytes.NewReader(blob), clk.Now().Add(-30*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	// At now-30min: www fresh, nx and brief expired, sec expired at exactly 30 min.
	if st.Loaded != 1 || st.Expired != 3 {
		t.Errorf("Stats = %+v, want 1 loaded and 3 expired", st)
	}
}

func TestLoadKeepsNewerEntries(t *testing.T) {
	clk := newClock()
	src := warmCache(t, clk, true)
	blob := dump(t, src)
	clk.Advance(10 * time.Second)
	dst, _ := newTestCache(t, clk, nil)
	req := question("www.example.", dns.TypeA, false, false)
	dst.Set(req, reply(t, req, dns.RcodeSuccess, []string{"www.example. 60 IN A 198.51.100.7"}, nil, nil))
	st, err := dst.Load(bytes.NewReader(blob), clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if st.Loaded != 2 || st.Skipped != 1 {
		t.Errorf("Stats = %+v, want 2 loaded and 1 skipped", st)
	}
	if m, _ := mustGet(t, dst, req); m.Answer[0].(*dns.A).A.String() != "198.51.100.7" {
		t.Errorf("dumped entry replaced a newer one: %v", m.Answer[0])
	}
}

// rewriteHeader returns blob with its header changed by edit and a valid
// header checksum.
func rewriteHeader(blob []byte, edit func(h []byte)) []byte {
	out := bytes.Clone(blob)
	edit(out[:24])
	binary.BigEndian.PutUint32(out[24:], crc32.Checksum(out[:24], castagnoli))
	return out
}

func TestLoadRefuses(t *testing.T) {
	clk := newClock()
	gzBlob := dump(t, warmCache(t, clk, true))
	plainBlob := dump(t, warmCache(t, clk, false))
	flip := func(b []byte, at int) []byte {
		out := bytes.Clone(b)
		out[at] ^= 0x40
		return out
	}
	cases := []struct {
		name string
		blob []byte
		now  time.Time
		want error
	}{
		{"empty", nil, clk.Now(), ErrFormat},
		{"foreign format", []byte("PK\x03\x04 this is a zip file, not a cache dump at all"), clk.Now(), ErrFormat},
		{"json", []byte(`{"entries":[]}`), clk.Now(), ErrFormat},
		{"newer version", rewriteHeader(gzBlob, func(h []byte) { binary.BigEndian.PutUint16(h[8:], dumpVersion+1) }), clk.Now(), ErrVersion},
		{"unknown flag", rewriteHeader(gzBlob, func(h []byte) { binary.BigEndian.PutUint16(h[10:], 0x8001) }), clk.Now(), ErrVersion},
		{"version zero", rewriteHeader(gzBlob, func(h []byte) { binary.BigEndian.PutUint16(h[8:], 0) }), clk.Now(), ErrCorrupt},
		{"header bit flip", flip(gzBlob, 12), clk.Now(), ErrCorrupt},
		{"gzip body bit flip", flip(gzBlob, len(gzBlob)/2+dumpHeaderLen/2), clk.Now(), ErrCorrupt},
		{"plain body bit flip", flip(plainBlob, len(plainBlob)-20), clk.Now(), ErrCorrupt},
		{"plain trailer bit flip", flip(plainBlob, len(plainBlob)-1), clk.Now(), ErrCorrupt},
		{"truncated gzip", gzBlob[:len(gzBlob)-10], clk.Now(), ErrCorrupt},
		{"truncated plain", plainBlob[:len(plainBlob)-5], clk.Now(), ErrCorrupt},
		{"header only", gzBlob[:dumpHeaderLen], clk.Now(), ErrCorrupt},
		{"short header", gzBlob[:20], clk.Now(), ErrCorrupt},
		{"garbage appended", append(bytes.Clone(gzBlob[:len(gzBlob)-8]), []byte("garbage!garbage!")...), clk.Now(), ErrCorrupt},
		{"plain garbage appended", append(bytes.Clone(plainBlob), []byte("garbage!")...), clk.Now(), ErrCorrupt},
		{"byte after the gzip stream", append(bytes.Clone(gzBlob), 0), clk.Now(), ErrCorrupt},
		{"second gzip member", append(bytes.Clone(gzBlob), gzipMember(t, []byte("more"))...), clk.Now(), ErrCorrupt},
		{"newer version, other header layout", func() []byte {
			b := bytes.Clone(gzBlob) // the checksum is not ours to check
			binary.BigEndian.PutUint16(b[8:], dumpVersion+1)
			b[12] ^= 0xff
			return b
		}(), clk.Now(), ErrVersion},
		{"record stored after the dump was written", rewriteHeader(plainBlob, func(h []byte) {
			binary.BigEndian.PutUint64(h[16:], uint64(clk.Now().Add(-10*time.Second).UnixNano()))
		}), clk.Now(), ErrCorrupt},
		{"too old", gzBlob, clk.Now().Add(24*time.Hour + time.Second), ErrTooOld},
		{"from the future", gzBlob, clk.Now().Add(-time.Hour), ErrCorrupt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dst, _ := newTestCache(t, clk, nil)
			req := question("keep.example.", dns.TypeA, false, false)
			dst.Set(req, reply(t, req, dns.RcodeSuccess, []string{"keep.example. 600 IN A 192.0.2.9"}, nil, nil))
			before := dst.Bytes()

			st, err := dst.Load(bytes.NewReader(tc.blob), tc.now)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Load = %v, want %v", err, tc.want)
			}
			t.Logf("refused with: %v", err)
			if st != (Stats{}) {
				t.Errorf("Stats = %+v on error", st)
			}
			if dst.Len() != 1 || dst.Bytes() != before {
				t.Errorf("cache changed by a refused load: Len %d Bytes %d (was 1, %d)", dst.Len(), dst.Bytes(), before)
			}
			mustGet(t, dst, req)
		})
	}
	t.Run("max age is configurable", func(t *testing.T) {
		dst, _ := newTestCache(t, clk, func(cfg *Config) { cfg.PersistMaxAge = time.Hour })
		if _, err := dst.Load(bytes.NewReader(gzBlob), clk.Now().Add(61*time.Minute)); !errors.Is(err, ErrTooOld) {
			t.Errorf("Load of a 61-minute-old dump with max age 1h = %v, want ErrTooOld", err)
		}
	})
}

func TestDumpEmpty(t *testing.T) {
	clk := newClock()
	c, _ := newTestCache(t, clk, nil)
	blob := dump(t, c)
	st, err := c.Load(bytes.NewReader(blob), clk.Now())
	if err != nil || st.Loaded != 0 {
		t.Fatalf("Load of an empty dump: %+v, %v", st, err)
	}
}

// failWriter fails after n bytes.
type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		return 0, errors.New("disk full")
	}
	w.n -= len(p)
	return len(p), nil
}

func TestDumpWriteError(t *testing.T) {
	c := warmCache(t, newClock(), false)
	for _, n := range []int{0, dumpHeaderLen} {
		if err := c.Dump(&failWriter{n: n}); err == nil {
			t.Errorf("Dump into a writer failing after %d bytes succeeded", n)
		}
	}
}

func TestLoadBoundsBody(t *testing.T) {
	clk := newClock()
	src, _ := newTestCache(t, clk, func(cfg *Config) { cfg.MaxBytes = 64 << 20; cfg.PersistGzip = false })
	for i := range 3000 {
		name := fmt.Sprintf("n%04d.example.", i)
		req := question(name, dns.TypeTXT, false, false)
		src.Set(req, reply(t, req, dns.RcodeSuccess, []string{fmt.Sprintf(`%s 600 IN TXT "%0400d"`, name, i)}, nil, nil))
	}
	blob := dump(t, src)
	dst, _ := newTestCache(t, clk, func(cfg *Config) { cfg.Shards = 1; cfg.MaxBytes = 64 << 10 })
	_, err := dst.Load(bytes.NewReader(blob), clk.Now())
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("Load of a %d-byte body into a 64 KiB cache = %v, want a size error", len(blob), err)
	}
	if dst.Len() != 0 {
		t.Errorf("Len = %d after a refused load", dst.Len())
	}
}

// gzipMember is data as one gzip member.
func gzipMember(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
