package main

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/kudurru/kudurru/cluster/httpapi/apiv1"
	"github.com/spf13/pflag"
)

var zoneCommands = []command{
	{name: "list", summary: "List the zones with their serials and record counts.", maxArgs: 0, run: zoneList},
	{
		name: "create", args: "ZONE", summary: "Create a zone. The SOA is generated unless --soa is given.",
		minArgs: 1, maxArgs: 1, run: zoneCreate,
		flags: func(fs *pflag.FlagSet) {
			fs.StringSlice("ns", nil, "name servers of the zone (repeat or comma-separate); at least one")
			fs.Uint32("ttl", 3600, "TTL of the SOA, the NS set and records without one")
			fs.String("soa", "", `SOA record data, e.g. "ns1.example.com. hostmaster.example.com. 1 3600 600 1209600 300"`)
			fs.StringArray("record", nil, "a record in zone-file syntax, relative to the zone (repeatable)")
		},
	},
	{name: "delete", args: "ZONE", summary: "Delete a zone and all of its records.", minArgs: 1, maxArgs: 1, run: zoneDelete},
	{
		name: "import", args: "ZONE FILE|-", summary: "Create a zone, or replace all of its records, from an RFC 1035 master file (- reads standard input).",
		minArgs: 2, maxArgs: 2, run: zoneImport,
	},
	{
		name: "export", args: "ZONE [FILE]", summary: "Write a zone as a master file, to FILE or standard output.",
		minArgs: 1, maxArgs: 2, run: zoneExport,
	},
}

func zoneList(ctx context.Context, c *cli, _ []string) error {
	list, err := c.api.ListZones(ctx)
	if err != nil {
		return err
	}
	if c.output == "json" {
		return c.printJSON(list)
	}
	rows := make([][]string, 0, len(list.Zones))
	for _, z := range list.Zones {
		rows = append(rows, []string{z.Name, strconv.FormatUint(uint64(z.Serial), 10), strconv.Itoa(z.Records)})
	}
	return c.table([]string{"ZONE", "SERIAL", "RECORDS"}, rows)
}

func zoneCreate(ctx context.Context, c *cli, args []string) error {
	ns, _ := c.fs.GetStringSlice("ns")
	records, _ := c.fs.GetStringArray("record")
	req := apiv1.CreateZone{Name: args[0], NS: ns, Records: records}
	if c.fs.Changed("ttl") {
		ttl, _ := c.fs.GetUint32("ttl")
		req.TTL = &ttl
	}
	if soa, _ := c.fs.GetString("soa"); soa != "" {
		req.SOA = &apiv1.SOA{Text: soa}
	}
	res, err := c.api.CreateZone(ctx, req)
	if err != nil {
		return err
	}
	return c.wrote(res, "created zone %s", args[0])
}

func zoneDelete(ctx context.Context, c *cli, args []string) error {
	res, err := c.api.DeleteZone(ctx, args[0])
	if err != nil {
		return err
	}
	return c.wrote(res, "deleted zone %s", args[0])
}

func zoneImport(ctx context.Context, c *cli, args []string) error {
	r, done, err := c.readInput(args[1])
	if err != nil {
		return err
	}
	defer done()
	res, err := c.api.Import(ctx, args[0], r)
	if err != nil {
		return err
	}
	return c.wrote(res, "imported zone %s", args[0])
}

func zoneExport(ctx context.Context, c *cli, args []string) error {
	if len(args) == 1 {
		return c.api.Export(ctx, args[0], c.stdout)
	}
	f, err := os.CreateTemp(dirOf(args[1]), ".kudurru-export-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after a successful rename, a no-op
	if err := c.api.Export(ctx, args[0], f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), args[1]); err != nil {
		return fmt.Errorf("export %s: %w", args[0], err)
	}
	return nil
}
