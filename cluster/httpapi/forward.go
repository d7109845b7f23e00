package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kudurru/kudurru/cluster/httpapi/apiv1"
)

// maxForwardReply bounds the buffered reply to a forwarded write. Write
// replies are small JSON bodies.
const maxForwardReply = 1 << 20

// relayedHeaders are the reply headers a forwarder passes back to its client.
var relayedHeaders = []string{
	"Content-Type", "Content-Disposition", "Allow", "WWW-Authenticate",
	apiv1.HeaderServedBy, apiv1.HeaderIndex,
}

// forwarder sends requests to the leader's API with its own HTTP client.
type forwarder struct {
	transport *http.Transport
	client    *http.Client
	nodeID    string
	token     string
	timeout   time.Duration
	m         *metrics
}

func newForwarder(cfg Config, nodeID string, m *metrics) *forwarder {
	t := &http.Transport{
		Proxy:                 nil, // a cluster's own addresses never go through a proxy
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: cfg.ForwardTimeout,
		ForceAttemptHTTP2:     false,
	}
	return &forwarder{
		transport: t,
		client:    &http.Client{Transport: t, CheckRedirect: noRedirects},
		nodeID:    nodeID,
		token:     cfg.Token,
		timeout:   cfg.ForwardTimeout,
		m:         m,
	}
}

func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// close drops idle connections to the leader.
func (f *forwarder) close() { f.transport.CloseIdleConnections() }

// reply is a leader's buffered answer to a forwarded write.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// errUnsent marks a forward that failed before the request was written in
// full: the leader cannot have acted on it.
type errUnsent struct{ err error }

func (e *errUnsent) Error() string { return e.err.Error() }
func (e *errUnsent) Unwrap() error { return e.err }

// send sends r (with body) to the API at base. A failure before the request
// was written in full is an *errUnsent; any other failure happened after
// the leader may have received it. The caller closes the response body.
func (f *forwarder) send(ctx context.Context, r *http.Request, base string, body []byte) (*http.Response, error) {
	u, err := url.Parse(strings.TrimRight(base, "/") + r.URL.EscapedPath())
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &errUnsent{fmt.Errorf("leader API address %q is not an http(s) URL", base)}
	}
	u.RawQuery = r.URL.RawQuery
	var wrote atomic.Bool
	trace := &httptrace.ClientTrace{WroteRequest: func(i httptrace.WroteRequestInfo) {
		if i.Err == nil {
			wrote.Store(true)
		}
	}}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, &errUnsent{err}
	}
	for _, h := range []string{"Content-Type", "Accept"} {
		if v := r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	if f.token != "" {
		req.Header.Set("Authorization", "Bearer "+f.token)
	}
	req.Header.Set(apiv1.HeaderForwardedBy, f.nodeID)
	resp, err := f.client.Do(req)
	if err != nil {
		if !wrote.Load() {
			f.m.forwarded(fwdUnreachable)
			return nil, &errUnsent{err}
		}
		f.m.forwarded(fwdUnknown)
		return nil, err
	}
	f.m.forwarded(fwdOK)
	return resp, nil
}

// write forwards a write and buffers the leader's reply. An error is either
// an *errUnsent (definite failure) or a failure after sending (unknown
// outcome).
func (f *forwarder) write(ctx context.Context, r *http.Request, base string, body []byte) (*reply, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	resp, err := f.send(ctx, r, base, body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxForwardReply))
	if err != nil {
		return nil, fmt.Errorf("read leader reply: %w", err)
	}
	return &reply{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// relayHeaders copies the relayed headers of a leader's reply to w.
func relayHeaders(w http.ResponseWriter, h http.Header) {
	for _, k := range relayedHeaders {
		if v := h.Values(k); len(v) > 0 {
			w.Header()[k] = v
		}
	}
}
