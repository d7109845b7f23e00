// Package httpapi is kudurru's HTTP admin API: zones, RRsets, zone-file
// import and export, cluster status and membership, health, readiness and
// metrics, as JSON under /v1/ (docs/API.md describes every endpoint).
//
// The package owns no state. It reads the node's local View, and proposes
// writes through a Backend, which the cluster's node implements. Every write
// is parsed and validated on the node that received it; a node that is not
// the leader then forwards the request (same method, path and body) to the
// leader's API and relays the answer, so a client may talk to any node.
// A forwarded request carries the forwarding node's ID in a header and is
// never forwarded again, so forwards cannot loop.
//
// Outcomes are reported honestly: a write that failed before it reached the
// leader is a definite failure (503), a write whose reply was lost after it
// was sent is reported as of unknown outcome (504), never as a success.
//
// Server owns one goroutine, the HTTP serve loop, started by Start and
// stopped by Close. Handlers run on net/http's per-connection goroutines.
package httpapi
