package upstream

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/miekg/dns"
)

const dnsMessage = "application/dns-message"

// dohTransport is DNS over HTTPS (RFC 8484). Queries go out with ID 0 (§4.1)
// over a pooled HTTP/2 (or HTTP/1.1) connection owned by its http.Transport,
// whose goroutines end when close drops the idle connections.
type dohTransport struct {
	name   string
	url    string
	get    bool
	tr     *http.Transport
	client *http.Client
}

func newDoH(a Addr, method string, tlsCfg *tls.Config, idle, timeout time.Duration) *dohTransport {
	var d net.Dialer
	dialAddr := a.Dial
	tr := &http.Transport{
		// Always dial the configured address; the URL host names the
		// certificate only.
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, dialAddr)
		},
		TLSClientConfig:        tlsCfg,
		ForceAttemptHTTP2:      true,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        idle,
		TLSHandshakeTimeout:    timeout,
		MaxResponseHeaderBytes: 16 << 10,
		DisableCompression:     true,
		Proxy:                  nil, // never an environment proxy
	}
	return &dohTransport{
		name: a.String(),
		url:  a.URL,
		get:  strings.EqualFold(method, http.MethodGet),
		tr:   tr,
		client: &http.Client{
			Transport: tr,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		},
	}
}

func (t *dohTransport) exchange(ctx context.Context, q *dns.Msg) (*dns.Msg, error) {
	msg, err := packWithID(q, 0, nil)
	if err != nil {
		return nil, err
	}
	var req *http.Request
	if t.get {
		sep := "?"
		if strings.Contains(t.url, "?") {
			sep = "&"
		}
		req, err = http.NewRequestWithContext(ctx, http.MethodGet,
			t.url+sep+"dns="+base64.RawURLEncoding.EncodeToString(msg), nil)
	} else {
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(msg))
		if err == nil {
			req.Header.Set("Content-Type", dnsMessage)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.name, err)
	}
	req.Header.Set("Accept", dnsMessage)
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.name, ioError(ctx, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("%s: %w: HTTP status %d", t.name, errBadReply, resp.StatusCode)
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mt != dnsMessage {
		return nil, fmt.Errorf("%s: %w: content type %q", t.name, errBadReply, resp.Header.Get("Content-Type"))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, dns.MaxMsgSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.name, ioError(ctx, err))
	}
	if len(body) > dns.MaxMsgSize {
		return nil, fmt.Errorf("%s: %w: body larger than %d bytes", t.name, errBadReply, dns.MaxMsgSize)
	}
	r := new(dns.Msg)
	if err := r.Unpack(body); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", t.name, errBadReply, err)
	}
	if !matches(q, 0, r) {
		return nil, fmt.Errorf("%s: %w: answer does not match the query", t.name, errBadReply)
	}
	r.Id = q.Id
	return r, nil
}

func (t *dohTransport) close() { t.tr.CloseIdleConnections() }
