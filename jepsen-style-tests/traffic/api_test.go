package traffic

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/kudurru/kudurru/jepsen-style-tests/model"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestPatchOutcomes(t *testing.T) {
	cases := []struct {
		name    string
		status  int
		body    string
		want    model.Outcome
		code    string
		index   uint64
		timeout bool
	}{
		{"committed", 200, `{"index":42,"serial":7}`, model.OK, "", 42, false},
		{"no quorum is definite", 503, `{"error":{"code":"no_quorum","message":"x"}}`, model.Fail, "no_quorum", 0, false},
		{"precondition", 409, `{"error":{"code":"precondition_failed","message":"x"}}`, model.Fail, model.CodePrecondition, 0, false},
		{"outcome unknown", 504, `{"error":{"code":"outcome_unknown","message":"x"}}`, model.Unknown, "outcome_unknown", 0, false},
		{"internal error may have applied", 500, `{"error":{"code":"internal","message":"x"}}`, model.Unknown, "internal", 0, false},
		{"invalid", 400, `{"error":{"code":"invalid","message":"x"}}`, model.Fail, "invalid", 0, false},
		{"no answer in time", 200, `{}`, model.Unknown, "timeout", 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Authorization") != "Bearer tok" || r.Method != http.MethodPatch {
					w.WriteHeader(http.StatusUnauthorized)
					return
				}
				if tc.timeout {
					<-release
				}
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			defer close(release)
			c := NewClient("tok", 200*time.Millisecond)
			defer c.Close()
			res := c.Patch(context.Background(), srv.URL, "jepsen.test.", []Change{{Op: "replace", Name: "k", Type: "TXT", Records: []string{`"v"`}}})
			if res.Outcome != tc.want || res.Code != tc.code || res.Index != tc.index {
				t.Fatalf("got %+v, want %s %s", res, tc.want, tc.code)
			}
		})
	}
}

func TestPatchNeverSentIsDefinite(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now: the dial is refused
	c := NewClient("tok", time.Second)
	defer c.Close()
	res := c.Patch(context.Background(), "http://"+addr, "jepsen.test.", nil)
	if res.Outcome != model.Fail || res.Code != "dial" {
		t.Fatalf("refused connection: %+v", res)
	}
}
