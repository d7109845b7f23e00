package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/kudurru/kudurru/cluster"
	"github.com/kudurru/kudurru/cluster/httpapi/apiv1"
)

// TestBadInputChangesNothing sends malformed and invalid writes: each gets
// a 4xx with a message naming the problem, and nothing is proposed.
func TestBadInputChangesNothing(t *testing.T) {
	tests := []struct {
		name, method, path, body string
		code                     int
		errCode, contains        string
	}{
		{"not json", "POST", "/v1/zones", `{"name":`, 400, apiv1.CodeInvalid, "not valid JSON"},
		{"empty body", "POST", "/v1/zones", ``, 400, apiv1.CodeInvalid, "empty"},
		{"unknown field", "POST", "/v1/zones", `{"name":"a.test","ns":["ns.a.test"],"nameservers":[]}`, 400, apiv1.CodeInvalid, `unknown field "nameservers"`},
		{"unknown soa field", "POST", "/v1/zones", `{"name":"a.test","ns":["ns.a.test"],"soa":{"mbox":"x"}}`, 400, apiv1.CodeInvalid, `unknown field "mbox"`},
		{"soa wrong json type", "POST", "/v1/zones", `{"name":"a.test","ns":["ns.a.test"],"soa":5}`, 400, apiv1.CodeInvalid, "soa"},
		{"trailing data", "POST", "/v1/zones", `{"name":"a.test","ns":["ns.a.test"]} {}`, 400, apiv1.CodeInvalid, "after its JSON object"},
		{"wrong type", "POST", "/v1/zones", `{"name":"a.test","ns":"ns.a.test"}`, 400, apiv1.CodeInvalid, "ns"},
		{"no ns", "POST", "/v1/zones", `{"name":"a.test"}`, 400, apiv1.CodeInvalid, "name server"},
		{"bad zone name", "POST", "/v1/zones", `{"name":"a..test","ns":["ns.a.test"]}`, 400, apiv1.CodeInvalid, "name"},
		{"bad record line", "POST", "/v1/zones", `{"name":"a.test","ns":["ns.a.test"],"records":["www IN A 300.1.1.1"]}`, 400, apiv1.CodeInvalid, "records[0]"},
		{"record outside zone", "POST", "/v1/zones", `{"name":"a.test","ns":["ns.a.test"],"records":["www.b.test. IN A 192.0.2.1"]}`, 400, apiv1.CodeInvalid, "outside zone"},
		{"bad soa text", "POST", "/v1/zones", `{"name":"a.test","ns":["ns.a.test"],"soa":"ns x y"}`, 400, apiv1.CodeInvalid, "soa"},
		{"zone exists", "POST", "/v1/zones", `{"name":"example.com","ns":["ns1.example.com"]}`, 409, apiv1.CodeZoneExists, "already exists"},
		{"patch bad rdata", "PATCH", "/v1/zones/example.com/rrsets", `{"changes":[{"op":"add","name":"www","type":"A","records":["192.0.2"]}]}`, 400, apiv1.CodeInvalid, "changes[0]: records[0]"},
		{"patch bad op", "PATCH", "/v1/zones/example.com/rrsets", `{"changes":[{"op":"upsert","name":"www","type":"A","records":["192.0.2.1"]}]}`, 400, apiv1.CodeInvalid, `unknown op "upsert"`},
		{"patch bad type", "PATCH", "/v1/zones/example.com/rrsets", `{"changes":[{"op":"add","name":"www","type":"AX","records":["192.0.2.1"]}]}`, 400, apiv1.CodeInvalid, "unknown record type"},
		{"patch delete with records", "PATCH", "/v1/zones/example.com/rrsets", `{"changes":[{"op":"delete","name":"www","type":"A","records":["192.0.2.1"]}]}`, 400, apiv1.CodeInvalid, "use remove"},
		{"patch empty", "PATCH", "/v1/zones/example.com/rrsets", `{"changes":[]}`, 400, apiv1.CodeInvalid, "empty"},
		{"patch unknown field", "PATCH", "/v1/zones/example.com/rrsets", `{"changes":[{"op":"add","name":"www","type":"A","data":["x"]}]}`, 400, apiv1.CodeInvalid, `unknown field "data"`},
		{"patch outside zone", "PATCH", "/v1/zones/example.com/rrsets", `{"changes":[{"op":"add","name":"www.example.org.","type":"A","records":["192.0.2.1"]}]}`, 400, apiv1.CodeInvalid, "outside zone"},
		{"patch cname at apex", "PATCH", "/v1/zones/example.com/rrsets", `{"changes":[{"op":"replace","name":"@","type":"CNAME","records":["x.example.org."]}]}`, 400, apiv1.CodeInvalid, "CNAME"},
		{"patch cname conflict", "PATCH", "/v1/zones/example.com/rrsets", `{"changes":[{"op":"add","name":"www","type":"CNAME","records":["x.example.org."]}]}`, 400, apiv1.CodeInvalid, "CNAME"},
		{"patch delete apex NS", "PATCH", "/v1/zones/example.com/rrsets", `{"changes":[{"op":"delete","name":"@","type":"NS"}]}`, 400, apiv1.CodeInvalid, "apex"},
		{"patch second change bad", "PATCH", "/v1/zones/example.com/rrsets", `{"changes":[{"op":"add","name":"ok","type":"A","records":["192.0.2.1"]},{"op":"add","name":"x","type":"MX","records":["ten mx"]}]}`, 400, apiv1.CodeInvalid, "changes[1]"},
		{"patch two records in one", "PATCH", "/v1/zones/example.com/rrsets", `{"changes":[{"op":"add","name":"x","type":"A","records":["192.0.2.1\nx IN A 192.0.2.2"]}]}`, 400, apiv1.CodeInvalid, "line break"},
		{"patch empty soa data", "PATCH", "/v1/zones/example.com/rrsets", `{"changes":[{"op":"replace","name":"@","type":"SOA","records":[""]}]}`, 400, apiv1.CodeInvalid, "incomplete or malformed"},
		{"patch unknown zone", "PATCH", "/v1/zones/nope.test/rrsets", `{"changes":[{"op":"add","name":"www","type":"A","records":["192.0.2.1"]}]}`, 404, apiv1.CodeZoneNotFound, "nope.test"},
		{"import syntax error names the line", "PUT", "/v1/zones/example.com/import", "@ IN SOA ns1 h 1 2 3 4 5\n@ IN NS ns1\nwww IN A 192.0.2.300\n", 400, apiv1.CodeInvalid, "line: 3"},
		{"import include refused", "PUT", "/v1/zones/example.com/import", "$INCLUDE /etc/passwd\n", 400, apiv1.CodeInvalid, "INCLUDE"},
		{"import without soa", "PUT", "/v1/zones/example.com/import", "@ 300 IN NS ns1\n", 400, apiv1.CodeInvalid, "SOA"},
		{"import outside zone", "PUT", "/v1/zones/example.com/import", "@ IN SOA ns1 h 1 2 3 4 5\n@ IN NS ns1\nwww.example.org. IN A 192.0.2.1\n", 400, apiv1.CodeInvalid, "record 3"},
		{"import empty", "PUT", "/v1/zones/example.com/import", "; nothing\n", 400, apiv1.CodeInvalid, "no records"},
		{"delete unknown zone", "DELETE", "/v1/zones/nope.test", "", 404, apiv1.CodeZoneNotFound, "not found"},
		{"too large", "PUT", "/v1/zones/example.com/import", strings.Repeat("; padding\n", 200), 413, apiv1.CodeBodyTooLarge, "1024 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newFake(t, "n1", true)
			h := start(t, b, func(c *Config) { c.MaxBodyBytes = 1024 })
			if code, _, body := h.do("POST", "/v1/zones", `{"name":"example.com","ns":["ns1.example.com"],"records":["www IN A 192.0.2.1"]}`); code != 201 {
				t.Fatal(body)
			}
			before := len(b.Proposed())
			code, _, body := h.do(tc.method, tc.path, tc.body)
			t.Log(code, body)
			e := decode[apiv1.ErrorBody](t, body)
			if code != tc.code || e.Error.Code != tc.errCode || !strings.Contains(e.Error.Message, tc.contains) {
				t.Fatalf("got %d %s; want %d %s containing %q", code, body, tc.code, tc.errCode, tc.contains)
			}
			if n := len(b.Proposed()); n != before {
				t.Fatalf("bad input was proposed: %+v", b.Proposed()[before:])
			}
		})
	}
}

