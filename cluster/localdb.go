package cluster

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/kudurru/kudurru/fsm/zone"
	"go.etcd.io/bbolt"
)

// local.db is the node's own copy of the last View it served, so that a
// node restarted without quorum can answer from it (see DESIGN.md). It is a
// bbolt file with three buckets:
//
//	meta   layout (uint32 BE), cluster_id, index (uint64 BE), members (JSON),
//	       tombstones (JSON: origin -> last serial of each deleted zone)
//	zones  canonical origin -> zone.EncodeZone (versioned, checksummed)
//	blobs  name -> bytes, for other node-local state (the DNS cache dump)
//
// Tombstones of deleted zones are kept so that a View loaded from local.db
// has the same content hash as Raft's View at the same index.
const localLayoutVersion = 1

var (
	bucketMeta   = []byte("meta")
	bucketZones  = []byte("zones")
	bucketBlobs  = []byte("blobs")
	keyLayout    = []byte("layout")
	keyClusterID = []byte("cluster_id")
	keyIndex     = []byte("index")
	keyMembers   = []byte("members")
	keyTombs     = []byte("tombstones")
)

var (
	errLocalDamaged = errors.New("local.db is damaged")
	errLocalNewer   = errors.New("local.db was written by a newer kudurru")
)

type localDB struct {
	path string
	log  *slog.Logger
	db   *bbolt.DB

	mu      sync.Mutex // guards cid, index and written, and serialises refreshes
	cid     string     // cluster ID of what the file holds
	index   uint64     // applied index of what the file holds
	written map[string]writtenZone
}

// writtenZone remembers what local.db holds for one zone.
type writtenZone struct {
	z      *zone.Zone
	serial uint32
	loaded bool // read from the file at open rather than written from memory
}

type localMember struct {
	ID      string `json:"id"`
	APIAddr string `json:"api_addr"`
}

// openLocalDB opens (or creates) local.db and returns the View it holds, or
// nil when it holds none. A damaged file, or one of a newer layout, is
// logged, moved aside and replaced by an empty one. The only errors are
// those that make the data dir unusable: the file is locked by another
// process, or it cannot be moved aside.
func openLocalDB(path string, log *slog.Logger) (*localDB, *zone.View, error) {
	l := &localDB{path: path, log: log}
	v, err := l.openAndLoad()
	if err == nil {
		return l, v, nil
	}
	if errors.Is(err, bbolt.ErrTimeout) {
		return nil, nil, fmt.Errorf("open %s: locked by another process: %w", path, err)
	}
	reason := "damaged"
	if errors.Is(err, errLocalNewer) {
		reason = "newer"
	}
	aside := fmt.Sprintf("%s.%s-%s", path, reason, time.Now().UTC().Format("20060102T150405.000Z"))
	if rerr := os.Rename(path, aside); rerr != nil {
		return nil, nil, fmt.Errorf("move unusable %s aside: %w (it was unusable because: %v)", path, rerr, err)
	}
	log.Error("local.db is unusable and was moved aside; starting with an empty one",
		"path", path, "moved_to", aside, "err", err)
	if _, err := l.openAndLoad(); err != nil {
		return nil, nil, fmt.Errorf("create %s: %w", path, err)
	}
	return l, nil, nil
}

// openAndLoad opens the file, checks its layout and decodes it, reading
// every page it will use later. bbolt may panic on a damaged page, and a
// truncated file makes reads of the memory map fault (SIGBUS): with
// SetPanicOnFault both become a panic on this goroutine, turned here into
// errLocalDamaged.
func (l *localDB) openAndLoad() (v *zone.View, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", errLocalDamaged, r)
		}
		if err != nil && l.db != nil {
			_ = l.db.Close()
			l.db = nil
		}
	}()
	db, err := bbolt.Open(l.path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		if errors.Is(err, bbolt.ErrTimeout) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", errLocalDamaged, err)
	}
	l.db = db
	if err := db.Update(initLayout); err != nil {
		return nil, err
	}
	err = db.View(func(tx *bbolt.Tx) error {
		// Touch every blob, so a damaged page faults here and not later on
		// another goroutine, where it would crash the process.
		crc := crc32.NewIEEE()
		if err := tx.Bucket(bucketBlobs).ForEach(func(k, val []byte) error {
			_, _ = crc.Write(val)
			return nil
		}); err != nil {
			return fmt.Errorf("%w: blobs: %v", errLocalDamaged, err)
		}
		v, err = l.load(tx)
		return err
	})
	return v, err
}

