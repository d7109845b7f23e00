// Package client is a Go client of kudurru's /v1 admin API. The CLI, the
// cluster's join logic and the tests use it. A Client is safe for
// concurrent use.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/kudurru/kudurru/cluster"
	"github.com/kudurru/kudurru/cluster/httpapi/apiv1"
)

// Error is an error answer of the API.
type Error struct {
	Status  int    // HTTP status
	Code    string // apiv1.Code*; "" when the body was not an API error
	Message string // for people
}

func (e *Error) Error() string { return e.Message }

// IsCode reports whether err is an API error with the given code.
func IsCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// Client talks to one node's API.
type Client struct {
	base        string
	token       string
	hc          *http.Client
	consistency string
}

// New returns a client of the API at base (http://host:port). token may be
// empty. hc nil means http.DefaultClient.
func New(base, token string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("api URL %q: want http://host:port", base)
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{base: strings.TrimRight(base, "/"), token: token, hc: hc}, nil
}

// Base returns the API's base URL.
func (c *Client) Base() string { return c.base }

// Leader returns a client whose reads are answered by the leader
// (?consistency=leader) instead of the node's local, possibly stale, state.
func (c *Client) Leader() *Client {
	cp := *c
	cp.consistency = "leader"
	return &cp
}

// do sends a request and decodes a JSON answer into out (when not nil). An
// answer that is not 2xx is returned as an *Error.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, body io.Reader, contentType string, out any) error {
	resp, err := c.send(ctx, method, path, q, body, contentType)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("decode answer of %s %s: %w", method, path, err)
	}
	return nil
}

// send sends a request and returns a 2xx response, whose body the caller
// closes, or an error.
func (c *Client) send(ctx context.Context, method, path string, q url.Values, body io.Reader, contentType string) (*http.Response, error) {
	if c.consistency != "" && method == http.MethodGet {
		if q == nil {
			q = url.Values{}
		}
		q.Set("consistency", c.consistency)
	}
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the kudurru API at %s: %w", c.base, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var eb apiv1.ErrorBody
	if json.Unmarshal(b, &eb) == nil && eb.Error.Code != "" {
		return nil, &Error{Status: resp.StatusCode, Code: eb.Error.Code, Message: eb.Error.Message}
	}
	msg := strings.TrimSpace(string(b))
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return nil, &Error{Status: resp.StatusCode, Message: fmt.Sprintf("%s %s: HTTP %d: %s", method, u, resp.StatusCode, msg)}
}

func jsonBody(v any) (io.Reader, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return bytes.NewReader(b), nil
}

// zonePath returns the path of a zone's resource.
func zonePath(zone string, rest ...string) string {
	p := "/v1/zones/" + url.PathEscape(zone)
	for _, r := range rest {
		p += "/" + r
	}
	return p
}

// ListZones lists the zones.
func (c *Client) ListZones(ctx context.Context) (apiv1.ZoneList, error) {
	var out apiv1.ZoneList
	err := c.do(ctx, http.MethodGet, "/v1/zones", nil, nil, "", &out)
	return out, err
}

// GetZone returns a zone with all of its RRsets.
func (c *Client) GetZone(ctx context.Context, zone string) (apiv1.Zone, error) {
	var out apiv1.Zone
	err := c.do(ctx, http.MethodGet, zonePath(zone), nil, nil, "", &out)
	return out, err
}

// CreateZone creates a zone.
func (c *Client) CreateZone(ctx context.Context, req apiv1.CreateZone) (apiv1.WriteResult, error) {
	var out apiv1.WriteResult
	body, err := jsonBody(req)
	if err != nil {
		return out, err
	}
	err = c.do(ctx, http.MethodPost, "/v1/zones", nil, body, "application/json", &out)
	return out, err
}

// DeleteZone deletes a zone.
func (c *Client) DeleteZone(ctx context.Context, zone string) (apiv1.WriteResult, error) {
	var out apiv1.WriteResult
	err := c.do(ctx, http.MethodDelete, zonePath(zone), nil, nil, "", &out)
	return out, err
}

// RRsets lists a zone's RRsets, filtered by owner name and type when those
// are not empty.
func (c *Client) RRsets(ctx context.Context, zone, name, typ string) (apiv1.RRsetList, error) {
	q := url.Values{}
	if name != "" {
		q.Set("name", name)
	}
	if typ != "" {
		q.Set("type", typ)
	}
	var out apiv1.RRsetList
	err := c.do(ctx, http.MethodGet, zonePath(zone, "rrsets"), q, nil, "", &out)
	return out, err
}

// Patch applies a batch of changes to a zone, atomically.
func (c *Client) Patch(ctx context.Context, zone string, changes ...apiv1.Change) (apiv1.WriteResult, error) {
	var out apiv1.WriteResult
	body, err := jsonBody(apiv1.Patch{Changes: changes})
	if err != nil {
		return out, err
	}
	err = c.do(ctx, http.MethodPatch, zonePath(zone, "rrsets"), nil, body, "application/json", &out)
	return out, err
}

// Import creates a zone or replaces its content with a master file.
func (c *Client) Import(ctx context.Context, zone string, masterFile io.Reader) (apiv1.WriteResult, error) {
	var out apiv1.WriteResult
	err := c.do(ctx, http.MethodPut, zonePath(zone, "import"), nil, masterFile, "text/dns", &out)
	return out, err
}

// Export writes a zone as a master file to w.
func (c *Client) Export(ctx context.Context, zone string, w io.Writer) error {
	resp, err := c.send(ctx, http.MethodGet, zonePath(zone, "export"), nil, nil, "")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("export %s: %w", zone, err)
	}
	return nil
}

// Status returns the node's view of the cluster.
func (c *Client) Status(ctx context.Context) (cluster.Status, error) {
	var out cluster.Status
	err := c.do(ctx, http.MethodGet, "/v1/cluster", nil, nil, "", &out)
	return out, err
}

// Join asks the cluster to add a node.
func (c *Client) Join(ctx context.Context, req cluster.JoinRequest) (cluster.JoinResponse, error) {
	var out cluster.JoinResponse
	body, err := jsonBody(req)
	if err != nil {
		return out, err
	}
	err = c.do(ctx, http.MethodPost, "/v1/cluster/join", nil, body, "application/json", &out)
	return out, err
}

// RemoveMember removes a node from the cluster.
func (c *Client) RemoveMember(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/v1/cluster/members/"+url.PathEscape(id), nil, nil, "", nil)
}

// Health returns nil when the node's API is up.
func (c *Client) Health(ctx context.Context) error {
	return c.do(ctx, http.MethodGet, "/health", nil, nil, "", nil)
}

// Ready returns nil when the node is ready, else an *Error with the reason.
func (c *Client) Ready(ctx context.Context) error {
	return c.do(ctx, http.MethodGet, "/ready", nil, nil, "", nil)
}
