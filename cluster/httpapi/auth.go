package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/kudurru/kudurru/cluster/httpapi/apiv1"
)

// authorize checks the request's bearer token. The comparison is of SHA-256
// digests in constant time, so neither the token's bytes nor its length
// leak through timing.
func (s *Server) authorize(r *http.Request) error {
	if s.cfg.Token == "" {
		return nil
	}
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if h == "" || !ok || !strings.EqualFold(scheme, "Bearer") {
		return newError(http.StatusUnauthorized, apiv1.CodeUnauthorized,
			"This API needs a bearer token: send the header \"Authorization: Bearer TOKEN\" (the CLI reads --token or KUDURRU_TOKEN).")
	}
	want := sha256.Sum256([]byte(s.cfg.Token))
	got := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	if subtle.ConstantTimeCompare(want[:], got[:]) != 1 {
		return newError(http.StatusUnauthorized, apiv1.CodeUnauthorized, "The bearer token is wrong.")
	}
	return nil
}
