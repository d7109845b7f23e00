package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/kudurru/kudurru/cluster/httpapi/apiv1"
	"github.com/kudurru/kudurru/fsm"
	"github.com/miekg/dns"
)

const createBody = `{"name":"Example.com","ns":["ns1.example.com.","ns2.example.net"],"ttl":600,
	"records":["www 300 IN A 192.0.2.1","www 300 IN A 192.0.2.2","ns1 IN A 192.0.2.53","alias IN CNAME www"]}`

func decode[T any](t *testing.T, body string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("decode %q: %v", body, err)
	}
	return v
}

func TestZoneLifecycle(t *testing.T) {
	h := start(t, newFake(t, "n1", true), nil)

	code, hdr, body := h.do("POST", "/v1/zones", createBody)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	wr := decode[apiv1.WriteResult](t, body)
	if wr.Serial != 1 || wr.Index == 0 || hdr.Get(apiv1.HeaderServedBy) != "n1" {
		t.Fatalf("create result %+v, served by %q", wr, hdr.Get(apiv1.HeaderServedBy))
	}

	code, _, body = h.do("GET", "/v1/zones", "")
	list := decode[apiv1.ZoneList](t, body)
	if code != 200 || len(list.Zones) != 1 || list.Zones[0] != (apiv1.ZoneSummary{Name: "example.com.", Serial: 1, Records: 7}) {
		t.Fatalf("list: %d %s", code, body)
	}

	code, _, body = h.do("GET", "/v1/zones/example.com", "")
	z := decode[apiv1.Zone](t, body)
	if code != 200 || z.Name != "example.com." || len(z.RRsets) != 5 {
		t.Fatalf("get: %d %s", code, body)
	}
	soa := z.RRsets[1]
	if soa.Type != "SOA" || soa.TTL != 600 || soa.Records[0] != "ns1.example.com. hostmaster.example.com. 1 3600 600 1209600 300" {
		t.Fatalf("generated SOA: %+v", soa)
	}

	patch := `{"changes":[
		{"op":"replace","name":"www","type":"A","ttl":120,"records":["192.0.2.9"]},
		{"op":"add","name":"mail.example.com","type":"MX","records":["10 mx.example.net."]},
		{"op":"add","name":"@","type":"TXT","records":["\"v=spf1 -all\""]},
		{"op":"delete_name","name":"alias"}]}`
	code, _, body = h.do("PATCH", "/v1/zones/example.com./rrsets", patch)
	if code != 200 || decode[apiv1.WriteResult](t, body).Serial != 2 {
		t.Fatalf("patch: %d %s", code, body)
	}

	code, hdr, body = h.do("GET", "/v1/zones/example.com/rrsets?name=www&type=a", "")
	rl := decode[apiv1.RRsetList](t, body)
	if code != 200 || len(rl.RRsets) != 1 || rl.RRsets[0].TTL != 120 || strings.Join(rl.RRsets[0].Records, ",") != "192.0.2.9" || hdr.Get(apiv1.HeaderIndex) == "" {
		t.Fatalf("rrsets: %d %s", code, body)
	}
	code, _, body = h.do("GET", "/v1/zones/example.com/rrsets?name=alias", "")
	if code != 200 || len(decode[apiv1.RRsetList](t, body).RRsets) != 0 {
		t.Fatalf("deleted name still listed: %d %s", code, body)
	}
	code, _, body = h.do("GET", "/v1/zones/example.com/rrsets?type=MX", "")
	if rl := decode[apiv1.RRsetList](t, body); code != 200 || len(rl.RRsets) != 1 || rl.RRsets[0].Name != "mail.example.com." || rl.RRsets[0].TTL != defaultTTL {
		t.Fatalf("rrsets by type: %d %s", code, body)
	}

	// add without a TTL keeps the set's TTL.
	code, _, body = h.do("PATCH", "/v1/zones/example.com/rrsets", `{"changes":[{"op":"add","name":"www","type":"A","records":["192.0.2.10"]}]}`)
	if code != 200 {
		t.Fatalf("add: %d %s", code, body)
	}
	_, _, body = h.do("GET", "/v1/zones/example.com/rrsets?name=www&type=A", "")
	if rl := decode[apiv1.RRsetList](t, body); rl.RRsets[0].TTL != 120 || len(rl.RRsets[0].Records) != 2 {
		t.Fatalf("add changed the TTL or lost a record: %s", body)
	}

	code, hdr, export := h.do("GET", "/v1/zones/example.com/export", "")
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/dns") || !strings.Contains(export, "$ORIGIN example.com.\n") {
		t.Fatalf("export: %d %s", code, export)
	}
	// The export parses back and re-imports to the same records.
	code, _, body = h.do("PUT", "/v1/zones/example.com/import", export)
	if code != 200 || decode[apiv1.WriteResult](t, body).Serial != 4 {
		t.Fatalf("re-import: %d %s", code, body)
	}
	_, _, export2 := h.do("GET", "/v1/zones/example.com/export", "")
	if strip(export) != strings.Replace(strip(export2), " 4 3600", " 3 3600", 1) {
		t.Fatalf("export after re-import differs:\n%s\n---\n%s", export, export2)
	}

	code, _, body = h.do("DELETE", "/v1/zones/example.com", "")
	if code != 200 {
		t.Fatalf("delete: %d %s", code, body)
	}
	code, _, body = h.do("GET", "/v1/zones/example.com", "")
	if code != 404 || decode[apiv1.ErrorBody](t, body).Error.Code != apiv1.CodeZoneNotFound {
		t.Fatalf("get deleted: %d %s", code, body)
	}
}

