package httpapi

import (
	"fmt"
	"strings"

	"github.com/kudurru/kudurru/cluster/httpapi/apiv1"
	"github.com/kudurru/kudurru/fsm"
	"github.com/kudurru/kudurru/fsm/zone"
	"github.com/miekg/dns"
)

// The SOA timers of a zone created without them (RFC 1912 §2.2 ranges).
const (
	soaRefresh = 3600
	soaRetry   = 600
	soaExpire  = 1209600
	soaMinimum = 300
)

// buildCreate turns a create request into a create_zone command whose
// records form a valid zone.
func buildCreate(req apiv1.CreateZone) (*fsm.Command, error) {
	origin, err := zone.CanonicalName(req.Name)
	if err != nil {
		return nil, invalid("name: %v", err)
	}
	ttl := uint32(defaultTTL)
	if req.TTL != nil {
		ttl = *req.TTL
	}
	var rrs []dns.RR
	for i, ns := range req.NS {
		host, err := hostName(ns)
		if err != nil {
			return nil, invalid("ns[%d]: %v", i, err)
		}
		rrs = append(rrs, &dns.NS{Hdr: header(origin, dns.TypeNS, ttl), Ns: host})
	}
	var soa *dns.SOA
	for i, text := range req.Records {
		err := parseZoneText(strings.NewReader(text), origin, ttl, fmt.Sprintf("records[%d]", i), func(rr dns.RR) error {
			if s, ok := rr.(*dns.SOA); ok && req.SOA == nil && soa == nil {
				soa = s
				return nil
			}
			if rr.Header().Rrtype == dns.TypeSOA {
				return fmt.Errorf("records[%d]: a second SOA record; give the SOA once, in soa or in records", i)
			}
			rrs = append(rrs, rr)
			return nil
		})
		if err != nil {
			return nil, invalid("%v", err)
		}
	}
	if soa == nil {
		if soa, err = buildSOA(origin, ttl, req.SOA, firstApexNS(origin, rrs)); err != nil {
			return nil, err
		}
	}
	rrs = append([]dns.RR{soa}, rrs...)
	if _, err := zone.NewZone(origin, rrs, 0, false); err != nil {
		return nil, invalid("%v", err)
	}
	return &fsm.Command{Op: fsm.OpCreateZone, Zone: origin, Records: rrs}, nil
}

// header returns a record header of class IN.
func header(name string, t uint16, ttl uint32) dns.RR_Header {
	return dns.RR_Header{Name: name, Rrtype: t, Class: dns.ClassINET, Ttl: ttl}
}

// firstApexNS returns the target of the first NS record at origin, or "".
func firstApexNS(origin string, rrs []dns.RR) string {
	for _, rr := range rrs {
		if ns, ok := rr.(*dns.NS); ok && strings.EqualFold(ns.Hdr.Name, origin) {
			return ns.Ns
		}
	}
	return ""
}

// buildSOA returns the apex SOA of a new zone: spec as given (text or
// fields), with defaults for what it leaves out.
func buildSOA(origin string, ttl uint32, spec *apiv1.SOA, mname string) (*dns.SOA, error) {
	rname := "hostmaster." + origin
	if origin == "." {
		rname = "hostmaster."
	}
	soa := &dns.SOA{
		Hdr: header(origin, dns.TypeSOA, ttl), Ns: mname, Mbox: rname,
		Serial: 1, Refresh: soaRefresh, Retry: soaRetry, Expire: soaExpire, Minttl: soaMinimum,
	}
	switch {
	case spec != nil && spec.Fields == nil:
		return soaFromText(origin, ttl, spec.Text)
	case spec != nil:
		f := spec.Fields
		if f.MName != "" {
			n, err := hostName(f.MName)
			if err != nil {
				return nil, invalid("soa.mname: %v", err)
			}
			soa.Ns = n
		}
		if f.RName != "" {
			n, err := mailbox(f.RName)
			if err != nil {
				return nil, invalid("soa.rname: %v", err)
			}
			soa.Mbox = n
		}
		for _, p := range []struct {
			dst *uint32
			v   uint32
		}{{&soa.Serial, f.Serial}, {&soa.Refresh, f.Refresh}, {&soa.Retry, f.Retry}, {&soa.Expire, f.Expire}, {&soa.Minttl, f.Minimum}} {
			if p.v != 0 {
				*p.dst = p.v
			}
		}
	}
	if soa.Ns == "" {
		return nil, invalid("A zone needs at least one name server: give ns (or soa.mname and an NS record).")
	}
	return soa, nil
}

// soaFromText parses an SOA given as zone-file text: its record data
// ("mname rname serial refresh retry expire minimum"), or a whole SOA line.
func soaFromText(origin string, ttl uint32, text string) (*dns.SOA, error) {
	rr, err := parseRecord(origin, origin, ttl, dns.TypeSOA, text)
	if err == nil {
		return rr.(*dns.SOA), nil
	}
	var soa *dns.SOA
	lineErr := parseZoneText(strings.NewReader(text), origin, ttl, "soa", func(rr dns.RR) error {
		s, ok := rr.(*dns.SOA)
		if !ok || soa != nil {
			return fmt.Errorf("want exactly one SOA record")
		}
		soa = s
		return nil
	})
	if lineErr != nil || soa == nil {
		return nil, invalid("soa: %v", err)
	}
	if !strings.EqualFold(dns.Fqdn(soa.Hdr.Name), origin) {
		return nil, invalid("soa: the SOA record is at %s, not at the zone apex %s.", soa.Hdr.Name, origin)
	}
	return soa, nil
}