// initLayout creates the buckets of a new file and checks the layout of an
// existing one.
func initLayout(tx *bbolt.Tx) error {
	meta, err := tx.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return fmt.Errorf("%w: meta bucket: %v", errLocalDamaged, err)
	}
	switch b := meta.Get(keyLayout); {
	case b == nil:
		if zb := tx.Bucket(bucketZones); zb != nil {
			if k, _ := zb.Cursor().First(); k != nil {
				return fmt.Errorf("%w: zones without a layout version", errLocalDamaged)
			}
		}
		if err := meta.Put(keyLayout, binary.BigEndian.AppendUint32(nil, localLayoutVersion)); err != nil {
			return err
		}
	case len(b) != 4 || binary.BigEndian.Uint32(b) == 0:
		return fmt.Errorf("%w: layout version %x", errLocalDamaged, b)
	case binary.BigEndian.Uint32(b) > localLayoutVersion:
		return fmt.Errorf("%w: layout version %d, this binary reads up to %d", errLocalNewer, binary.BigEndian.Uint32(b), localLayoutVersion)
	}
	for _, name := range [][]byte{bucketZones, bucketBlobs} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("%w: %s bucket: %v", errLocalDamaged, name, err)
		}
	}
	return nil
}

// load decodes the View the file holds, or returns nil when it holds none.
func (l *localDB) load(tx *bbolt.Tx) (*zone.View, error) {
	meta, zb := tx.Bucket(bucketMeta), tx.Bucket(bucketZones)
	cid, ib := string(meta.Get(keyClusterID)), meta.Get(keyIndex)
	if cid == "" && ib == nil {
		if k, _ := zb.Cursor().First(); k != nil {
			return nil, fmt.Errorf("%w: zones without a cluster ID", errLocalDamaged)
		}
		return nil, nil
	}
	if cid == "" || len(ib) != 8 {
		return nil, fmt.Errorf("%w: meta: cluster ID %q, index %x", errLocalDamaged, cid, ib)
	}
	b := zone.Empty.Edit()
	b.SetClusterID(cid)
	b.SetIndex(binary.BigEndian.Uint64(ib))
	if mb := meta.Get(keyMembers); mb != nil {
		var ms []localMember
		if err := json.Unmarshal(mb, &ms); err != nil {
			return nil, fmt.Errorf("%w: members: %v", errLocalDamaged, err)
		}
		for _, m := range ms {
			b.PutMember(zone.Member{ID: m.ID, APIAddr: m.APIAddr})
		}
	}
	if tb := meta.Get(keyTombs); tb != nil {
		var tombs map[string]uint32
		if err := json.Unmarshal(tb, &tombs); err != nil {
			return nil, fmt.Errorf("%w: tombstones: %v", errLocalDamaged, err)
		}
		for origin, serial := range tombs {
			b.SetTombstone(origin, serial)
		}
	}
	written := make(map[string]writtenZone)
	err := zb.ForEach(func(k, val []byte) error {
		z, err := zone.DecodeZone(val)
		switch {
		case errors.Is(err, zone.ErrNewerFormat):
			return fmt.Errorf("%w: zone %s: %v", errLocalNewer, k, err)
		case err != nil:
			return fmt.Errorf("%w: zone %s: %v", errLocalDamaged, k, err)
		case z.Origin != string(k):
			return fmt.Errorf("%w: zone %s stored under key %q", errLocalDamaged, z.Origin, k)
		}
		b.PutZone(z)
		written[z.Origin] = writtenZone{z: z, serial: z.Serial(), loaded: true}
		return nil
	})
	if err != nil {
		return nil, err
	}
	v := b.View()
	l.cid, l.index, l.written = v.ClusterID, v.Index, written
	return v, nil
}

