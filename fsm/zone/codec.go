package zone

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"slices"

	"github.com/miekg/dns"
)

// The encoding of a View (Raft snapshots, the node-local copy) and of a
// single Zone (one value in local.db). Both are a magic, a format version and
// a list of frames (tag byte, uvarint length, payload) closed by an end frame
// that carries the CRC-32C of every byte before it. Records are packed in
// uncompressed wire format. A reader refuses a newer version, an unknown tag,
// a frame over its size limit, a bad checksum and data that breaks a zone
// rule, and returns no partial result.

// ViewFormatVersion and ZoneFormatVersion are the versions this code writes
// and the newest it reads.
const (
	ViewFormatVersion = 1
	ZoneFormatVersion = 1
)

var (
	viewMagic  = [4]byte{'K', 'D', 'R', 'V'}
	zoneMagic  = [4]byte{'K', 'D', 'R', 'Z'}
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
)

// ErrFormat marks encoded data that cannot be decoded: damaged, truncated,
// or of another format.
var ErrFormat = errors.New("bad zone data encoding")

// ErrNewerFormat marks data written by a newer kudurru.
var ErrNewerFormat = errors.New("encoding is newer than this binary understands")

const (
	tagEnd    = 0
	tagHeader = 1
	tagMember = 2
	tagTomb   = 3
	tagZone   = 4
	tagRR     = 5

	maxFrame = 70 << 10 // an RR is at most 255 + 10 + 65535 bytes
)

type encoder struct {
	w   *bufio.Writer
	crc hash.Hash32
	buf []byte
	msg dns.Msg // one-record message used by packRR
	err error
}

func newEncoder(w io.Writer) *encoder {
	e := &encoder{crc: crc32.New(castagnoli)}
	e.w = bufio.NewWriterSize(io.MultiWriter(w, e.crc), 64<<10)
	return e
}

func (e *encoder) raw(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
	}
}

func (e *encoder) frame(tag byte, payload []byte) {
	var hdr [1 + binary.MaxVarintLen64]byte
	hdr[0] = tag
	n := binary.PutUvarint(hdr[1:], uint64(len(payload)))
	e.raw(hdr[:1+n])
	e.raw(payload)
}

func (e *encoder) zone(z *Zone) {
	p := appendString(nil, z.Origin)
	p = binary.BigEndian.AppendUint32(p, z.serial)
	p = binary.AppendUvarint(p, uint64(z.records))
	e.frame(tagZone, p)
	z.Walk(func(n *Node) bool {
		for _, s := range n.sets {
			for _, rr := range s.RRs {
				b, err := e.packRR(rr)
				if err != nil {
					e.err = fmt.Errorf("pack %s: %w", rr.String(), err)
					return false
				}
				e.frame(tagRR, b)
			}
		}
		return e.err == nil
	})
}

// packRR packs rr in uncompressed wire format without modifying it.
// dns.PackRR would set rr's Rdlength: a write to a record that published
// Views share with concurrent readers and encoders (Raft's snapshot
// Persist, the node's local.db writer, Hash), which the race detector
// reports. Msg.PackBuffer does not write to its records; the record follows
// the 12-byte message header.
func (e *encoder) packRR(rr dns.RR) ([]byte, error) {
	e.msg.Answer = append(e.msg.Answer[:0], rr)
	b, err := e.msg.PackBuffer(e.buf[:cap(e.buf)])
	if err != nil {
		return nil, err
	}
	e.buf = b[:0]
	return b[12:], nil
}

func (e *encoder) end() error {
	if e.err != nil {
		return e.err
	}
	if e.err = e.w.Flush(); e.err != nil {
		return e.err
	}
	e.frame(tagEnd, binary.BigEndian.AppendUint32(nil, e.crc.Sum32()))
	if e.err == nil {
		e.err = e.w.Flush()
	}
	return e.err
}

