package fsm

import (
	"errors"
	"fmt"

	"github.com/kudurru/kudurru/fsm/zone"
)

// Errors a command can end with. They are the outcome of a committed entry:
// the entry is in the log and changed nothing.
var (
	ErrZoneExists      = errors.New("zone already exists")
	ErrZoneNotFound    = errors.New("zone not found")
	ErrClusterMismatch = errors.New("entry belongs to another cluster")
	ErrNotBootstrapped = errors.New("cluster has no ID yet")
)

// Result is what Apply returns for each command entry, and what
// raft.ApplyFuture.Response carries back to the proposer.
type Result struct {
	Index  uint64 // the entry's log index
	Serial uint32 // the zone's serial after the entry (zone commands)
	Err    error  // why the entry changed nothing, or nil
}

// applyCommand applies one decoded command to the View under construction.
// It must be deterministic.
func applyCommand(b *zone.Builder, c *Command) (uint32, error) {
	v := b.Current()
	if c.Op != OpBootstrap && v.ClusterID == "" {
		return 0, ErrNotBootstrapped
	}
	switch c.Op {
	case OpBootstrap:
		switch v.ClusterID {
		case "":
			if c.ClusterID == "" {
				return 0, fmt.Errorf("bootstrap: %w: empty cluster ID", zone.ErrInvalid)
			}
			b.SetClusterID(c.ClusterID)
		case c.ClusterID:
		default:
			return 0, fmt.Errorf("bootstrap %s: %w %s", c.ClusterID, ErrClusterMismatch, v.ClusterID)
		}
		return 0, nil
	case OpCreateZone, OpImportZone:
		origin, err := zone.CanonicalName(c.Zone)
		if err != nil {
			return 0, fmt.Errorf("%w: %v", zone.ErrInvalid, err)
		}
		prevSerial, prev := v.Tombstone(origin)
		if old := v.Zone(origin); old != nil {
			if c.Op == OpCreateZone {
				return 0, fmt.Errorf("create zone %s: %w", origin, ErrZoneExists)
			}
			prevSerial, prev = old.Serial(), true
		}
		z, err := zone.NewZone(origin, c.Records, prevSerial, prev)
		if err != nil {
			return 0, fmt.Errorf("%s zone %s: %w", c.Op, origin, err)
		}
		b.PutZone(z)
		return z.Serial(), nil
	case OpDeleteZone:
		origin, err := zone.CanonicalName(c.Zone)
		if err != nil {
			return 0, fmt.Errorf("%w: %v", zone.ErrInvalid, err)
		}
		z := v.Zone(origin)
		if z == nil {
			return 0, fmt.Errorf("delete zone %s: %w", origin, ErrZoneNotFound)
		}
		b.DeleteZone(origin)
		return z.Serial(), nil
	case OpChange:
		origin, err := zone.CanonicalName(c.Zone)
		if err != nil {
			return 0, fmt.Errorf("%w: %v", zone.ErrInvalid, err)
		}
		z := v.Zone(origin)
		if z == nil {
			return 0, fmt.Errorf("change zone %s: %w", origin, ErrZoneNotFound)
		}
		nz, err := z.Apply(c.Changes)
		if err != nil {
			return 0, fmt.Errorf("change zone %s: %w", origin, err)
		}
		b.PutZone(nz)
		return nz.Serial(), nil
	case OpPutMember:
		if c.Member.ID == "" {
			return 0, fmt.Errorf("put member: %w: empty node ID", zone.ErrInvalid)
		}
		b.PutMember(c.Member)
		return 0, nil
	case OpRemoveMember:
		b.DeleteMember(c.Member.ID)
		return 0, nil
	}
	return 0, fmt.Errorf("%w: %q", ErrUnknownCommand, c.Op)
}
