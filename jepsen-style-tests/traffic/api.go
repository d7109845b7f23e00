// Package traffic is the client side of the partition suite: a plain
// HTTP/JSON client of kudurru's /v1 API and a DNS client, and the
// workloads built on them — unique-record writes and compare-and-set
// writes spread over every node, DNS reads at a fixed rate, an SOA serial
// poller and a /v1/cluster poller per node. Every operation is recorded in
// the run's history with its outcome: ok, fail (definitely not applied) or
// unknown (may or may not have been applied).
//
// It talks to the product only over the wire, so it shares no code with it.
package traffic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/kudurru/kudurru/jepsen-style-tests/model"
)

// Change is one edit of a PATCH /v1/zones/{zone}/rrsets batch.
type Change struct {
	Op      string   `json:"op"`
	Name    string   `json:"name"`
	Type    string   `json:"type,omitempty"`
	TTL     *uint32  `json:"ttl,omitempty"`
	Records []string `json:"records,omitempty"`
}

// Member is one entry of ClusterStatus.Members.
type Member struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	APIAddr  string `json:"api_addr"`
	Suffrage string `json:"suffrage"`
	Leader   bool   `json:"leader"`
}

// ClusterStatus is the body of GET /v1/cluster.
type ClusterStatus struct {
	NodeID       string   `json:"node_id"`
	ClusterID    string   `json:"cluster_id"`
	State        string   `json:"state"`
	Term         uint64   `json:"term"`
	LeaderID     string   `json:"leader_id"`
	AppliedIndex uint64   `json:"applied_index"`
	ServingIndex uint64   `json:"serving_index"`
	CommitIndex  uint64   `json:"commit_index"`
	Ready        bool     `json:"ready"`
	ReadyReason  string   `json:"ready_reason"`
	Members      []Member `json:"members"`
}

// RRset is one RRset of a zone read.
type RRset struct {
	Name    string   `json:"name"`
	Type    string   `json:"type"`
	TTL     uint32   `json:"ttl"`
	Records []string `json:"records"`
}

// Zone is the body of GET /v1/zones/{zone}, with the applied index of the
// View it was read from (the X-Kudurru-Index header).
type Zone struct {
	Name   string  `json:"name"`
	Serial uint32  `json:"serial"`
	RRsets []RRset `json:"rrsets"`
	Index  uint64  `json:"-"`
}

// Result is what a write told the client.
type Result struct {
	Outcome model.Outcome
	Status  int    // HTTP status, 0 without an answer
	Code    string // API error code, or dial/timeout/conn without an answer
	Err     string
	Index   uint64
	Serial  uint32
}

// APIError is a non-2xx answer of the API.
type APIError struct {
	Status  int
	Code    string
	Message string
}

func (e *APIError) Error() string { return fmt.Sprintf("HTTP %d %s: %s", e.Status, e.Code, e.Message) }

// Client talks to kudurru's /v1 API with a bearer token. It is safe for
// concurrent use.
type Client struct {
	HTTP  *http.Client
	Token string
}

// NewClient returns a client whose requests time out after timeout.
func NewClient(token string, timeout time.Duration) *Client {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     30 * time.Second,
	}
	return &Client{HTTP: &http.Client{Transport: tr, Timeout: timeout}, Token: token}
}

// Close drops idle connections.
func (c *Client) Close() { c.HTTP.CloseIdleConnections() }

func (c *Client) do(ctx context.Context, method, u string, body any) (*http.Response, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return resp, nil, err
	}
	return resp, b, nil
}

func apiError(resp *http.Response, b []byte) *APIError {
	var eb struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(b, &eb)
	return &APIError{Status: resp.StatusCode, Code: eb.Error.Code, Message: eb.Error.Message}
}

// Patch sends one atomic batch and classifies its outcome. Without an
// answer the outcome is unknown, unless the connection was never made.
func (c *Client) Patch(ctx context.Context, base, zone string, changes []Change) Result {
	u := base + "/v1/zones/" + url.PathEscape(zone) + "/rrsets"
	resp, b, err := c.do(ctx, http.MethodPatch, u, map[string]any{"changes": changes})
	if err != nil {
		return transportResult(resp, err)
	}
	r := Result{Status: resp.StatusCode}
	if resp.StatusCode == http.StatusOK {
		var wr struct {
			Index  uint64 `json:"index"`
			Serial uint32 `json:"serial"`
		}
		if err := json.Unmarshal(b, &wr); err != nil {
			r.Outcome, r.Code, r.Err = model.Unknown, "bad-body", err.Error()
			return r
		}
		r.Outcome, r.Index, r.Serial = model.OK, wr.Index, wr.Serial
		return r
	}
	ae := apiError(resp, b)
	r.Code, r.Err = ae.Code, ae.Message
	switch {
	case resp.StatusCode == http.StatusGatewayTimeout, resp.StatusCode >= 500 && resp.StatusCode != http.StatusServiceUnavailable:
		r.Outcome = model.Unknown // 504 outcome_unknown, 500 internal
	default:
		r.Outcome = model.Fail // 503: nothing written; 4xx: refused
	}
	if r.Code == "" {
		r.Code = strconv.Itoa(resp.StatusCode)
	}
	return r
}

