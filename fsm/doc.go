// Package fsm is kudurru's replicated state machine: the versioned command
// codec, a deterministic Apply that turns committed log entries into a new
// immutable zone.View, Snapshot/Restore in a versioned streaming format, and
// the publication of the current View through an atomic pointer.
//
// FSM implements raft.FSM and raft.BatchingFSM. Raft calls Apply, ApplyBatch,
// Snapshot and Restore from its single FSM goroutine; everything else
// (Current, Changed, WaitIndex, Seed) may be called from any goroutine.
// Readers never take a lock the writer holds: they load a pointer.
//
// Apply reads no clock, draws no random numbers and does not depend on map
// order: the same log gives the same View (and View.Hash) on every node.
package fsm