// TestErrorMapping checks what each failure of the write path is told as.
func TestErrorMapping(t *testing.T) {
	tests := []struct {
		err      error
		code     int
		errCode  string
		contains string
	}{
		{cluster.ErrNoQuorum, 503, apiv1.CodeNoQuorum, "No quorum"},
		{fmt.Errorf("apply: %w", cluster.ErrUnknownOutcome), 504, apiv1.CodeOutcomeUnknown, "may or may not have been applied"},
		{context.DeadlineExceeded, 504, apiv1.CodeOutcomeUnknown, "may or may not"},
		{cluster.ErrNotLeader, 503, apiv1.CodeNotLeader, "Leadership moved"},
		{cluster.ErrShutdown, 503, apiv1.CodeShuttingDown, "shutting down"},
		{errors.New("disk on fire"), 500, apiv1.CodeInternal, "disk on fire"},
	}
	for _, tc := range tests {
		t.Run(tc.errCode, func(t *testing.T) {
			b := newFake(t, "n1", true)
			b.SetProposeErr(tc.err)
			h := start(t, b, nil)
			code, _, body := h.do("POST", "/v1/zones", `{"name":"a.test","ns":["ns.a.test"]}`)
			e := decode[apiv1.ErrorBody](t, body)
			if code != tc.code || e.Error.Code != tc.errCode || !strings.Contains(e.Error.Message, tc.contains) {
				t.Fatalf("got %d %s; want %d %s containing %q", code, body, tc.code, tc.errCode, tc.contains)
			}
		})
	}
}