// WriteView writes v to w in the versioned snapshot encoding.
func WriteView(w io.Writer, v *View) error {
	e := newEncoder(w)
	e.raw(viewMagic[:])
	e.raw([]byte{ViewFormatVersion})
	p := appendString(nil, v.ClusterID)
	p = binary.AppendUvarint(p, v.Index)
	e.frame(tagHeader, p)
	for _, m := range v.Members() {
		e.frame(tagMember, appendString(appendString(nil, m.ID), m.APIAddr))
	}
	names := make([]string, 0, len(v.tombs))
	for n := range v.tombs {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		e.frame(tagTomb, binary.BigEndian.AppendUint32(appendString(nil, n), v.tombs[n]))
	}
	for _, z := range v.Zones() {
		e.zone(z)
	}
	return e.end()
}

// EncodeZone returns one zone in the versioned zone encoding.
func EncodeZone(z *Zone) ([]byte, error) {
	var b bytes.Buffer
	e := newEncoder(&b)
	e.raw(zoneMagic[:])
	e.raw([]byte{ZoneFormatVersion})
	e.zone(z)
	if err := e.end(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Hash returns a digest of the View's content: everything but the applied
// index. Two nodes with the same content have the same hash.
func (v *View) Hash() [32]byte {
	h := sha256.New()
	c := *v
	c.Index = 0
	_ = WriteView(h, &c) // a sha256 writer never fails; packing a validated RR does not either
	var out [32]byte
	h.Sum(out[:0])
	return out
}

func formatErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrFormat, fmt.Sprintf(format, args...))
}

// decoder reads frames and keeps a CRC of exactly the bytes consumed, so
// that the end frame's checksum can be compared with what came before it.
type decoder struct {
	r   *bufio.Reader
	crc hash.Hash32
	buf []byte
}

func newDecoder(r io.Reader) *decoder {
	return &decoder{r: bufio.NewReaderSize(r, 64<<10), crc: crc32.New(castagnoli)}
}

func (d *decoder) readFull(p []byte) error {
	if _, err := io.ReadFull(d.r, p); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	d.crc.Write(p)
	return nil
}

func (d *decoder) header(magic [4]byte, version byte, what string) error {
	var h [5]byte
	if err := d.readFull(h[:]); err != nil {
		return formatErr("%s header: %v", what, err)
	}
	if [4]byte(h[:4]) != magic {
		return formatErr("not a kudurru %s (magic %q)", what, h[:4])
	}
	if h[4] > version {
		return fmt.Errorf("%w: %s format version %d, this binary reads up to %d", ErrNewerFormat, what, h[4], version)
	}
	if h[4] == 0 {
		return formatErr("%s format version 0", what)
	}
	return nil
}

// frame reads one frame. For the end frame it checks the checksum.
func (d *decoder) frame() (byte, []byte, error) {
	sum := d.crc.Sum32()
	var one [1]byte
	if err := d.readFull(one[:]); err != nil {
		return 0, nil, formatErr("truncated: %v", err)
	}
	tag := one[0]
	var n uint64
	for shift := 0; ; shift += 7 {
		if shift > 63 {
			return 0, nil, formatErr("frame length overflows")
		}
		if err := d.readFull(one[:]); err != nil {
			return 0, nil, formatErr("truncated frame length: %v", err)
		}
		n |= uint64(one[0]&0x7f) << shift
		if one[0] < 0x80 {
			break
		}
	}
	if n > maxFrame {
		return 0, nil, formatErr("frame of %d bytes exceeds the limit of %d", n, maxFrame)
	}
	if cap(d.buf) < int(n) {
		d.buf = make([]byte, n)
	}
	p := d.buf[:n]
	if err := d.readFull(p); err != nil {
		return 0, nil, formatErr("truncated frame: %v", err)
	}
	if tag == tagEnd {
		if len(p) != 4 {
			return 0, nil, formatErr("end frame of %d bytes", len(p))
		}
		if got := binary.BigEndian.Uint32(p); got != sum {
			return 0, nil, formatErr("checksum mismatch: data is damaged")
		}
	}
	return tag, p, nil
}

