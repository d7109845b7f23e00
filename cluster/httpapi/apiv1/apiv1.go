// Package apiv1 holds the JSON bodies of kudurru's /v1 admin API and its
// error codes. The server (package httpapi) and the client (package client)
// share them, so the two cannot drift apart. It has no behaviour beyond JSON
// decoding of the two-form SOA field.
package apiv1

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Error codes: the "code" field of every error body. A client branches on
// the code, never on the message.
const (
	CodeInvalid            = "invalid"             // 400: the request or its records break a rule; nothing changed
	CodeUnauthorized       = "unauthorized"        // 401: missing or wrong bearer token
	CodeNotFound           = "not_found"           // 404: no such endpoint
	CodeZoneNotFound       = "zone_not_found"      // 404
	CodeMemberNotFound     = "member_not_found"    // 404
	CodeMethodNotAllowed   = "method_not_allowed"  // 405
	CodeZoneExists         = "zone_exists"         // 409
	CodePreconditionFailed = "precondition_failed" // 409: a check in the batch did not hold; nothing changed
	CodeOtherCluster       = "other_cluster"       // 409: a join from a node of another cluster
	CodeBodyTooLarge       = "body_too_large"      // 413
	CodeInternal           = "internal"            // 500
	CodeNoQuorum           = "no_quorum"           // 503: no leader; nothing was written
	CodeNotLeader          = "not_leader"          // 503: leadership moved; nothing was written, retry
	CodeLeaderUnreachable  = "leader_unreachable"  // 503: the leader's API could not be reached; nothing was sent
	CodeNotBootstrapped    = "not_bootstrapped"    // 503: the cluster has no ID yet
	CodeShuttingDown       = "shutting_down"       // 503
	CodeNotReady           = "not_ready"           // 503: from /ready
	CodeOutcomeUnknown     = "outcome_unknown"     // 504: the write may or may not have been applied
)

// Headers of the API.
const (
	// HeaderForwardedBy marks a request one node forwarded to the leader; its
	// value is the forwarding node's ID. A node never forwards a request that
	// carries it, so a forward cannot loop.
	HeaderForwardedBy = "X-Kudurru-Forwarded-By"
	// HeaderServedBy names the node whose state answered the request.
	HeaderServedBy = "X-Kudurru-Node"
	// HeaderIndex is the applied Raft index of the state a read was served
	// from; compare it with the index a write returned.
	HeaderIndex = "X-Kudurru-Index"
)

// ErrorBody is the body of every error response.
type ErrorBody struct {
	Error Error `json:"error"`
}

// Error says what went wrong: Code for programs, Message for people.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ZoneSummary is one zone in a list.
type ZoneSummary struct {
	Name    string `json:"name"`
	Serial  uint32 `json:"serial"`
	Records int    `json:"records"`
}

// ZoneList is the body of GET /v1/zones.
type ZoneList struct {
	Zones []ZoneSummary `json:"zones"`
}

// RRset is the records of one owner name and type. Records hold the record
// data in zone-file text, without owner, TTL, class and type.
type RRset struct {
	Name    string   `json:"name"`
	Type    string   `json:"type"`
	TTL     uint32   `json:"ttl"`
	Records []string `json:"records"`
}

// Zone is the body of GET /v1/zones/{zone}.
type Zone struct {
	Name    string  `json:"name"`
	Serial  uint32  `json:"serial"`
	Records int     `json:"records"`
	RRsets  []RRset `json:"rrsets"`
}

// RRsetList is the body of GET /v1/zones/{zone}/rrsets.
type RRsetList struct {
	Zone   string  `json:"zone"`
	Serial uint32  `json:"serial"`
	RRsets []RRset `json:"rrsets"`
}

// CreateZone is the body of POST /v1/zones.
type CreateZone struct {
	Name    string   `json:"name"`              // the zone's origin
	NS      []string `json:"ns"`                // host names of the apex NS set; at least one
	SOA     *SOA     `json:"soa,omitempty"`     // the apex SOA; generated when absent
	TTL     *uint32  `json:"ttl,omitempty"`     // TTL of the SOA, the NS set and records without one; default 3600
	Records []string `json:"records,omitempty"` // more records, one zone-file line each, relative to the zone
}

// SOA is the apex SOA of a new zone, given either as zone-file text
// (a JSON string: the record data "mname rname serial refresh retry expire
// minimum", or a whole SOA line) or as fields (a JSON object). Missing
// fields take the server's defaults.
type SOA struct {
	Text   string
	Fields *SOAFields
}

// SOAFields is the object form of SOA. Zero fields take defaults.
type SOAFields struct {
	MName   string `json:"mname,omitempty"`
	RName   string `json:"rname,omitempty"` // hostmaster.example.com. or hostmaster@example.com
	Serial  uint32 `json:"serial,omitempty"`
	Refresh uint32 `json:"refresh,omitempty"`
	Retry   uint32 `json:"retry,omitempty"`
	Expire  uint32 `json:"expire,omitempty"`
	Minimum uint32 `json:"minimum,omitempty"`
}

// UnmarshalJSON accepts a string or an object, and refuses unknown fields
// in the object.
func (s *SOA) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) > 0 && b[0] == '"':
		*s = SOA{}
		return json.Unmarshal(b, &s.Text)
	case len(b) > 0 && b[0] == '{':
		var f SOAFields
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			return fmt.Errorf("soa: %w", err)
		}
		*s = SOA{Fields: &f}
		return nil
	}
	return fmt.Errorf("soa: want zone-file text (a string) or an object of fields, got %.20s", b)
}

// MarshalJSON writes the form that is set.
func (s SOA) MarshalJSON() ([]byte, error) {
	if s.Fields != nil {
		return json.Marshal(s.Fields)
	}
	return json.Marshal(s.Text)
}

// Change operations, the "op" field of a Change.
const (
	OpReplace    = "replace"     // replace the set Name/Type with Records
	OpDelete     = "delete"      // delete the set Name/Type
	OpDeleteName = "delete_name" // delete every set at Name
	OpAdd        = "add"         // add Records to the set Name/Type
	OpRemove     = "remove"      // remove Records from the set Name/Type
	OpCheck      = "check"       // precondition: the set Name/Type holds exactly Records (none: absent)
)

// Change is one edit of a zone in a PATCH batch.
type Change struct {
	Op      string   `json:"op"`
	Name    string   `json:"name"`              // "@", relative to the zone, or absolute
	Type    string   `json:"type,omitempty"`    // record type mnemonic: A, AAAA, TXT, TYPE65…
	TTL     *uint32  `json:"ttl,omitempty"`     // for replace and add
	Records []string `json:"records,omitempty"` // record data in zone-file text
}

// Patch is the body of PATCH /v1/zones/{zone}/rrsets: one atomic batch.
type Patch struct {
	Changes []Change `json:"changes"`
}

// WriteResult is the body of a successful zone write.
type WriteResult struct {
	Index  uint64 `json:"index"`  // the Raft log index of the committed entry
	Serial uint32 `json:"serial"` // the zone's serial after it
}

// Removed is the body of a successful DELETE /v1/cluster/members/{id}.
type Removed struct {
	Removed string `json:"removed"`
}

// Health is the body of GET /health and of a successful GET /ready.
type Health struct {
	Status string `json:"status"`
	NodeID string `json:"node_id,omitempty"`
}
