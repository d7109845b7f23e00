package httpapi

import (
	"net/http"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kudurru/kudurru/cluster/httpapi/apiv1"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// handler serves one method of one route. An error it returns before
// writing anything is answered as JSON (see errorFor); one returned after
// the response started is logged.
type handler func(w http.ResponseWriter, r *http.Request) error

// route is one path pattern of the API with a handler per method.
type route struct {
	pattern string             // http.ServeMux pattern without method, the metrics label
	public  bool               // served without a token
	methods map[string]handler // by HTTP method
}

// routes builds the API's handler. The route table is the one place that
// lists every endpoint.
func (s *Server) routes() http.Handler {
	table := []route{
		{pattern: "/v1/zones", methods: map[string]handler{
			http.MethodGet:  s.readable(s.listZones),
			http.MethodPost: s.createZone,
		}},
		{pattern: "/v1/zones/{zone}", methods: map[string]handler{
			http.MethodGet:    s.readable(s.getZone),
			http.MethodDelete: s.deleteZone,
		}},
		{pattern: "/v1/zones/{zone}/rrsets", methods: map[string]handler{
			http.MethodGet:   s.readable(s.getRRsets),
			http.MethodPatch: s.patchRRsets,
		}},
		{pattern: "/v1/zones/{zone}/import", methods: map[string]handler{
			http.MethodPut: s.importZone,
		}},
		{pattern: "/v1/zones/{zone}/export", methods: map[string]handler{
			http.MethodGet: s.readable(s.exportZone),
		}},
		{pattern: "/v1/cluster", methods: map[string]handler{
			http.MethodGet: s.readable(s.clusterStatus),
		}},
		{pattern: "/v1/cluster/join", methods: map[string]handler{
			http.MethodPost: s.join,
		}},
		{pattern: "/v1/cluster/members/{id}", methods: map[string]handler{
			http.MethodDelete: s.removeMember,
		}},
		{pattern: "/health", public: true, methods: map[string]handler{
			http.MethodGet: s.health,
		}},
		{pattern: "/ready", public: true, methods: map[string]handler{
			http.MethodGet: s.ready,
		}},
		{pattern: "/", methods: map[string]handler{}}, // everything else: 404
	}
	if s.cfg.Registry != nil {
		prom := promhttp.HandlerFor(s.cfg.Registry, promhttp.HandlerOpts{})
		table = append(table, route{pattern: "/metrics", public: !s.cfg.MetricsAuth, methods: map[string]handler{
			http.MethodGet: func(w http.ResponseWriter, r *http.Request) error { prom.ServeHTTP(w, r); return nil },
		}})
	}
	mux := http.NewServeMux()
	for _, rt := range table {
		mux.Handle(rt.pattern, s.serveRoute(rt))
	}
	return mux
}

// serveRoute wraps a route with metrics, auth and method dispatch.
func (s *Server) serveRoute(rt route) http.Handler {
	allow := make([]string, 0, len(rt.methods))
	for m := range rt.methods {
		allow = append(allow, m)
	}
	slices.Sort(allow)
	if slices.Contains(allow, http.MethodGet) {
		allow = append(allow, http.MethodHead)
	}
	allowed := strings.Join(allow, ", ")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rw := &statusWriter{ResponseWriter: w}
		rw.Header().Set(apiv1.HeaderServedBy, s.b.NodeID())
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.Error("api handler panicked", "method", r.Method, "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
				if rw.status == 0 {
					writeError(rw, newError(http.StatusInternalServerError, apiv1.CodeInternal, "Internal error: the server failed while handling this request; it was logged."))
				}
				s.m.observe(r.Method, rt.pattern, http.StatusInternalServerError, time.Since(start))
			}
		}()
		err := s.dispatch(rw, r, rt, allowed)
		if err != nil {
			ae := errorFor(err)
			if rw.status == 0 {
				if ae.status == http.StatusMethodNotAllowed {
					rw.Header().Set("Allow", allowed)
				}
				writeError(rw, ae)
			}
			lvl := s.log.Debug
			if ae.status >= 500 {
				lvl = s.log.Warn
			}
			lvl("api request failed", "method", r.Method, "path", r.URL.Path, "status", ae.status, "code", ae.code, "err", err)
		}
		status := rw.status
		if status == 0 {
			status = http.StatusOK
		}
		s.m.observe(r.Method, rt.pattern, status, time.Since(start))
	})
}

func (s *Server) dispatch(w http.ResponseWriter, r *http.Request, rt route, allowed string) error {
	if !rt.public {
		if err := s.authorize(r); err != nil {
			return err
		}
	}
	if rt.pattern == "/" {
		return newError(http.StatusNotFound, apiv1.CodeNotFound, "There is no endpoint %s; see docs/API.md.", r.URL.Path)
	}
	h := rt.methods[r.Method]
	if h == nil && r.Method == http.MethodHead {
		h = rt.methods[http.MethodGet]
	}
	if h == nil {
		return newError(http.StatusMethodNotAllowed, apiv1.CodeMethodNotAllowed,
			"Method %s is not allowed on %s; allowed: %s.", r.Method, rt.pattern, allowed)
	}
	return h(w, r)
}

// statusWriter records the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// codeLabel is the metrics label of a status code.
func codeLabel(status int) string { return strconv.Itoa(status) }
