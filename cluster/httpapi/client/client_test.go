package client

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kudurru/kudurru/cluster/httpapi/apiv1"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestClient(t *testing.T) {
	var got *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		switch r.URL.Path {
		case "/v1/zones":
			io.WriteString(w, `{"zones":[{"name":"a.test.","serial":3,"records":4}]}`)
		case "/v1/zones/missing.test":
			w.WriteHeader(404)
			io.WriteString(w, `{"error":{"code":"zone_not_found","message":"zone missing.test.: zone not found"}}`)
		default:
			w.WriteHeader(502)
			io.WriteString(w, "<html>bad gateway</html>")
		}
	}))
	defer srv.Close()
	c, err := New(srv.URL+"/", "tok", srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	list, err := c.Leader().ListZones(ctx)
	if err != nil || len(list.Zones) != 1 || list.Zones[0].Serial != 3 {
		t.Fatalf("ListZones = %+v, %v", list, err)
	}
	if got.Header.Get("Authorization") != "Bearer tok" || got.URL.Query().Get("consistency") != "leader" {
		t.Fatalf("request %v %v", got.Header, got.URL)
	}
	if _, err := c.ListZones(ctx); err != nil || got.URL.RawQuery != "" {
		t.Fatalf("a plain client asked for %q (%v)", got.URL.RawQuery, err)
	}

	_, err = c.GetZone(ctx, "missing.test")
	if !IsCode(err, apiv1.CodeZoneNotFound) || err.Error() != "zone missing.test.: zone not found" {
		t.Fatalf("API error = %v", err)
	}
	err = c.Health(ctx)
	if e, ok := err.(*Error); !ok || e.Status != 502 || e.Code != "" || !strings.Contains(e.Message, "bad gateway") {
		t.Fatalf("non-API error = %#v", err)
	}
	for _, bad := range []string{"127.0.0.1:8053", "ftp://x", "http://"} {
		if _, err := New(bad, "", nil); err == nil {
			t.Errorf("New(%q) succeeded", bad)
		}
	}
}
