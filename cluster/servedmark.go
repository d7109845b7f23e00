package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"sync"

	"github.com/hashicorp/raft"
	"github.com/kudurru/kudurru/fsm"
	"github.com/kudurru/kudurru/fsm/zone"
)

// The served mark is the cluster ID and index of the newest View this node
// has served, recorded just before each View is published (fsm.Config's
// BeforePublish). local.db is refreshed only after a debounce, so after a
// crash it can be older than what DNS clients already saw; on start, the
// node replays its own log from local.db's (or the snapshot's) index up to
// the mark, so it never serves older data than it did before (I2). Every
// entry up to the mark was applied here, hence committed, and is in the
// node's own log unless compacted into a newer snapshot.
//
// The file is rewritten in place with one pwrite and no fsync: it survives
// a crash of the process (the kernel holds the page), not of the machine.
// After a power loss the mark may be older than what was served; what is
// served then is still committed data, only possibly older.
//
// Layout: "KDRM", version 1, index (uint64 BE), cluster ID length (uint8),
// cluster ID, CRC-32C of the bytes before it.
const (
	servedMarkFile    = "served.mark"
	servedMarkVersion = 1
	maxClusterIDLen   = 255
)

var servedMarkMagic = [4]byte{'K', 'D', 'R', 'M'}

type servedMark struct {
	mu  sync.Mutex // guards f and buf
	f   *os.File
	buf []byte
}

func openServedMark(path string) (*servedMark, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return &servedMark{f: f}, nil
}

// read returns the recorded mark. A missing, damaged or foreign-format file
// reads as no mark, with an error saying why.
func (m *servedMark) read() (cid string, index uint64, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := make([]byte, 4+1+8+1+maxClusterIDLen+4)
	n, err := m.f.ReadAt(b, 0)
	if n == 0 {
		return "", 0, nil // a new file: nothing served yet
	}
	b = b[:n]
	if len(b) < 18 || [4]byte(b[:4]) != servedMarkMagic || b[4] != servedMarkVersion {
		return "", 0, errors.New("served mark: not a kudurru served-index file of version 1")
	}
	l := int(b[13])
	if len(b) < 14+l+4 {
		return "", 0, errors.New("served mark: truncated")
	}
	if crc32.Checksum(b[:14+l], castagnoli) != binary.BigEndian.Uint32(b[14+l:]) {
		return "", 0, errors.New("served mark: checksum mismatch")
	}
	return string(b[14 : 14+l]), binary.BigEndian.Uint64(b[5:13]), nil
}

// write records v as served. It runs on the FSM's publication path: one
// pwrite, no allocation once the buffer has grown.
func (m *servedMark) write(v *zone.View) {
	if len(v.ClusterID) > maxClusterIDLen {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	b := append(m.buf[:0], servedMarkMagic[:]...)
	b = append(b, servedMarkVersion)
	b = binary.BigEndian.AppendUint64(b, v.Index)
	b = append(b, byte(len(v.ClusterID)))
	b = append(b, v.ClusterID...)
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	m.buf = b
	_, _ = m.f.WriteAt(b, 0) // best effort: on failure the mark stays older, which is safe
}

func (m *servedMark) close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.f.Close()
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// replayToMark rebuilds the View this node served before it stopped: from
// base (local.db's View of this cluster, or Raft's restored snapshot,
// whichever is newer) it applies the node's own log entries up to the served
// mark. It returns nil when there is nothing to replay or the entries are no
// longer in the log.
func replayToMark(logs raft.LogStore, base *zone.View, cid string, mark uint64) (*zone.View, error) {
	if base == nil || cid == "" || base.ClusterID != cid || mark <= base.Index {
		return nil, nil
	}
	first, err := logs.FirstIndex()
	if err != nil {
		return nil, err
	}
	last, err := logs.LastIndex()
	if err != nil {
		return nil, err
	}
	if first == 0 || first > base.Index+1 {
		return nil, fmt.Errorf("log starts at %d, after the base View's index %d: cannot replay", first, base.Index)
	}
	if mark > last {
		mark = last // the mark cannot be newer than this node's log; be safe
	}
	entries := make([]*raft.Log, 0, mark-base.Index)
	for i := base.Index + 1; i <= mark; i++ {
		l := new(raft.Log)
		if err := logs.GetLog(i, l); err != nil {
			return nil, fmt.Errorf("read log entry %d: %w", i, err)
		}
		entries = append(entries, l)
	}
	return fsm.Replay(base, entries), nil
}
