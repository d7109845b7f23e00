// Package cluster is a kudurru node: a hashicorp/raft server (raft-boltdb
// log and stable store, file snapshots, TCP transport) around the fsm
// package's state machine, with bootstrap, join (non-voter first, promoted
// once caught up), removal, the leader-only write path with definite and
// unknown outcomes, and local.db, the node-local copy of the served View
// that lets a node restarted without quorum answer at once.
//
// The HTTP admin API lives in cluster/httpapi; it calls Node's methods
// (Propose, AddMember, RemoveMember, Status, Leader) and forwards writes to
// the leader. See DESIGN.md for the reasons behind each choice.
package cluster
