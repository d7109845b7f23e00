package upstream

import "errors"

// Errors returned by the Forwarder. Exchange wraps them; test with errors.Is.
var (
	// ErrNoUpstream means no forwarding zone covers the query name.
	ErrNoUpstream = errors.New("no upstream for this name")
	// ErrAllFailed means every attempted upstream failed: it timed out,
	// could not be reached, answered SERVFAIL or REFUSED, or was at its
	// in-flight cap. The wrapped error is the last attempt's.
	ErrAllFailed = errors.New("all upstreams failed")
	// ErrOverloaded means an upstream was at its in-flight cap.
	ErrOverloaded = errors.New("upstream at its in-flight cap")
	// ErrTimeout means an upstream did not answer before the deadline.
	ErrTimeout = errors.New("upstream timed out")
	// ErrBadQuery means the message to forward is not a single-question query.
	ErrBadQuery = errors.New("query must have exactly one question")
	// ErrClosed means the Forwarder was closed.
	ErrClosed = errors.New("forwarder closed")

	// errBadReply is an upstream answer that cannot be used (HTTP status,
	// content type, size).
	errBadReply = errors.New("bad reply")
	// errConnLost means a stream connection died with the query pending.
	errConnLost = errors.New("connection lost")
	// errRcode marks a SERVFAIL or REFUSED answer, retried elsewhere.
	errRcode = errors.New("upstream answered")
)
