// Package lookup answers one DNS question from a zone.View: the whole of
// kudurru's authoritative DNS semantics as a pure function, with no sockets,
// no clock and no locks.
//
// Lookup implements RFC 1034 §4.3.2 as refined by later RFCs: exact matches,
// NXDOMAIN versus NODATA (RFC 2308, with the negative TTL in the SOA),
// empty non-terminals and wildcards (RFC 4592), CNAME chains across every
// zone the View serves (RFC 6604 for the final rcode), delegations with glue
// and DS answered from the parent side (RFC 4035 §3.1.4.1), additional
// section processing for NS, MX and SRV targets, and minimal ANY answers
// (RFC 8482). A name outside every zone is reported as NotAuthoritative so
// that the caller can hand the query to its next stage.
//
// Zone data is shared by every reader and never modified: a record whose
// owner name must carry the query's letter case, or whose TTL must change, is
// copied first. Every other record in a Result is shared with the View, and
// the caller must not modify it either.
package lookup
