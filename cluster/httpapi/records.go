package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/kudurru/kudurru/fsm/zone"
	"github.com/miekg/dns"
)

// defaultTTL is the TTL of records given without one.
const defaultTTL = 3600

// zoneParam returns the canonical name of the zone in the request path.
func zoneParam(r *http.Request) (string, error) {
	name, err := zone.CanonicalName(r.PathValue("zone"))
	if err != nil {
		return "", invalid("Zone name: %v", err)
	}
	return name, nil
}

// ownerName resolves an owner name given in a request: "@" or "" is the
// apex; a name ending in a dot is absolute; a name that ends with the zone's
// name is taken as absolute too (www.example.com in example.com.); anything
// else is relative to the zone.
func ownerName(origin, name string) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "" || name == "@":
		return origin, nil
	case strings.HasSuffix(name, ".") && !strings.HasSuffix(name, `\.`):
	case origin != "." && isUnder(strings.ToLower(name), strings.TrimSuffix(origin, ".")):
		name += "."
	case origin == ".":
		name += "."
	default:
		name += "." + origin
	}
	n, err := zone.CanonicalName(name)
	if err != nil {
		return "", err
	}
	return n, nil
}

// isUnder reports whether name is zone or ends with "."+zone.
func isUnder(name, zoneName string) bool {
	return name == zoneName || strings.HasSuffix(name, "."+zoneName)
}

// hostName qualifies a host name given as absolute (a name server, the SOA
// mname): ns1.example.net and ns1.example.net. are the same name.
func hostName(name string) (string, error) {
	return zone.CanonicalName(strings.TrimSpace(name))
}

// mailbox turns an SOA rname given as hostmaster.example.com or as an email
// address (hostmaster@example.com) into a domain name.
func mailbox(s string) (string, error) {
	s = strings.TrimSpace(s)
	if local, domain, ok := strings.Cut(s, "@"); ok {
		s = strings.ReplaceAll(local, ".", `\.`) + "." + domain
	}
	return zone.CanonicalName(s)
}

// parseType parses a record type mnemonic (A, aaaa, TYPE65).
func parseType(s string) (uint16, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	if t, ok := dns.StringToType[u]; ok {
		return t, nil
	}
	if n, ok := strings.CutPrefix(u, "TYPE"); ok {
		if t, err := strconv.ParseUint(n, 10, 16); err == nil {
			return uint16(t), nil
		}
	}
	if u == "" {
		return 0, errors.New("record type is missing")
	}
	return 0, fmt.Errorf("unknown record type %q", s)
}

// typeName is the mnemonic of a type, TYPEn for one without.
func typeName(t uint16) string { return dns.Type(t).String() }

// parseZoneText parses zone-file text with the given origin and default
// TTL, calling fn for each record. $INCLUDE is refused (it would read the
// server's files). Parse errors name file and line.
func parseZoneText(r io.Reader, origin string, ttl uint32, file string, fn func(dns.RR) error) error {
	zp := dns.NewZoneParser(r, origin, file)
	zp.SetDefaultTTL(ttl)
	zp.SetIncludeAllowed(false)
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		if err := checkWire(rr); err != nil {
			return err
		}
		if err := fn(rr); err != nil {
			return err
		}
	}
	return zp.Err()
}

// checkWire refuses a record that does not survive the trip through wire
// format unchanged, as it must to travel in the replicated log. The zone-file
// parser accepts empty record data (meant for dynamic updates), and such a
// record packs into bytes that do not unpack.
func checkWire(rr dns.RR) error {
	buf := make([]byte, dns.Len(rr)+64)
	off, err := dns.PackRR(rr, buf, 0, nil, false)
	if err == nil {
		var back dns.RR
		back, _, err = dns.UnpackRR(buf[:off], 0)
		if err == nil && (back == nil || !dns.IsDuplicate(rr, back)) {
			err = errors.New("it reads back differently")
		}
	}
	if err != nil {
		return fmt.Errorf("record %q is incomplete or malformed: %v", rrText(rr), err)
	}
	return nil
}

// parseRecord parses one record given by its parts; rdata is zone-file text
// in which relative names are relative to origin.
func parseRecord(origin, owner string, ttl uint32, typ uint16, rdata string) (dns.RR, error) {
	if strings.ContainsAny(rdata, "\n\r") {
		return nil, fmt.Errorf("record data %q holds a line break", rdata)
	}
	line := fmt.Sprintf("%s %d IN %s %s", owner, ttl, typeName(typ), rdata)
	var out dns.RR
	err := parseZoneText(strings.NewReader(line), origin, ttl, "", func(rr dns.RR) error {
		if out != nil {
			return fmt.Errorf("record data %q holds more than one record", rdata)
		}
		out = rr
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("record %s %s %q: %w", owner, typeName(typ), rdata, err)
	}
	if out == nil {
		return nil, fmt.Errorf("record %s %s %q: no record data", owner, typeName(typ), rdata)
	}
	return out, nil
}

// rdataText returns a record's data in zone-file text.
func rdataText(rr dns.RR) string {
	return strings.TrimPrefix(rr.String(), rr.Header().String())
}

// rrText returns a record on one line with spaces, for messages.
func rrText(rr dns.RR) string { return strings.ReplaceAll(rr.String(), "\t", " ") }
