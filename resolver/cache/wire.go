package cache

import (
	"encoding/binary"
	"errors"
)

// The packed-message walker. It finds what the cache needs to serve a stored
// response by copying bytes: the end of the question name, the offset of every
// record's TTL field (OPT excluded: its "TTL" carries EDNS flags), and the SOA
// of a negative answer. It never follows compression pointers, so its cost is
// linear in the message size and it cannot loop.

const (
	headerLen = 12
	maxMsgLen = 65535
	maxName   = 255

	typeCNAME = 5
	typeSOA   = 6
	typeSIG   = 24
	typeOPT   = 41
	typeTSIG  = 250
	typeANY   = 255

	rcodeNoError  = 0
	rcodeServfail = 2
	rcodeNXDomain = 3

	// Header flag bits, in byte 2 and byte 3 of the header.
	flagQR = 0x80 // byte 2
	flagAA = 0x04 // byte 2
	flagTC = 0x02 // byte 2
	flagRD = 0x01 // byte 2
	flagCD = 0x10 // byte 3
)

var (
	errShort      = errors.New("message truncated")
	errQuestion   = errors.New("message must have exactly one question")
	errLabel      = errors.New("bad label")
	errCompressed = errors.New("question name is compressed")
	errNotReply   = errors.New("not a response")
	errOpcode     = errors.New("opcode is not QUERY")
	errTruncated  = errors.New("response is truncated (TC=1)")
	errSigned     = errors.New("response carries TSIG or SIG(0)")
	errExtRcode   = errors.New("response has an extended rcode")
	errTrailing   = errors.New("trailing bytes after the last record")
	errTooLong    = errors.New("message longer than 65535 bytes")
)

// section tells which part of the message a record is in.
type section uint8

const (
	secAnswer section = iota
	secAuthority
	secAdditional
)

// wireInfo describes a packed response.
type wireInfo struct {
	rcode    int
	qnameEnd int // offset just past the question name
	qtype    uint16
	qclass   uint16
	// ttlOffs holds the offset of the TTL field of every record but OPT.
	ttlOffs []uint16
	// ttlSec holds, parallel to ttlOffs, the section of each record and
	// whether it is the negative-answer SOA.
	ttlSec []section
	// soaIdx is the index in ttlOffs of the first SOA in the authority
	// section, or -1; soaMinimum is its MINIMUM field.
	soaIdx     int
	soaMinimum uint32
	// answersQtype reports an answer record of the question's type (or any
	// record for a qtype of ANY): the answer is not NODATA.
	answersQtype bool
	// hasCNAME reports a CNAME record in the answer section.
	hasCNAME bool
}

func be16(b []byte) uint16 { return binary.BigEndian.Uint16(b) }
func be32(b []byte) uint32 { return binary.BigEndian.Uint32(b) }

// skipName returns the offset just past the name at off. Pointers end a name
// and are not followed; allowPtr false refuses them.
func skipName(b []byte, off int, allowPtr bool) (int, error) {
	start := off
	for {
		if off >= len(b) {
			return 0, errShort
		}
		c := int(b[off])
		switch c & 0xC0 {
		case 0x00:
			if c == 0 {
				if off+1-start > maxName {
					return 0, errLabel
				}
				return off + 1, nil
			}
			off += 1 + c
		case 0xC0:
			if !allowPtr {
				return 0, errCompressed
			}
			if off+2 > len(b) {
				return 0, errShort
			}
			return off + 2, nil
		default:
			return 0, errLabel
		}
		if off-start > maxName {
			return 0, errLabel
		}
	}
}

// parseWire walks a packed response and checks that the cache can store it.
// It returns the length of the message proper (trailing bytes are refused).
func parseWire(b []byte) (wireInfo, error) {
	info := wireInfo{soaIdx: -1}
	if len(b) > maxMsgLen {
		return info, errTooLong
	}
	if len(b) < headerLen {
		return info, errShort
	}
	switch {
	case b[2]&flagQR == 0:
		return info, errNotReply
	case (b[2]>>3)&0x0F != 0:
		return info, errOpcode
	case b[2]&flagTC != 0:
		return info, errTruncated
	}
	info.rcode = int(b[3] & 0x0F)
	if be16(b[4:]) != 1 {
		return info, errQuestion
	}
	an, ns, ar := int(be16(b[6:])), int(be16(b[8:])), int(be16(b[10:]))
	off, err := skipName(b, headerLen, false)
	if err != nil {
		return info, err
	}
	info.qnameEnd = off
	if off+4 > len(b) {
		return info, errShort
	}
	info.qtype, info.qclass = be16(b[off:]), be16(b[off+2:])
	off += 4

	total := an + ns + ar
	// Every record takes at least 11 bytes; do not trust the counts for
	// the allocation.
	if room := (len(b) - off) / 11; total > room {
		return info, errShort
	}
	info.ttlOffs = make([]uint16, 0, total)
	info.ttlSec = make([]section, 0, total)
	for i := 0; i < total; i++ {
		sec := secAnswer
		if i >= an+ns {
			sec = secAdditional
		} else if i >= an {
			sec = secAuthority
		}
		if off, err = skipName(b, off, true); err != nil {
			return info, err
		}
		if off+10 > len(b) {
			return info, errShort
		}
		typ, ttlOff, rdlen := be16(b[off:]), off+4, int(be16(b[off+8:]))
		off += 10
		if off+rdlen > len(b) {
			return info, errShort
		}
		switch typ {
		case typeOPT:
			if b[ttlOff] != 0 { // extended rcode bits
				return info, errExtRcode
			}
			off += rdlen
			continue
		case typeTSIG, typeSIG:
			if sec == secAdditional {
				return info, errSigned
			}
		case typeSOA:
			// MINIMUM is the last of five 32-bit fields after two names.
			if sec == secAuthority && info.soaIdx < 0 && rdlen >= 22 {
				info.soaIdx = len(info.ttlOffs)
				info.soaMinimum = be32(b[off+rdlen-4:])
			}
		}
		if sec == secAnswer && (typ == info.qtype || info.qtype == typeANY) {
			info.answersQtype = true
		}
		if sec == secAnswer && typ == typeCNAME {
			info.hasCNAME = true
		}
		info.ttlOffs = append(info.ttlOffs, uint16(ttlOff))
		info.ttlSec = append(info.ttlSec, sec)
		off += rdlen
	}
	if off != len(b) {
		return info, errTrailing
	}
	return info, nil
}

// lowerASCII lower-cases DNS name bytes in place (RFC 4343: only A-Z fold).
func lowerASCII(b []byte) {
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
}
