package httpapi

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"strings"

	"github.com/kudurru/kudurru/fsm"
	"github.com/kudurru/kudurru/fsm/zone"
	"github.com/miekg/dns"
)

// importZone serves PUT /v1/zones/{zone}/import: an RFC 1035 master file
// that creates the zone or replaces all of its content.
func (s *Server) importZone(w http.ResponseWriter, r *http.Request) error {
	origin, err := zoneParam(r)
	if err != nil {
		return err
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var cmd *fsm.Command
	return s.write(w, r, body, http.StatusOK, func(*zone.View) (*fsm.Command, error) {
		if cmd == nil { // the command does not depend on the View: build it once
			if cmd, err = buildImport(origin, body); err != nil {
				return nil, err
			}
		}
		return cmd, nil
	})
}

// buildImport parses a master file into an import_zone command. Syntax
// errors name the line; records that break a zone rule are named.
func buildImport(origin string, body []byte) (*fsm.Command, error) {
	var rrs []dns.RR
	err := parseZoneText(bytes.NewReader(body), origin, defaultTTL, "zone file", func(rr dns.RR) error {
		name, err := zone.CanonicalName(rr.Header().Name)
		if err != nil {
			return fmt.Errorf("zone file: record %d (%s): %v", len(rrs)+1, rrText(rr), err)
		}
		if !zone.IsSubdomain(origin, name) {
			return fmt.Errorf("zone file: record %d (%s) is outside zone %s", len(rrs)+1, rrText(rr), origin)
		}
		rrs = append(rrs, rr)
		return nil
	})
	if err != nil {
		return nil, invalid("%v", err)
	}
	if len(rrs) == 0 {
		return nil, invalid("The zone file holds no records; a zone needs at least its SOA and NS records.")
	}
	if _, err := zone.NewZone(origin, rrs, 0, false); err != nil {
		return nil, invalid("zone file: %v", err)
	}
	return &fsm.Command{Op: fsm.OpImportZone, Zone: origin, Records: rrs}, nil
}

// exportZone serves GET /v1/zones/{zone}/export: the zone as a master file,
// SOA first, then every record in canonical order.
func (s *Server) exportZone(w http.ResponseWriter, r *http.Request) error {
	z, v, err := s.localZone(r)
	if err != nil {
		return err
	}
	setIndex(w, v)
	w.Header().Set("Content-Type", "text/dns; charset=utf-8")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", strings.TrimSuffix(z.Origin, ".")+".zone"))
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 64<<10)
	fmt.Fprintf(bw, "; zone %s serial %d, exported by node %s at index %d\n$ORIGIN %s\n",
		z.Origin, z.Serial(), s.b.NodeID(), v.Index, z.Origin)
	if soa := z.SOA(); soa != nil {
		fmt.Fprintln(bw, soa.String())
	}
	var werr error
	z.Walk(func(n *zone.Node) bool {
		for _, set := range n.RRsets() {
			if set.Type == dns.TypeSOA && n.Name == z.Origin {
				continue
			}
			for _, rr := range set.RRs {
				if _, werr = fmt.Fprintln(bw, rr.String()); werr != nil {
					return false
				}
			}
		}
		return true
	})
	if err := bw.Flush(); err != nil && werr == nil {
		werr = err
	}
	return werr
}