// zoneBody reads the records of a zone whose frame has been read, up to the
// next non-record frame, which it returns.
func (d *decoder) zoneBody(p []byte) (*Zone, byte, []byte, error) {
	origin, p, err := readString(p)
	if err != nil || len(p) < 4 {
		return nil, 0, nil, formatErr("zone frame: damaged")
	}
	serial := binary.BigEndian.Uint32(p)
	count, k := binary.Uvarint(p[4:])
	if k <= 0 || len(p) != 4+k {
		return nil, 0, nil, formatErr("zone frame of %s: damaged", origin)
	}
	var rrs []dns.RR
	for {
		tag, q, err := d.frame()
		if err != nil {
			return nil, 0, nil, err
		}
		if tag != tagRR {
			if uint64(len(rrs)) != count {
				return nil, 0, nil, formatErr("zone %s: %d records, header says %d", origin, len(rrs), count)
			}
			z, err := NewZone(origin, rrs, 0, false)
			if err != nil {
				return nil, 0, nil, formatErr("zone %s: %v", origin, err)
			}
			if z.Origin != origin || z.serial != serial {
				return nil, 0, nil, formatErr("zone %s: serial %d does not match its SOA", origin, serial)
			}
			return z, tag, q, nil
		}
		rr, off, err := dns.UnpackRR(q, 0)
		if err != nil || off != len(q) {
			return nil, 0, nil, formatErr("zone %s: damaged record: %v", origin, err)
		}
		rrs = append(rrs, rr)
	}
}

// ReadView decodes a View written by WriteView. It reads r up to the end
// frame and returns an error, and no View, when anything is wrong.
func ReadView(r io.Reader) (*View, error) {
	d := newDecoder(r)
	if err := d.header(viewMagic, ViewFormatVersion, "snapshot"); err != nil {
		return nil, err
	}
	tag, p, err := d.frame()
	if err != nil {
		return nil, err
	}
	if tag != tagHeader {
		return nil, formatErr("snapshot does not start with a header frame")
	}
	cid, rest, err := readString(p)
	if err != nil {
		return nil, formatErr("header: %v", err)
	}
	idx, k := binary.Uvarint(rest)
	if k <= 0 || k != len(rest) {
		return nil, formatErr("header: damaged index")
	}
	b := Empty.Edit()
	b.SetClusterID(cid)
	b.SetIndex(idx)
	tag, p, err = d.frame()
	for err == nil && tag != tagEnd {
		switch tag {
		case tagMember:
			var id, addr string
			if id, p, err = readString(p); err == nil {
				addr, p, err = readString(p)
			}
			if err != nil || len(p) != 0 {
				return nil, formatErr("member frame: damaged")
			}
			b.PutMember(Member{ID: id, APIAddr: addr})
		case tagTomb:
			var name string
			if name, p, err = readString(p); err != nil || len(p) != 4 {
				return nil, formatErr("tombstone frame: damaged")
			}
			b.SetTombstone(name, binary.BigEndian.Uint32(p))
		case tagZone:
			var z *Zone
			if z, tag, p, err = d.zoneBody(p); err != nil {
				return nil, err
			}
			if b.Current().Zone(z.Origin) != nil {
				return nil, formatErr("zone %s appears twice", z.Origin)
			}
			b.PutZone(z)
			continue
		default:
			return nil, formatErr("unknown frame tag %d", tag)
		}
		tag, p, err = d.frame()
	}
	if err != nil {
		return nil, err
	}
	return b.View(), nil
}

// DecodeZone decodes a zone written by EncodeZone.
func DecodeZone(data []byte) (*Zone, error) {
	d := newDecoder(bytes.NewReader(data))
	if err := d.header(zoneMagic, ZoneFormatVersion, "zone"); err != nil {
		return nil, err
	}
	tag, p, err := d.frame()
	if err != nil {
		return nil, err
	}
	if tag != tagZone {
		return nil, formatErr("zone blob does not start with a zone frame")
	}
	z, tag, _, err := d.zoneBody(p)
	if err != nil {
		return nil, err
	}
	if tag != tagEnd {
		return nil, formatErr("unexpected frame tag %d after the zone", tag)
	}
	if _, err := d.r.ReadByte(); err != io.EOF {
		return nil, formatErr("trailing data after the end frame")
	}
	return z, nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func readString(p []byte) (string, []byte, error) {
	n, k := binary.Uvarint(p)
	if k <= 0 || n > uint64(len(p)-k) {
		return "", nil, errors.New("damaged string")
	}
	return string(p[k : k+int(n)]), p[k+int(n):], nil
}
