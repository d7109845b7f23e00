// Package zone holds kudurru's replicated zone data as immutable values: the
// View (every zone, the cluster ID and the applied Raft index), each Zone's
// name tree, and the Change type that edits a zone copy-on-write.
//
// Nothing here does I/O or imports Raft: the fsm package builds Views from the
// replicated log, and the resolver reads them. A published View, and every
// Zone, Node and RRset reachable from it, is never modified again, so readers
// use it without locks. A change to one zone copies only the path of the name
// tree it touches (google/btree's lazy copy-on-write clone), so its cost is
// O(change · log n), not O(zone).
//
// Names are stored in canonical form: lower case, fully qualified,
// presentation format as miekg/dns prints it. Tree keys are the reversed
// labels in an escaped byte form whose byte order is the canonical DNS name
// order of RFC 4034 §6.1, and in which a name's key is a prefix of the keys of
// exactly its descendants.
package zone
