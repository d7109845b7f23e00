//go:build !unix

package resolver_test

import "time"

// processCPU is not measured here; BenchmarkServeUDP then reports no
// cpu-ns/op.
func processCPU() time.Duration { return 0 }
