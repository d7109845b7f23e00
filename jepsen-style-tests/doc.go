// Package jepsen is kudurru's partition-tolerance suite, in the manner of
// Jepsen and etcd's robustness tests: real kudurru processes, each in its
// own Linux network namespace on one bridge, under network partitions,
// crashes, pauses, cold starts, membership changes and foreign data, with
// workloads recorded in a history that checkers judge against the
// invariants I1–I7 of DESIGN.md.
//
// Layout:
//
//	harness/    namespaces, bridge, drop rules, node processes, cleanup
//	faults/     the nemeses
//	traffic/    HTTP/DNS clients and the workloads
//	model/      the history format and the porcupine CAS model
//	check/      the checkers (PASS / FAIL / INCONCLUSIVE / N/A)
//	report/     summary.md
//	scenarios/  the scenario catalogue and the runner
//
// `go test ./...` runs the unit tests of the checkers and helpers without
// root. The scenarios run only with KUDURRU_JEPSEN=1, as root:
//
//	sudo make jepsen         # every scenario (about 15 minutes)
//	sudo make jepsen-quick   # one partition, one kill-restart, one cold start
//
// See docs/PARTITIONS.md for the scenarios, the knobs and the latest
// results.
package jepsen
