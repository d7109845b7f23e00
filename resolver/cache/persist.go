package cache

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"time"

	"github.com/miekg/dns"
)

// Dump format, version 1. All integers are big endian.
//
//	header (28 bytes, never compressed)
//	  magic      [8]byte  "KDRCACHE"
//	  version    uint16   1
//	  flags      uint16   bit 0: body is gzip
//	  reserved   uint32   0
//	  written_at int64    Unix nanoseconds
//	  header_crc uint32   CRC-32C of the 24 bytes above
//	body (gzip when flagged)
//	  record*    uint32 length (> 0), then length bytes:
//	               key_flags uint8 (bit 0 DO, bit 1 CD)
//	               stored    int64 Unix nanoseconds
//	               wire      packed response as stored (TTLs clamped)
//	  end        uint32 0
//	  count      uint32 number of records
//	  body_crc   uint32 CRC-32C of every record's length and bytes
//
// A record does not carry its key or expiry: both follow from the packed
// response, which Load walks again, so a damaged record cannot produce an
// entry whose key and answer disagree.

const (
	dumpMagic      = "KDRCACHE"
	dumpVersion    = 1
	dumpFlagGzip   = 1 << 0
	dumpFlagsKnown = dumpFlagGzip
	dumpHeaderLen  = 28
	recordFixed    = 1 + 8
	maxRecord      = recordFixed + maxMsgLen
	// futureSlack is how far in the future a dump's written-at time may be
	// (clock steps between two runs) before the dump is refused.
	futureSlack = time.Minute
)

// Errors returned by Load; the returned error wraps one of them.
var (
	// ErrFormat means the blob is not a kudurru cache dump.
	ErrFormat = errors.New("not a kudurru cache dump")
	// ErrVersion means the dump is of a newer format than this binary reads.
	ErrVersion = errors.New("unsupported cache dump version")
	// ErrCorrupt means the dump is damaged: checksum, length or content.
	ErrCorrupt = errors.New("cache dump is damaged")
	// ErrTooOld means the dump was written longer than PersistMaxAge ago.
	ErrTooOld = errors.New("cache dump is too old")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Stats reports what Load did.
type Stats struct {
	WrittenAt time.Time
	// Loaded entries were stored.
	Loaded int
	// Expired entries expired during the downtime and were skipped.
	Expired int
	// Skipped entries were valid but not stored: not cacheable under the
	// current configuration, larger than a shard, or older than an entry
	// already present.
	Skipped int
}

// Dump writes every fresh entry (SERVFAIL entries excepted) to w as one blob.
// It holds no lock while writing: it copies the entry pointers shard by shard
// (entries never change once stored) and then encodes them.
func (c *Cache) Dump(w io.Writer) error {
	now := c.nowNano()
	var entries []*entry
	for _, s := range c.shards {
		entries = s.snapshot(entries, func(e *entry) bool {
			return e.kind != kindServfail && e.fresh(now)
		})
	}

	var flags uint16
	if c.cfg.PersistGzip {
		flags |= dumpFlagGzip
	}
	hdr := make([]byte, 0, dumpHeaderLen)
	hdr = append(hdr, dumpMagic...)
	hdr = binary.BigEndian.AppendUint16(hdr, dumpVersion)
	hdr = binary.BigEndian.AppendUint16(hdr, flags)
	hdr = binary.BigEndian.AppendUint32(hdr, 0)
	hdr = binary.BigEndian.AppendUint64(hdr, uint64(now))
	hdr = binary.BigEndian.AppendUint32(hdr, crc32.Checksum(hdr, castagnoli))
	if _, err := w.Write(hdr); err != nil {
		return fmt.Errorf("dump cache: write header: %w", err)
	}

	bw := bufio.NewWriterSize(w, 64<<10)
	var body io.Writer = bw
	var zw *gzip.Writer
	if c.cfg.PersistGzip {
		zw, _ = gzip.NewWriterLevel(bw, gzip.BestSpeed) // level is valid
		body = zw
	}
	crc := crc32.New(castagnoli)
	var buf []byte
	for _, e := range entries {
		buf = binary.BigEndian.AppendUint32(buf[:0], uint32(recordFixed+len(e.wire)))
		buf = append(buf, e.key[len(e.key)-1])
		buf = binary.BigEndian.AppendUint64(buf, uint64(e.stored))
		buf = append(buf, e.wire...)
		crc.Write(buf)
		if _, err := body.Write(buf); err != nil {
			return fmt.Errorf("dump cache: write record: %w", err)
		}
	}
	buf = binary.BigEndian.AppendUint32(buf[:0], 0)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(entries)))
	buf = binary.BigEndian.AppendUint32(buf, crc.Sum32())
	if _, err := body.Write(buf); err != nil {
		return fmt.Errorf("dump cache: write trailer: %w", err)
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			return fmt.Errorf("dump cache: compress: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("dump cache: flush: %w", err)
	}
	return nil
}

