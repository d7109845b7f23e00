package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kudurru/kudurru/cluster/httpapi/apiv1"
	"github.com/miekg/dns"
)

var recordCommands = []command{
	{name: "list", args: "ZONE [NAME [TYPE]]", summary: "List records, all of a zone or those of one name (and type).", minArgs: 1, maxArgs: 3, run: recordList},
	{name: "add", args: "ZONE RECORD...", summary: "Add records (zone-file lines, e.g. 'www 300 IN A 192.0.2.1') to their sets.", minArgs: 2, maxArgs: -1, run: recordWrite(apiv1.OpAdd, "added")},
	{name: "set", args: "ZONE RECORD...", summary: "Replace the sets of the given records with exactly these records.", minArgs: 2, maxArgs: -1, run: recordWrite(apiv1.OpReplace, "set")},
	{name: "delete", args: "ZONE RECORD... | ZONE NAME TYPE", summary: "Remove the given records; given NAME TYPE, delete the whole set (TYPE ANY: every set at NAME).", minArgs: 2, maxArgs: -1, run: recordDelete},
}

func recordList(ctx context.Context, c *cli, args []string) error {
	var name, typ string
	if len(args) > 1 {
		name = args[1]
	}
	if len(args) > 2 {
		typ = args[2]
	}
	list, err := c.api.RRsets(ctx, args[0], name, typ)
	if err != nil {
		return err
	}
	if c.output == "json" {
		return c.printJSON(list)
	}
	var rows [][]string
	for _, s := range list.RRsets {
		for _, r := range s.Records {
			rows = append(rows, []string{s.Name, strconv.FormatUint(uint64(s.TTL), 10), s.Type, r})
		}
	}
	return c.table([]string{"NAME", "TTL", "TYPE", "DATA"}, rows)
}

// recordWrite returns the run function of add (op add) and set (op
// replace): one change per name and type, all in one atomic batch.
func recordWrite(op, verb string) func(context.Context, *cli, []string) error {
	return func(ctx context.Context, c *cli, args []string) error {
		changes, err := recordChanges(args[0], args[1:], op)
		if err != nil {
			return err
		}
		res, err := c.api.Patch(ctx, args[0], changes...)
		if err != nil {
			return err
		}
		return c.wrote(res, "%s %d record(s) in %s", verb, len(args)-1, args[0])
	}
}

func recordDelete(ctx context.Context, c *cli, args []string) error {
	var changes []apiv1.Change
	var what string
	if len(args) == 3 && !strings.ContainsAny(args[1]+args[2], " \t") {
		ch := apiv1.Change{Op: apiv1.OpDelete, Name: args[1], Type: strings.ToUpper(args[2])}
		what = fmt.Sprintf("deleted the %s set of %s in %s", ch.Type, ch.Name, args[0])
		if ch.Type == "ANY" {
			ch = apiv1.Change{Op: apiv1.OpDeleteName, Name: args[1]}
			what = fmt.Sprintf("deleted every set of %s in %s", ch.Name, args[0])
		}
		changes = []apiv1.Change{ch}
	} else {
		var err error
		if changes, err = recordChanges(args[0], args[1:], apiv1.OpRemove); err != nil {
			return err
		}
		what = fmt.Sprintf("removed %d record(s) from %s", len(args)-1, args[0])
	}
	res, err := c.api.Patch(ctx, args[0], changes...)
	if err != nil {
		return err
	}
	return c.wrote(res, "%s", what)
}

// recordChanges parses zone-file lines (names relative to zone) and groups
// them into one change per owner name and type, in order of appearance. A
// TTL is sent only when a line gives one.
func recordChanges(zoneName string, lines []string, op string) ([]apiv1.Change, error) {
	origin := dns.Fqdn(zoneName)
	if _, ok := dns.IsDomainName(origin); !ok {
		return nil, usagef("zone %q is not a domain name", zoneName)
	}
	var out []apiv1.Change
	index := map[string]int{}
	for _, line := range lines {
		rrs, explicit, err := parseLine(origin, line)
		if err != nil {
			return nil, usagef("%v", err)
		}
		for _, rr := range rrs {
			h := rr.Header()
			key := strings.ToLower(h.Name) + " " + dns.Type(h.Rrtype).String()
			i, ok := index[key]
			if !ok {
				i = len(out)
				index[key] = i
				out = append(out, apiv1.Change{Op: op, Name: h.Name, Type: dns.Type(h.Rrtype).String()})
				if explicit && op != apiv1.OpRemove {
					ttl := h.Ttl
					out[i].TTL = &ttl
				}
			}
			out[i].Records = append(out[i].Records, strings.TrimPrefix(rr.String(), h.String()))
		}
	}
	return out, nil
}

// parseLine parses one zone-file line in origin. It reports whether the
// line gave a TTL, by parsing it under two different default TTLs.
func parseLine(origin, line string) ([]dns.RR, bool, error) {
	parse := func(ttl uint32) ([]dns.RR, error) {
		zp := dns.NewZoneParser(strings.NewReader(line), origin, "")
		zp.SetDefaultTTL(ttl)
		var rrs []dns.RR
		for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
			rrs = append(rrs, rr)
		}
		if err := zp.Err(); err != nil {
			return nil, fmt.Errorf("record %q: %v", line, err)
		}
		if len(rrs) == 0 {
			return nil, fmt.Errorf("record %q: no record; write it as in a zone file, e.g. 'www 300 IN A 192.0.2.1'", line)
		}
		return rrs, nil
	}
	a, err := parse(1)
	if err != nil {
		return nil, false, err
	}
	b, err := parse(2)
	if err != nil {
		return nil, false, err
	}
	return a, a[0].Header().Ttl == b[0].Header().Ttl, nil
}

// dirOf is the directory of a path, for a temporary file beside it.
func dirOf(path string) string { return filepath.Dir(path) }