// transportResult classifies a request that got no complete answer.
func transportResult(resp *http.Response, err error) Result {
	r := Result{Outcome: model.Unknown, Code: "conn", Err: err.Error()}
	if resp != nil {
		r.Status = resp.StatusCode
		return r // the answer began but its body was lost
	}
	var op *net.OpError
	var ne net.Error
	switch {
	case errors.As(err, &op) && op.Op == "dial":
		r.Outcome, r.Code = model.Fail, "dial" // nothing was sent
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		r.Code = "timeout"
	}
	return r
}

// CreateZone creates a zone with the given NS host names.
func (c *Client) CreateZone(ctx context.Context, base, name string, ns []string) error {
	resp, b, err := c.do(ctx, http.MethodPost, base+"/v1/zones", map[string]any{"name": name, "ns": ns})
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return apiError(resp, b)
	}
	return nil
}

// Status reads GET /v1/cluster.
func (c *Client) Status(ctx context.Context, base string) (ClusterStatus, error) {
	var st ClusterStatus
	resp, b, err := c.do(ctx, http.MethodGet, base+"/v1/cluster", nil)
	if err != nil {
		return st, err
	}
	if resp.StatusCode != http.StatusOK {
		return st, apiError(resp, b)
	}
	return st, json.Unmarshal(b, &st)
}

// Zone reads a whole zone from the node's local View.
func (c *Client) Zone(ctx context.Context, base, zone string) (Zone, error) {
	var z Zone
	resp, b, err := c.do(ctx, http.MethodGet, base+"/v1/zones/"+url.PathEscape(zone), nil)
	if err != nil {
		return z, err
	}
	if resp.StatusCode != http.StatusOK {
		return z, apiError(resp, b)
	}
	if err := json.Unmarshal(b, &z); err != nil {
		return z, err
	}
	z.Index, _ = strconv.ParseUint(resp.Header.Get("X-Kudurru-Index"), 10, 64)
	return z, nil
}

// TXT reads the TXT set name from the leader (consistency=leader) and
// returns its values with the quotes removed; nil when absent.
func (c *Client) TXT(ctx context.Context, base, zone, name string) ([]string, error) {
	q := url.Values{"name": {name}, "type": {"TXT"}, "consistency": {"leader"}}
	resp, b, err := c.do(ctx, http.MethodGet, base+"/v1/zones/"+url.PathEscape(zone)+"/rrsets?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusNotFound {
		return nil, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, apiError(resp, b)
	}
	var l struct {
		RRsets []RRset `json:"rrsets"`
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, err
	}
	var out []string
	for _, s := range l.RRsets {
		for _, r := range s.Records {
			out = append(out, Unquote(r))
		}
	}
	return out, nil
}

// RemoveMember removes a node from the Raft configuration.
func (c *Client) RemoveMember(ctx context.Context, base, id string) error {
	resp, b, err := c.do(ctx, http.MethodDelete, base+"/v1/cluster/members/"+url.PathEscape(id), nil)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return apiError(resp, b)
	}
	return nil
}

// Ready reports whether GET /ready answers 200.
func (c *Client) Ready(ctx context.Context, base string) bool {
	resp, _, err := c.do(ctx, http.MethodGet, base+"/ready", nil)
	return err == nil && resp.StatusCode == http.StatusOK
}

// Quote makes a TXT record's zone-file text of s.
func Quote(s string) string { return strconv.Quote(s) }

// Unquote turns TXT zone-file text back into its value: the quoted
// strings concatenated.
func Unquote(s string) string {
	var out []byte
	in := false
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case ch == '\\' && i+1 < len(s):
			i++
			out = append(out, s[i])
		case ch == '"':
			in = !in
		case in || (ch != ' ' && ch != '\t'):
			out = append(out, ch)
		}
	}
	return string(out)
}