// Load reads a blob written by Dump and stores its entries, skipping those
// that expired before now. It refuses, with an error wrapping ErrFormat,
// ErrVersion, ErrCorrupt or ErrTooOld, a blob of another format, a newer
// version, a damaged one or one older than PersistMaxAge; on any error the cache
// is left unchanged. Entries already present and newer than the dumped ones
// are kept.
func (c *Cache) Load(r io.Reader, now time.Time) (Stats, error) {
	if c.closed.Load() {
		return Stats{}, errors.New("load cache dump: cache is closed")
	}
	pending, st, err := c.decode(r, now)
	if err != nil {
		return Stats{}, fmt.Errorf("load cache dump: %w", err)
	}
	nowNs := now.UnixNano()
	olderLoses := func(old, e *entry) bool {
		return old == nil || old.key != e.key || old.stored < e.stored
	}
	for _, e := range pending {
		if c.shardFor(e.hash).put(e, nowNs, c.staleWindow, olderLoses) {
			st.Loaded++
		} else {
			st.Skipped++
		}
	}
	return st, nil
}

// decode parses and checks a whole dump without touching the cache.
func (c *Cache) decode(r io.Reader, now time.Time) ([]*entry, Stats, error) {
	var st Stats
	hdr := make([]byte, dumpHeaderLen)
	if n, err := io.ReadFull(r, hdr); err != nil {
		if n < len(dumpMagic) || string(hdr[:len(dumpMagic)]) != dumpMagic {
			return nil, st, fmt.Errorf("%w: %d-byte blob", ErrFormat, n)
		}
		return nil, st, fmt.Errorf("%w: header cut short at %d bytes", ErrCorrupt, n)
	}
	if string(hdr[:len(dumpMagic)]) != dumpMagic {
		return nil, st, fmt.Errorf("%w: magic %q", ErrFormat, hdr[:len(dumpMagic)])
	}
	// The version comes first: a newer format may lay out the rest of its
	// header differently, and is refused as newer, not as damaged.
	version, flags := be16(hdr[8:]), be16(hdr[10:])
	if version > dumpVersion {
		return nil, st, fmt.Errorf("%w: version %d, this binary reads up to %d", ErrVersion, version, dumpVersion)
	}
	if got, want := be32(hdr[24:]), crc32.Checksum(hdr[:24], castagnoli); got != want {
		return nil, st, fmt.Errorf("%w: header checksum %08x, want %08x", ErrCorrupt, got, want)
	}
	switch {
	case version == 0:
		return nil, st, fmt.Errorf("%w: version 0", ErrCorrupt)
	case flags&^dumpFlagsKnown != 0:
		return nil, st, fmt.Errorf("%w: unknown flags %#04x", ErrVersion, flags)
	case be32(hdr[12:]) != 0:
		return nil, st, fmt.Errorf("%w: reserved field %#x", ErrCorrupt, be32(hdr[12:]))
	}
	st.WrittenAt = time.Unix(0, int64(binary.BigEndian.Uint64(hdr[16:])))
	switch age := now.Sub(st.WrittenAt); {
	case age > c.cfg.PersistMaxAge:
		return nil, st, fmt.Errorf("%w: written %s ago at %s, max age %s",
			ErrTooOld, age.Round(time.Second), st.WrittenAt.UTC().Format(time.RFC3339), c.cfg.PersistMaxAge)
	case age < -futureSlack:
		return nil, st, fmt.Errorf("%w: written at %s, in the future", ErrCorrupt, st.WrittenAt.UTC().Format(time.RFC3339))
	}

	// raw reads exactly the dump's bytes into the gzip reader (a
	// ByteReader), so that what follows the gzip stream stays in raw.
	raw := bufio.NewReader(r)
	body := io.Reader(raw)
	var zr *gzip.Reader
	if flags&dumpFlagGzip != 0 {
		var err error
		if zr, err = gzip.NewReader(raw); err != nil {
			return nil, st, fmt.Errorf("%w: gzip: %v", ErrCorrupt, err)
		}
		zr.Multistream(false)
		body = zr
	}
	// Bound what a dump can make us hold before anything is committed.
	limit := 4*c.cfg.MaxBytes + 1<<20
	lr := &io.LimitedReader{R: body, N: limit}
	br := bufio.NewReaderSize(lr, 64<<10)
	pending, err := c.decodeRecords(br, now.UnixNano(), st.WrittenAt.UnixNano(), &st)
	if err != nil {
		if lr.N <= 0 {
			return nil, st, fmt.Errorf("%w: body larger than %d bytes (4 × max_bytes + 1 MiB)", ErrCorrupt, limit)
		}
		return nil, st, err
	}
	// Refuse data after our trailer, and reach the end of a gzip stream
	// so that its own checksum is verified.
	n, err := io.Copy(io.Discard, br)
	switch {
	case err != nil && zr != nil:
		return nil, st, fmt.Errorf("%w: gzip stream: %v", ErrCorrupt, err)
	case err != nil:
		return nil, st, fmt.Errorf("%w: after the trailer: %v", ErrCorrupt, err)
	case n != 0:
		return nil, st, fmt.Errorf("%w: %d bytes after the trailer", ErrCorrupt, n)
	}
	if zr != nil {
		if n, err := io.Copy(io.Discard, raw); err != nil || n != 0 {
			return nil, st, fmt.Errorf("%w: %d bytes after the gzip stream", ErrCorrupt, n)
		}
	}
	return pending, st, nil
}

