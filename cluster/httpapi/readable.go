package httpapi

import (
	"net/http"
)

// readable lets a read choose where it is served: ?consistency=local (the
// default) answers from this node's View, possibly stale; consistency=leader
// answers from the leader's, forwarding the request there.
func (s *Server) readable(h handler) handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		switch c := r.URL.Query().Get("consistency"); c {
		case "", "local":
			return h(w, r)
		case "leader":
			return s.onLeader(w, r, nil, false, h)
		default:
			return invalid("consistency %q: use local (the default) or leader.", c)
		}
	}
}
