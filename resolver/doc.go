// Package resolver is kudurru's DNS data plane: the UDP and TCP listeners and
// the fixed chain of stages every query passes through.
//
// The chain is declared once, in chain.go: recover → metrics → ingress
// checks → local names (CHAOS, the health name) → authority → forward
// (recursion ACL, resolver/cache, resolver/upstream; only when upstreams
// are configured) → refuse. Each stage is a Handler with CoreDNS's rcode
// contract: a stage that returns SERVFAIL, REFUSED, FORMERR or NOTIMP has
// written nothing, and the server writes that error reply; any other rcode
// means the reply is written.
//
// All DNS semantics live in the pure package resolver/lookup. The authority
// stage reads the current zone.View through the Zones interface once per
// query and never takes a lock a writer holds. The package imports fsm/zone
// and nothing else of kudurru's; what it needs from the cluster it declares
// here as small interfaces (Zones, Status, BlobStore) that cmd wires up.
//
// See DESIGN.md for the reasons behind the chain, the socket layout and the
// minimal authority section.
package resolver