// decodeRecords reads the records and the trailer. A record stored after
// the dump was written (writtenAt) is damage: it would keep its TTL past
// its time.
func (c *Cache) decodeRecords(br *bufio.Reader, now, writtenAt int64, st *Stats) ([]*entry, error) {
	var (
		pending []*entry
		crc     hash.Hash32 = crc32.New(castagnoli)
		lenBuf  [4]byte
		count   uint32
	)
	for {
		if _, err := io.ReadFull(br, lenBuf[:]); err != nil {
			return nil, fmt.Errorf("%w: record %d: %v", ErrCorrupt, count, err)
		}
		n := be32(lenBuf[:])
		if n == 0 {
			break
		}
		if n < recordFixed+headerLen || n > maxRecord {
			return nil, fmt.Errorf("%w: record %d has length %d", ErrCorrupt, count, n)
		}
		rec := make([]byte, n)
		if _, err := io.ReadFull(br, rec); err != nil {
			return nil, fmt.Errorf("%w: record %d: %v", ErrCorrupt, count, err)
		}
		crc.Write(lenBuf[:])
		crc.Write(rec)
		count++
		flags, stored := rec[0], int64(binary.BigEndian.Uint64(rec[1:]))
		if flags&^(keyDO|keyCD) != 0 {
			return nil, fmt.Errorf("%w: record %d has key flags %#x", ErrCorrupt, count, flags)
		}
		if stored > writtenAt {
			return nil, fmt.Errorf("%w: record %d stored at %s, after the dump was written at %s", ErrCorrupt, count,
				time.Unix(0, stored).UTC().Format(time.RFC3339Nano), time.Unix(0, writtenAt).UTC().Format(time.RFC3339Nano))
		}
		e, err := c.prepareLoaded(rec[recordFixed:], flags, stored)
		switch {
		case err != nil:
			st.Skipped++
		case e.expire <= now:
			st.Expired++
		default:
			pending = append(pending, e)
		}
	}
	var trailer [8]byte
	if _, err := io.ReadFull(br, trailer[:]); err != nil {
		return nil, fmt.Errorf("%w: trailer: %v", ErrCorrupt, err)
	}
	if got := be32(trailer[:]); got != count {
		return nil, fmt.Errorf("%w: trailer counts %d records, read %d", ErrCorrupt, got, count)
	}
	if got, want := be32(trailer[4:]), crc.Sum32(); got != want {
		return nil, fmt.Errorf("%w: body checksum %08x, want %08x", ErrCorrupt, got, want)
	}
	return pending, nil
}

// prepareLoaded re-packs a dumped response before preparing it, so that an
// entry read from disk obeys the same compression rule as one from Set.
func (c *Cache) prepareLoaded(wire []byte, flags uint8, stored int64) (*entry, error) {
	m := new(dns.Msg)
	if err := m.Unpack(wire); err != nil {
		return nil, err
	}
	norm, err := pack(m)
	if err != nil {
		return nil, err
	}
	return c.prepare(norm, flags, stored)
}
