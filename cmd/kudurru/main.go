// Command kudurru is a clustered authoritative DNS server and its admin
// client. `kudurru serve` runs a node; the other commands talk to a node's
// HTTP admin API (--api, KUDURRU_API) to manage zones, records and the
// cluster. Run `kudurru help` for the list.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/kudurru/kudurru/cluster/httpapi/apiv1"
	"github.com/kudurru/kudurru/cluster/httpapi/client"
)

// Exit statuses.
const (
	exitOK      = 0
	exitErr     = 1 // the command failed; nothing was changed, or it was a read
	exitUsage   = 2 // bad arguments, flags or configuration
	exitUnknown = 3 // a write's outcome is unknown: it may or may not have been applied
)

// app is the process's environment, replaced in tests.
type app struct {
	stdin   io.Reader
	stdout  io.Writer
	stderr  io.Writer
	getenv  func(string) string
	environ func() []string
	http    *http.Client // for API calls; nil: http.DefaultClient
}

func main() {
	a := &app{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, environ: os.Environ}
	os.Exit(a.run(context.Background(), os.Args[1:]))
}

const usage = `Usage: kudurru COMMAND [ARGS] [FLAGS]

Server:
  serve                         run a node (kudurru serve --help; --dev for a demo node)

Zones:
  zone list                     list zones
  zone create ZONE --ns NS...   create a zone
  zone delete ZONE              delete a zone
  zone import ZONE FILE|-       create or replace a zone from a master file
  zone export ZONE [FILE]       write a zone as a master file

Records (zone-file syntax, names relative to the zone):
  record list ZONE [NAME [TYPE]]
  record add ZONE 'www 300 IN A 192.0.2.1'...   add records to their sets
  record set ZONE 'www 300 IN A 192.0.2.1'...   replace the sets with these records
  record delete ZONE 'www IN A 192.0.2.1'...    remove these records
  record delete ZONE NAME TYPE                  delete a whole set (TYPE ANY: every set at NAME)

Cluster:
  cluster status                this node's view of the cluster
  cluster members               the members
  cluster remove NODE           remove a member

  version                       print the version

Client flags: --api URL (KUDURRU_API, default http://127.0.0.1:8053),
--token TOKEN (KUDURRU_TOKEN), -o table|json, --leader (reads from the leader).
Exit status: 0 ok, 1 failed, 2 usage, 3 write outcome unknown.
`

// run runs one command line and returns the exit status.
func (a *app) run(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(a.stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "serve":
		return cmdServe(ctx, a, args[1:])
	case "zone":
		return a.runGroup(ctx, "zone", zoneCommands, args[1:])
	case "record":
		return a.runGroup(ctx, "record", recordCommands, args[1:])
	case "cluster":
		return a.runGroup(ctx, "cluster", clusterCommands, args[1:])
	case "version", "--version":
		return cmdVersion(a)
	case "help", "-h", "--help":
		fmt.Fprint(a.stdout, usage)
		return exitOK
	}
	return a.usageErr("unknown command %q", args[0])
}

// usageErr reports a usage error.
func (a *app) usageErr(format string, args ...any) int {
	fmt.Fprintf(a.stderr, "kudurru: %s\nRun 'kudurru help' for usage.\n", fmt.Sprintf(format, args...))
	return exitUsage
}

// fail reports err and returns the exit status for it: exitUnknown for a
// write of unknown outcome, code otherwise.
func (a *app) fail(code int, err error) int {
	fmt.Fprintf(a.stderr, "kudurru: %v\n", err)
	if client.IsCode(err, apiv1.CodeOutcomeUnknown) {
		return exitUnknown
	}
	var ue *usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	return code
}

// usageError is a command's complaint about its arguments.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}
