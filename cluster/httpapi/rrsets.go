package httpapi

import (
	"fmt"
	"net/http"

	"github.com/kudurru/kudurru/cluster/httpapi/apiv1"
	"github.com/kudurru/kudurru/fsm"
	"github.com/kudurru/kudurru/fsm/zone"
)

// getRRsets serves GET /v1/zones/{zone}/rrsets?name=&type= from the local
// View. Without filters it lists every set of the zone.
func (s *Server) getRRsets(w http.ResponseWriter, r *http.Request) error {
	z, v, err := s.localZone(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	var want uint16
	if t := q.Get("type"); t != "" {
		if want, err = parseType(t); err != nil {
			return invalid("type: %v", err)
		}
	}
	match := func(set *zone.RRset) bool { return want == 0 || set.Type == want }
	visit := func(yield func(*zone.RRset) bool) {
		z.Walk(func(n *zone.Node) bool {
			for _, set := range n.RRsets() {
				if match(set) && !yield(set) {
					return false
				}
			}
			return true
		})
	}
	if q.Has("name") {
		name, err := ownerName(z.Origin, q.Get("name"))
		if err != nil {
			return invalid("name: %v", err)
		}
		n := z.Get(name)
		visit = func(yield func(*zone.RRset) bool) {
			for _, set := range n.RRsets() {
				if match(set) && !yield(set) {
					return
				}
			}
		}
	}
	setIndex(w, v)
	head := fmt.Sprintf(`{"zone":%s,"serial":%d,"rrsets":`, jsonString(z.Origin), z.Serial())
	return writeRRsets(w, head, visit)
}

// patchRRsets serves PATCH /v1/zones/{zone}/rrsets: one atomic batch of
// changes.
func (s *Server) patchRRsets(w http.ResponseWriter, r *http.Request) error {
	origin, err := zoneParam(r)
	if err != nil {
		return err
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var req apiv1.Patch
	if err := decodeJSON(body, &req); err != nil {
		return err
	}
	return s.write(w, r, body, http.StatusOK, func(v *zone.View) (*fsm.Command, error) {
		return buildPatch(origin, v.Zone(origin), req)
	})
}

// changeOps maps the API's operation names to the zone package's.
var changeOps = map[string]zone.Op{
	apiv1.OpReplace:    zone.OpReplace,
	apiv1.OpDelete:     zone.OpDeleteRRset,
	apiv1.OpDeleteName: zone.OpDeleteName,
	apiv1.OpAdd:        zone.OpAdd,
	apiv1.OpRemove:     zone.OpRemove,
	apiv1.OpCheck:      zone.OpCheck,
}

// buildPatch turns a PATCH batch into a change command. z, the zone as this
// node knows it (nil if unknown here), only supplies the TTL of a set that a
// change without one adds to or replaces.
func buildPatch(origin string, z *zone.Zone, req apiv1.Patch) (*fsm.Command, error) {
	if len(req.Changes) == 0 {
		return nil, invalid("changes: the batch is empty; give at least one change.")
	}
	out := &fsm.Command{Op: fsm.OpChange, Zone: origin, Changes: make([]zone.Change, 0, len(req.Changes))}
	for i, c := range req.Changes {
		ch, err := buildChange(origin, z, c)
		if err != nil {
			return nil, invalid("changes[%d]: %v", i, err)
		}
		nc, err := zone.Normalize(origin, ch)
		if err != nil {
			return nil, invalid("changes[%d]: %v", i, err)
		}
		out.Changes = append(out.Changes, nc)
	}
	return out, nil
}

// buildChange parses one change of a batch.
func buildChange(origin string, z *zone.Zone, c apiv1.Change) (zone.Change, error) {
	op, ok := changeOps[c.Op]
	if !ok {
		return zone.Change{}, fmt.Errorf("unknown op %q; use replace, delete, delete_name, add, remove or check", c.Op)
	}
	name, err := ownerName(origin, c.Name)
	if err != nil {
		return zone.Change{}, fmt.Errorf("name: %v", err)
	}
	ch := zone.Change{Op: op, Name: name}
	if op == zone.OpDeleteName {
		if c.Type != "" || c.TTL != nil || len(c.Records) > 0 {
			return zone.Change{}, fmt.Errorf("delete_name deletes every set at a name and takes only the name")
		}
		return ch, nil
	}
	if ch.Type, err = parseType(c.Type); err != nil {
		return zone.Change{}, fmt.Errorf("type: %v", err)
	}
	switch op {
	case zone.OpDeleteRRset:
		if len(c.Records) > 0 || c.TTL != nil {
			return zone.Change{}, fmt.Errorf("delete deletes the whole set and takes no records or ttl; use remove to remove some records")
		}
		return ch, nil
	case zone.OpCheck:
		if c.TTL != nil {
			return zone.Change{}, fmt.Errorf("check compares records and takes no ttl")
		}
	case zone.OpReplace, zone.OpAdd, zone.OpRemove:
		if len(c.Records) == 0 {
			return zone.Change{}, fmt.Errorf("%s needs at least one record", c.Op)
		}
	}
	ttl := uint32(defaultTTL)
	switch {
	case c.TTL != nil:
		ttl = *c.TTL
	case z != nil:
		if set := z.Get(name).RRset(ch.Type); set != nil {
			ttl = set.TTL
		}
	}
	if op != zone.OpRemove && op != zone.OpCheck {
		ch.TTL = ttl
	}
	for j, text := range c.Records {
		rr, err := parseRecord(origin, name, ttl, ch.Type, text)
		if err != nil {
			return zone.Change{}, fmt.Errorf("records[%d]: %v", j, err)
		}
		if rr.Header().Rrtype != ch.Type {
			return zone.Change{}, fmt.Errorf("records[%d]: %q is a %s record, not %s", j, text, typeName(rr.Header().Rrtype), typeName(ch.Type))
		}
		ch.RRs = append(ch.RRs, rr)
	}
	return ch, nil
}