// strip drops the comment line of an export.
func strip(s string) string {
	_, rest, _ := strings.Cut(s, "\n")
	return rest
}

func TestCreateSOAForms(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string // SOA rdata
	}{
		{"text rdata", `{"name":"a.test","ns":["ns.a.test"],"soa":"ns.a.test. admin.a.test. 7 1 2 3 4"}`, "ns.a.test. admin.a.test. 7 1 2 3 4"},
		{"text line", `{"name":"a.test","ns":["ns.a.test"],"soa":"@ 60 IN SOA ns admin 8 1 2 3 4"}`, "ns.a.test. admin.a.test. 8 1 2 3 4"},
		{"fields", `{"name":"a.test","ns":["ns.a.test"],"soa":{"rname":"dns.admin@a.test","serial":2024010101,"minimum":60}}`, `ns.a.test. dns\.admin.a.test. 2024010101 3600 600 1209600 60`},
		{"soa in records", `{"name":"a.test","records":["@ SOA ns x 9 1 2 3 4","@ NS ns"]}`, "ns.a.test. x.a.test. 9 1 2 3 4"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newFake(t, "n1", true)
			h := start(t, b, nil)
			if code, _, body := h.do("POST", "/v1/zones", tc.body); code != 201 {
				t.Fatalf("create: %d %s", code, body)
			}
			soa := b.Current().Zone("a.test.").SOA()
			if got := rdataText(soa); got != tc.want {
				t.Fatalf("SOA %q, want %q", got, tc.want)
			}
		})
	}
}

func TestReadsAndMisc(t *testing.T) {
	b := newFake(t, "n1", true)
	h := start(t, b, nil)
	if code, _, body := h.do("POST", "/v1/zones", createBody); code != 201 {
		t.Fatal(body)
	}
	tests := []struct {
		name, method, path string
		code               int
		contains           string
	}{
		{"health", "GET", "/health", 200, `"status":"ok"`},
		{"ready", "GET", "/ready", 200, `"status":"ready"`},
		{"cluster", "GET", "/v1/cluster", 200, `"cluster_id":"c-test"`},
		{"zone head", "HEAD", "/v1/zones/example.com", 200, ""},
		{"unknown zone", "GET", "/v1/zones/nope.test", 404, `"code":"zone_not_found"`},
		{"bad zone name", "GET", "/v1/zones/a..b", 400, `"code":"invalid"`},
		{"bad type filter", "GET", "/v1/zones/example.com/rrsets?type=BOGUS", 400, `unknown record type`},
		{"bad consistency", "GET", "/v1/zones?consistency=strong", 400, `consistency \"strong\"`},
		{"leader consistency on leader", "GET", "/v1/zones?consistency=leader", 200, `"example.com."`},
		{"no such endpoint", "GET", "/v2/zones", 404, `"code":"not_found"`},
		{"method not allowed", "PUT", "/v1/zones", 405, `"code":"method_not_allowed"`},
		{"metrics", "GET", "/metrics", 200, "kudurru_http_requests_total"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, hdr, body := h.do(tc.method, tc.path, "")
			if code != tc.code || !strings.Contains(body, tc.contains) {
				t.Fatalf("%s %s: %d %s; want %d containing %s", tc.method, tc.path, code, body, tc.code, tc.contains)
			}
			if code == 405 && hdr.Get("Allow") != "GET, POST, HEAD" {
				t.Fatalf("Allow %q", hdr.Get("Allow"))
			}
		})
	}

	b.SetReady(false, "catching up with the leader")
	code, _, body := h.do("GET", "/ready", "")
	if e := decode[apiv1.ErrorBody](t, body); code != 503 || e.Error.Code != apiv1.CodeNotReady || !strings.Contains(e.Error.Message, "catching up") {
		t.Fatalf("not ready: %d %s", code, body)
	}
}

