package fsm

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/kudurru/kudurru/fsm/zone"
	"github.com/miekg/dns"
)

// CommandVersion is the command encoding this binary writes and the newest it
// reads. An entry of a newer version is refused (the node is older than the
// leader that wrote it), never guessed at.
const CommandVersion = 1

// Op names a command.
type Op string

// The commands of the replicated log.
const (
	OpBootstrap    Op = "bootstrap"     // ClusterID: set once, by the first entry
	OpCreateZone   Op = "create_zone"   // Zone, Records (SOA + NS at least): fails if the zone exists
	OpImportZone   Op = "import_zone"   // Zone, Records: replaces the zone's content, creates it if absent
	OpDeleteZone   Op = "delete_zone"   // Zone
	OpChange       Op = "change"        // Zone, Changes: one atomic batch of RRset changes
	OpPutMember    Op = "put_member"    // Member: record a node's API address
	OpRemoveMember Op = "remove_member" // Member.ID
)

// Command is one entry of the replicated log. Records in it are parsed and
// validated at the API boundary; in the log they travel in wire format.
type Command struct {
	Op        Op
	ClusterID string
	Zone      string
	Records   []dns.RR
	Changes   []zone.Change
	Member    zone.Member
}

// ErrBadCommand marks a log entry that cannot be decoded.
var ErrBadCommand = errors.New("bad command encoding")

// ErrUnknownCommand marks a command whose Op this binary does not know.
var ErrUnknownCommand = errors.New("unknown command")

type wireChange struct {
	Op   zone.Op  `json:"op"`
	Name string   `json:"name"`
	Type uint16   `json:"type,omitempty"`
	TTL  uint32   `json:"ttl,omitempty"`
	RRs  [][]byte `json:"rrs,omitempty"`
}

type wireCommand struct {
	Op        Op           `json:"op"`
	ClusterID string       `json:"cluster_id,omitempty"`
	Zone      string       `json:"zone,omitempty"`
	Records   [][]byte     `json:"records,omitempty"`
	Changes   []wireChange `json:"changes,omitempty"`
	Member    *zone.Member `json:"member,omitempty"`
}

func packRRs(rrs []dns.RR) ([][]byte, error) {
	out := make([][]byte, len(rrs))
	for i, rr := range rrs {
		b := make([]byte, dns.Len(rr)+32)
		n, err := dns.PackRR(rr, b, 0, nil, false)
		if err != nil {
			return nil, fmt.Errorf("pack record %q: %w", rr.String(), err)
		}
		out[i] = b[:n]
	}
	return out, nil
}

func unpackRRs(in [][]byte) ([]dns.RR, error) {
	out := make([]dns.RR, len(in))
	for i, b := range in {
		rr, off, err := dns.UnpackRR(b, 0)
		if err != nil {
			return nil, fmt.Errorf("%w: record %d: %v", ErrBadCommand, i, err)
		}
		if off != len(b) || rr == nil {
			return nil, fmt.Errorf("%w: record %d: trailing bytes", ErrBadCommand, i)
		}
		out[i] = rr
	}
	return out, nil
}

// Encode returns the command in the versioned log encoding: one version
// byte, then JSON with records in wire format.
func (c *Command) Encode() ([]byte, error) {
	w := wireCommand{Op: c.Op, ClusterID: c.ClusterID, Zone: c.Zone}
	var err error
	if w.Records, err = packRRs(c.Records); err != nil {
		return nil, err
	}
	for _, ch := range c.Changes {
		wc := wireChange{Op: ch.Op, Name: ch.Name, Type: ch.Type, TTL: ch.TTL}
		if wc.RRs, err = packRRs(ch.RRs); err != nil {
			return nil, err
		}
		w.Changes = append(w.Changes, wc)
	}
	if c.Member != (zone.Member{}) {
		w.Member = &c.Member
	}
	body, err := json.Marshal(w)
	if err != nil {
		return nil, err
	}
	return append([]byte{CommandVersion}, body...), nil
}

// DecodeCommand parses a log entry written by Encode.
func DecodeCommand(b []byte) (*Command, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty entry", ErrBadCommand)
	}
	if b[0] > CommandVersion {
		return nil, fmt.Errorf("%w: command version %d is newer than this binary's %d; upgrade this node", ErrBadCommand, b[0], CommandVersion)
	}
	if b[0] == 0 {
		return nil, fmt.Errorf("%w: command version 0", ErrBadCommand)
	}
	var w wireCommand
	if err := json.Unmarshal(b[1:], &w); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadCommand, err)
	}
	c := &Command{Op: w.Op, ClusterID: w.ClusterID, Zone: w.Zone}
	var err error
	if c.Records, err = unpackRRs(w.Records); err != nil {
		return nil, err
	}
	for i, wc := range w.Changes {
		ch := zone.Change{Op: wc.Op, Name: wc.Name, Type: wc.Type, TTL: wc.TTL}
		if ch.RRs, err = unpackRRs(wc.RRs); err != nil {
			return nil, fmt.Errorf("change %d: %w", i+1, err)
		}
		c.Changes = append(c.Changes, ch)
	}
	if w.Member != nil {
		c.Member = *w.Member
	}
	switch c.Op {
	case OpBootstrap, OpCreateZone, OpImportZone, OpDeleteZone, OpChange, OpPutMember, OpRemoveMember:
	default:
		return nil, fmt.Errorf("%w: %q", ErrUnknownCommand, c.Op)
	}
	return c, nil
}
