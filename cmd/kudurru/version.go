package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set at build time: go build -ldflags "-X main.version=v1.2.3 -X main.commit=abc123".
var (
	version = "dev"
	commit  = ""
)

// cmdVersion prints the version, the commit and the Go version.
func cmdVersion(a *app) int {
	c := commit
	if c == "" {
		c = "unknown"
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					c = s.Value
				}
			}
		}
	}
	fmt.Fprintf(a.stdout, "kudurru %s (commit %s, %s)\n", version, c, runtime.Version())
	return exitOK
}