func TestAuth(t *testing.T) {
	h := start(t, newFake(t, "n1", true), func(c *Config) { c.Token = "s3cret" })
	tests := []struct {
		name, path, auth string
		code             int
	}{
		{"no token", "/v1/zones", "", 401},
		{"wrong token", "/v1/zones", "Authorization: Bearer s3cre", 401},
		{"wrong scheme", "/v1/zones", "Authorization: Basic s3cret", 401},
		{"right token", "/v1/zones", "Authorization: Bearer s3cret", 200},
		{"scheme case", "/v1/zones", "Authorization: bearer s3cret", 200},
		{"unknown path needs auth too", "/v1/nothing", "", 401},
		{"health is public", "/health", "", 200},
		{"ready is public", "/ready", "", 200},
		{"metrics public by default", "/metrics", "", 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var hdrs []string
			if tc.auth != "" {
				hdrs = append(hdrs, tc.auth)
			}
			code, hdr, body := h.do("GET", tc.path, "", hdrs...)
			if code != tc.code {
				t.Fatalf("%d %s, want %d", code, body, tc.code)
			}
			if code == 401 && (hdr.Get("WWW-Authenticate") == "" || decode[apiv1.ErrorBody](t, body).Error.Code != apiv1.CodeUnauthorized) {
				t.Fatalf("401 without WWW-Authenticate or code: %v %s", hdr, body)
			}
		})
	}
	t.Run("metrics auth", func(t *testing.T) {
		h := start(t, newFake(t, "n1", true), func(c *Config) { c.Token, c.MetricsAuth = "s3cret", true })
		if code, _, _ := h.do("GET", "/metrics", ""); code != http.StatusUnauthorized {
			t.Fatalf("metrics without token: %d", code)
		}
	})
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Config)
		want string // "" for valid
	}{
		{"default", func(*Config) {}, ""},
		{"loopback v6", func(c *Config) { c.Addr = "[::1]:8053" }, ""},
		{"localhost", func(c *Config) { c.Addr = "localhost:8053" }, ""},
		{"public without token", func(c *Config) { c.Addr = "192.0.2.1:8053" }, "api.token is empty"},
		{"all interfaces without token", func(c *Config) { c.Addr = ":8053" }, "api.token is empty"},
		{"public with token", func(c *Config) { c.Addr, c.Token = "0.0.0.0:8053", "t" }, ""},
		{"bad addr", func(c *Config) { c.Addr = "8053" }, "api.addr"},
		{"zero body", func(c *Config) { c.MaxBodyBytes = 0 }, "api.max_body_bytes"},
		{"zero wait", func(c *Config) { c.LeaderWait = 0 }, "api.leader_wait"},
		{"forward below propose", func(c *Config) { c.ForwardTimeout = c.ProposeTimeout }, "must exceed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.mod(&c)
			err := c.Validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestLifecycle(t *testing.T) {
	s, err := New(testConfig(), newFake(t, "n1", true))
	if err != nil {
		t.Fatal(err)
	}
	if s.Addr() != nil || s.URL() != "" {
		t.Fatal("address before Start")
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err == nil {
		t.Fatal("second Start succeeded")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := s.Start(); err == nil {
		t.Fatal("Start after Close succeeded")
	}
	if _, err := New(testConfig(), nil); err == nil {
		t.Fatal("New with a nil backend succeeded")
	}
}

// panicky is a backend whose Status panics.
type panicky struct{ *fakeBackend }

func (panicky) Status() cluster.Status { panic("status exploded") }

func TestHandlerPanicAnswers500(t *testing.T) {
	s, err := New(testConfig(), panicky{newFake(t, "n1", true)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := &harness{t: t, s: s, url: s.URL(), tr: &http.Transport{}}
	defer h.tr.CloseIdleConnections()
	code, _, body := h.do("GET", "/v1/cluster", "")
	if code != 500 || errCode(t, body) != apiv1.CodeInternal {
		t.Fatalf("%d %s", code, body)
	}
	if code, _, _ := h.do("GET", "/health", ""); code != 200 {
		t.Fatalf("server unusable after a panic: %d", code)
	}
}

// TestPrecheckSkippedOnStaleView: a leader whose View lags the commit index
// does not refuse on its own stale data; Apply decides.
func TestPrecheckSkippedOnStaleView(t *testing.T) {
	b := newFake(t, "n1", true)
	h := start(t, b, nil)
	patch := `{"changes":[{"op":"add","name":"www","type":"A","records":["192.0.2.1"]}]}`
	if code, _, body := h.do("PATCH", "/v1/zones/late.test/rrsets", patch); code != 404 || len(b.Proposed()) != 0 {
		t.Fatalf("current View: %d %s, %d proposals", code, body, len(b.Proposed()))
	}
	b.SetCommitLag(3)
	code, _, body := h.do("PATCH", "/v1/zones/late.test/rrsets", patch)
	if code != 404 || errCode(t, body) != apiv1.CodeZoneNotFound || len(b.Proposed()) != 1 {
		t.Fatalf("stale View: %d %s, %d proposals", code, body, len(b.Proposed()))
	}
	// A leader not yet established in its term: its commit index may
	// agree with its applied index while both lag what the previous
	// leader acknowledged, so the precheck is skipped too.
	b.SetCommitLag(0)
	b.SetUnestablished(true)
	code, _, body = h.do("PATCH", "/v1/zones/late.test/rrsets", patch)
	if code != 404 || errCode(t, body) != apiv1.CodeZoneNotFound || len(b.Proposed()) != 2 {
		t.Fatalf("unestablished leader: %d %s, %d proposals", code, body, len(b.Proposed()))
	}
}