// holds returns the cluster ID and index of what the file holds.
func (l *localDB) holds() (string, uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cid, l.index
}

// refresh makes the file hold v, in one transaction: it writes the zones
// whose *Zone changed since the last refresh (every zone when the cluster ID
// changes), deletes the zones v no longer has, and updates meta. It returns
// how many zones it wrote. On error the file is unchanged, and the next
// refresh writes everything this one would have.
func (l *localDB) refresh(v *zone.View) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	full := v.ClusterID != l.cid
	prev := l.written
	if full {
		prev = nil
	}
	next := make(map[string]writtenZone, v.Len())
	type put struct {
		key  []byte
		data []byte
	}
	var puts []put
	// Encode outside the transaction, so a large zone does not hold the
	// write lock that PutBlob also needs.
	for _, z := range v.Zones() {
		next[z.Origin] = writtenZone{z: z, serial: z.Serial()}
		if w, ok := prev[z.Origin]; ok && (w.z == z || w.loaded && w.serial == z.Serial()) {
			// Unchanged. A zone loaded from the file is matched by serial:
			// within one cluster every committed change raises the serial,
			// so the same origin and serial is the same content.
			continue
		}
		data, err := zone.EncodeZone(z)
		if err != nil {
			return 0, fmt.Errorf("encode zone %s: %w", z.Origin, err)
		}
		puts = append(puts, put{[]byte(z.Origin), data})
	}
	ms := make([]localMember, 0)
	for _, m := range v.Members() {
		ms = append(ms, localMember{ID: m.ID, APIAddr: m.APIAddr})
	}
	members, err := json.Marshal(ms)
	if err != nil {
		return 0, err
	}
	tombs, err := json.Marshal(v.Tombstones())
	if err != nil {
		return 0, err
	}
	err = l.db.Update(func(tx *bbolt.Tx) error {
		zb := tx.Bucket(bucketZones)
		if full {
			if err := tx.DeleteBucket(bucketZones); err != nil {
				return err
			}
			if zb, err = tx.CreateBucket(bucketZones); err != nil {
				return err
			}
		}
		for origin := range prev {
			if _, ok := next[origin]; !ok {
				if err := zb.Delete([]byte(origin)); err != nil {
					return err
				}
			}
		}
		for _, p := range puts {
			if err := zb.Put(p.key, p.data); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bucketMeta)
		if err := meta.Put(keyClusterID, []byte(v.ClusterID)); err != nil {
			return err
		}
		if err := meta.Put(keyIndex, binary.BigEndian.AppendUint64(nil, v.Index)); err != nil {
			return err
		}
		if err := meta.Put(keyTombs, tombs); err != nil {
			return err
		}
		return meta.Put(keyMembers, members)
	})
	if err != nil {
		return 0, fmt.Errorf("write %s: %w", l.path, err)
	}
	l.cid, l.index, l.written = v.ClusterID, v.Index, next
	return len(puts), nil
}

func (l *localDB) putBlob(name string, data []byte) error {
	if name == "" {
		return errors.New("put blob: empty name")
	}
	err := l.db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketBlobs).Put([]byte(name), data)
	})
	if err != nil {
		return fmt.Errorf("put blob %q: %w", name, err)
	}
	return nil
}

func (l *localDB) getBlob(name string) ([]byte, error) {
	var out []byte
	err := l.db.View(func(tx *bbolt.Tx) error {
		if b := tx.Bucket(bucketBlobs).Get([]byte(name)); b != nil {
			out = append([]byte{}, b...)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("get blob %q: %w", name, err)
	}
	return out, nil
}

func (l *localDB) close() error { return l.db.Close() }
