package httpapi

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/kudurru/kudurru/cluster/httpapi/apiv1"
	"github.com/kudurru/kudurru/fsm"
	"github.com/kudurru/kudurru/fsm/zone"
)

// listZones serves GET /v1/zones from the local View.
func (s *Server) listZones(w http.ResponseWriter, r *http.Request) error {
	v := s.current()
	out := apiv1.ZoneList{Zones: make([]apiv1.ZoneSummary, 0, v.Len())}
	for _, z := range v.Zones() {
		out.Zones = append(out.Zones, apiv1.ZoneSummary{Name: z.Origin, Serial: z.Serial(), Records: z.Records()})
	}
	setIndex(w, v)
	writeJSON(w, http.StatusOK, out)
	return nil
}

// getZone serves GET /v1/zones/{zone}: the zone with every RRset, streamed
// so that a large zone is not built in memory twice.
func (s *Server) getZone(w http.ResponseWriter, r *http.Request) error {
	z, v, err := s.localZone(r)
	if err != nil {
		return err
	}
	setIndex(w, v)
	head := fmt.Sprintf(`{"name":%s,"serial":%d,"records":%d,"rrsets":`, jsonString(z.Origin), z.Serial(), z.Records())
	return writeRRsets(w, head, func(yield func(*zone.RRset) bool) {
		z.Walk(func(n *zone.Node) bool {
			for _, set := range n.RRsets() {
				if !yield(set) {
					return false
				}
			}
			return true
		})
	})
}

// localZone returns the zone named in the path from the local View.
func (s *Server) localZone(r *http.Request) (*zone.Zone, *zone.View, error) {
	origin, err := zoneParam(r)
	if err != nil {
		return nil, nil, err
	}
	v := s.current()
	z := v.Zone(origin)
	if z == nil {
		return nil, nil, fmt.Errorf("zone %s: %w", origin, fsm.ErrZoneNotFound)
	}
	return z, v, nil
}

// createZone serves POST /v1/zones.
func (s *Server) createZone(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var req apiv1.CreateZone
	if err := decodeJSON(body, &req); err != nil {
		return err
	}
	return s.write(w, r, body, http.StatusCreated, func(*zone.View) (*fsm.Command, error) {
		return buildCreate(req)
	})
}

// deleteZone serves DELETE /v1/zones/{zone}.
func (s *Server) deleteZone(w http.ResponseWriter, r *http.Request) error {
	origin, err := zoneParam(r)
	if err != nil {
		return err
	}
	return s.write(w, r, nil, http.StatusOK, func(*zone.View) (*fsm.Command, error) {
		return &fsm.Command{Op: fsm.OpDeleteZone, Zone: origin}, nil
	})
}

// setIndex tells the client which applied index a read was served from.
func setIndex(w http.ResponseWriter, v *zone.View) {
	w.Header().Set(apiv1.HeaderIndex, strconv.FormatUint(v.Index, 10))
}

// jsonString returns s as a JSON string literal.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// writeRRsets writes head, then a JSON array of the sets visit yields, then
// closes the object head opened.
func writeRRsets(w http.ResponseWriter, head string, visit func(yield func(*zone.RRset) bool)) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 64<<10)
	_, _ = bw.WriteString(head + "[")
	first := true
	var werr error
	visit(func(set *zone.RRset) bool {
		b, err := json.Marshal(rrsetJSON(set))
		if err != nil {
			werr = err
			return false
		}
		if !first {
			_ = bw.WriteByte(',')
		}
		first = false
		if _, werr = bw.Write(b); werr != nil {
			return false
		}
		return true
	})
	_, _ = bw.WriteString("]}\n")
	if err := bw.Flush(); err != nil && werr == nil {
		werr = err
	}
	return werr
}

// rrsetJSON returns the API form of a set.
func rrsetJSON(set *zone.RRset) apiv1.RRset {
	out := apiv1.RRset{Name: set.Name, Type: typeName(set.Type), TTL: set.TTL, Records: make([]string, len(set.RRs))}
	for i, rr := range set.RRs {
		out.Records[i] = rdataText(rr)
	}
	return out
}