func TestMembership(t *testing.T) {
	b := newFake(t, "n1", true)
	h := start(t, b, nil)
	tests := []struct {
		name, method, path, body string
		code                     int
		contains                 string
	}{
		{"join", "POST", "/v1/cluster/join", `{"node_id":"n2","raft_addr":"127.0.0.1:8054","api_addr":"http://127.0.0.1:8055"}`, 200, `"leader_id":"n1"`},
		{"join other cluster", "POST", "/v1/cluster/join", `{"node_id":"n3","raft_addr":"127.0.0.1:8054","api_addr":"http://127.0.0.1:8055","cluster_id":"other"}`, 409, `"code":"other_cluster"`},
		{"join without id", "POST", "/v1/cluster/join", `{"raft_addr":"127.0.0.1:8054"}`, 400, "node_id"},
		{"join bad raft addr", "POST", "/v1/cluster/join", `{"node_id":"n3","raft_addr":"nowhere"}`, 400, "raft_addr"},
		{"join without api addr", "POST", "/v1/cluster/join", `{"node_id":"n3","raft_addr":"h:1"}`, 400, "api_addr"},
		{"join bad api addr", "POST", "/v1/cluster/join", `{"node_id":"n3","raft_addr":"h:1","api_addr":"h:2"}`, 400, "api_addr"},
		{"remove", "DELETE", "/v1/cluster/members/n2", "", 200, `"removed":"n2"`},
		{"remove unknown", "DELETE", "/v1/cluster/members/n2", "", 404, `"code":"member_not_found"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := h.do(tc.method, tc.path, tc.body)
			if code != tc.code || !strings.Contains(body, tc.contains) {
				t.Fatalf("%d %s; want %d containing %s", code, body, tc.code, tc.contains)
			}
		})
	}
}

func TestImportCreatesZone(t *testing.T) {
	b := newFake(t, "n1", true)
	h := start(t, b, nil)
	file := "$TTL 300\n@ IN SOA ns1 hostmaster 2024 3600 600 86400 300\n  IN NS ns1\nns1 IN A 192.0.2.53\n$GENERATE 1-3 h$ A 192.0.2.$\n"
	code, _, body := h.do("PUT", "/v1/zones/import.test/import", file, "Content-Type: text/dns")
	if code != 200 || decode[apiv1.WriteResult](t, body).Serial != 2024 {
		t.Fatalf("import: %d %s", code, body)
	}
	cmds := b.Proposed()
	if len(cmds) != 1 || cmds[0].Op != fsm.OpImportZone || len(cmds[0].Records) != 6 {
		t.Fatalf("proposed %+v", cmds)
	}
	if z := b.Current().Zone("import.test."); z == nil || z.Get("ns1.import.test.").RRset(dns.TypeA) == nil || z.Get("h3.import.test.") == nil {
		t.Fatal("imported zone not in the View")
	}
}

// TestPatchCheck shows the compare-and-set: a batch whose check holds
// applies; a stale check is refused with 409 precondition_failed and changes
// nothing.
func TestPatchCheck(t *testing.T) {
	h := start(t, newFake(t, "n1", true), nil)
	if code, _, body := h.do("POST", "/v1/zones", createBody); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	code, _, body := h.do("PATCH", "/v1/zones/example.com/rrsets", `{"changes":[
		{"op":"check","name":"k","type":"TXT"},
		{"op":"replace","name":"k","type":"TXT","records":["\"v1\""]}]}`)
	if code != 200 {
		t.Fatalf("check of an absent set: %d %s", code, body)
	}
	casV1toV2 := `{"changes":[
		{"op":"check","name":"k","type":"TXT","records":["\"v1\""]},
		{"op":"replace","name":"k","type":"TXT","records":["\"v2\""]}]}`
	if code, _, body = h.do("PATCH", "/v1/zones/example.com/rrsets", casV1toV2); code != 200 {
		t.Fatalf("matching check: %d %s", code, body)
	}
	code, _, body = h.do("PATCH", "/v1/zones/example.com/rrsets", casV1toV2)
	if code != 409 || !strings.Contains(body, `"code":"precondition_failed"`) {
		t.Fatalf("stale check: %d %s", code, body)
	}
	if code, _, body = h.do("PATCH", "/v1/zones/example.com/rrsets", `{"changes":[{"op":"check","name":"k","type":"TXT","ttl":5}]}`); code != 400 {
		t.Fatalf("check with a ttl: %d %s", code, body)
	}
}
