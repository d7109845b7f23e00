package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/kudurru/kudurru/cluster/httpapi/apiv1"
	"github.com/kudurru/kudurru/fsm"
	"github.com/kudurru/kudurru/fsm/zone"
)

// builder turns a parsed request into a command. It checks everything that
// does not depend on the zones' contents; the View it gets is used only for
// defaults (a set's current TTL). Its errors are the client's (400).
type builder func(v *zone.View) (*fsm.Command, error)

// current returns the local View, never nil.
func (s *Server) current() *zone.View {
	if v := s.b.Current(); v != nil {
		return v
	}
	return zone.Empty
}

// readBody reads the request body, bounded by MaxBodyBytes.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body := http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
	var buf bytes.Buffer
	if n := r.ContentLength; n > 0 && n <= s.cfg.MaxBodyBytes {
		buf.Grow(int(n))
	}
	if _, err := buf.ReadFrom(body); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, err
		}
		return nil, invalid("The request body could not be read: %v", err)
	}
	return buf.Bytes(), nil
}

// decodeJSON decodes one JSON value into v, refusing unknown fields and
// trailing data.
func decodeJSON(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return invalid("The request body is empty; this endpoint takes a JSON object (see docs/API.md).")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return invalid("The request body is not valid JSON for this endpoint: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return invalid("The request body has data after its JSON object.")
	}
	return nil
}

// write runs a zone write: it builds the command here (so a bad request is
// refused by the node that received it), then proposes it on the leader,
// forwarding the request there when this node does not lead.
func (s *Server) write(w http.ResponseWriter, r *http.Request, body []byte, status int, build builder) error {
	v := s.current()
	cmd, err := build(v)
	if err != nil {
		return err
	}
	return s.onLeader(w, r, body, true, func(w http.ResponseWriter, r *http.Request) error {
		if now := s.current(); now != v {
			// Defaults may depend on the View: build again from the newest.
			v = now
			if cmd, err = build(v); err != nil {
				return err
			}
		}
		return s.propose(w, r, status, v, cmd)
	})
}

// propose checks cmd against the View v (the leader's), proposes it and
// writes the result.
func (s *Server) propose(w http.ResponseWriter, r *http.Request, status int, v *zone.View, cmd *fsm.Command) error {
	if err := precheck(v, cmd); err != nil && !s.stale(v) {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.ProposeTimeout)
	defer cancel()
	res, err := s.b.Propose(ctx, cmd)
	if err != nil {
		return err
	}
	if res.Err != nil {
		return res.Err
	}
	w.Header().Set(apiv1.HeaderIndex, fmt.Sprint(res.Index))
	writeJSON(w, status, apiv1.WriteResult{Index: res.Index, Serial: res.Serial})
	return nil
}

// stale reports whether v may lag what the cluster has acknowledged, as a
// newly elected leader's View can for a moment. A precheck against a stale
// View could refuse a valid write (a false 409 for a compare-and-set: not
// linearizable), so then Apply alone decides. Two cases: the leader has
// not yet applied every entry of earlier terms since its election (its
// commit index itself may lag the previous leader's, so the indexes agree
// while the View misses acknowledged writes), or it has applied less than
// it knows to be committed. Raft's applied index counts the no-op and
// barrier entries that never reach the View, so it, not the View's index,
// is compared with the commit index.
func (s *Server) stale(_ *zone.View) bool {
	st := s.b.Status()
	return !st.LeaderEstablished || st.AppliedIndex < st.CommitIndex
}

// precheck runs the checks Apply will run, against v, so that a write that
// would fail does not take a log entry.
func precheck(v *zone.View, c *fsm.Command) error {
	switch c.Op {
	case fsm.OpCreateZone:
		if v.Zone(c.Zone) != nil {
			return fmt.Errorf("zone %s: %w", c.Zone, fsm.ErrZoneExists)
		}
	case fsm.OpDeleteZone:
		if v.Zone(c.Zone) == nil {
			return fmt.Errorf("zone %s: %w", c.Zone, fsm.ErrZoneNotFound)
		}
	case fsm.OpChange:
		z := v.Zone(c.Zone)
		if z == nil {
			return fmt.Errorf("zone %s: %w", c.Zone, fsm.ErrZoneNotFound)
		}
		if _, err := z.Apply(c.Changes); err != nil {
			return fmt.Errorf("zone %s: %w", c.Zone, err)
		}
	}
	return nil
}
