package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/kudurru/kudurru/cluster/httpapi/apiv1"
	"github.com/kudurru/kudurru/cluster/httpapi/client"
	"github.com/spf13/pflag"
)

// defaultAPI is the API the client commands talk to without --api or
// KUDURRU_API.
const defaultAPI = "http://127.0.0.1:8053"

// command is one client subcommand, as in `kudurru zone create`.
type command struct {
	name    string
	args    string // for usage: "ZONE FILE|-"
	summary string
	minArgs int
	maxArgs int // -1: any
	flags   func(fs *pflag.FlagSet)
	run     func(ctx context.Context, c *cli, args []string) error
}

// cli is what a client subcommand runs with.
type cli struct {
	*app
	api    *client.Client
	fs     *pflag.FlagSet
	output string // "table" or "json"
}

// runGroup parses and runs a subcommand of group.
func (a *app) runGroup(ctx context.Context, group string, cmds []command, args []string) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintf(a.stderr, "Usage:\n")
		for _, c := range cmds {
			fmt.Fprintf(a.stderr, "  kudurru %s %s %s\n      %s\n", group, c.name, c.args, c.summary)
		}
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	var cmd *command
	for i := range cmds {
		if cmds[i].name == args[0] {
			cmd = &cmds[i]
		}
	}
	if cmd == nil {
		return a.usageErr("unknown command %q %q", group, args[0])
	}
	fs := pflag.NewFlagSet(group+" "+cmd.name, pflag.ContinueOnError)
	fs.SetOutput(a.stderr)
	fs.Usage = func() {
		fmt.Fprintf(a.stderr, "Usage: kudurru %s %s %s [flags]\n\n%s\n\nFlags:\n%s", group, cmd.name, cmd.args, cmd.summary, fs.FlagUsages())
	}
	apiURL := fs.String("api", "", "base URL of the node's admin API (KUDURRU_API; default "+defaultAPI+")")
	token := fs.String("token", "", "bearer token of the API (KUDURRU_TOKEN)")
	output := fs.StringP("output", "o", "table", "output format: table or json")
	leader := fs.Bool("leader", false, "read from the leader (?consistency=leader), not this node's possibly stale state")
	if cmd.flags != nil {
		cmd.flags(fs)
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitOK
		}
		return a.usageErr("%v", err)
	}
	if *output != "table" && *output != "json" {
		return a.usageErr("-o %q: use table or json", *output)
	}
	n := fs.NArg()
	if n < cmd.minArgs || cmd.maxArgs >= 0 && n > cmd.maxArgs {
		return a.usageErr("usage: kudurru %s %s %s", group, cmd.name, cmd.args)
	}
	base := firstOf(*apiURL, a.getenv("KUDURRU_API"), defaultAPI)
	api, err := client.New(base, firstOf(*token, a.getenv("KUDURRU_TOKEN")), a.http)
	if err != nil {
		return a.usageErr("%v", err)
	}
	if *leader {
		api = api.Leader()
	}
	c := &cli{app: a, api: api, fs: fs, output: *output}
	if err := cmd.run(ctx, c, fs.Args()); err != nil {
		return a.fail(exitErr, err)
	}
	return exitOK
}

// firstOf returns the first non-empty string.
func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// printJSON writes v as indented JSON.
func (c *cli) printJSON(v any) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table writes rows as aligned columns under a header.
func (c *cli) table(header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// wrote reports a successful write: a sentence, or the result as JSON.
func (c *cli) wrote(res apiv1.WriteResult, format string, args ...any) error {
	if c.output == "json" {
		return c.printJSON(res)
	}
	_, err := fmt.Fprintf(c.stdout, "%s (serial %d, index %d)\n", fmt.Sprintf(format, args...), res.Serial, res.Index)
	return err
}

// readInput opens a file argument, "-" meaning standard input.
func (c *cli) readInput(name string) (io.Reader, func(), error) {
	if name == "-" {
		return c.stdin, func() {}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	return f, func() { f.Close() }, nil
}
