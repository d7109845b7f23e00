package traffic

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"time"

	"github.com/kudurru/kudurru/jepsen-style-tests/model"
	"github.com/miekg/dns"
)

// DNSAnswer is what one DNS query to a node returned.
type DNSAnswer struct {
	Outcome model.Outcome // ok: an authoritative NOERROR or NXDOMAIN
	Code    string        // rcode name, with "/noaa" when AA was clear; "timeout" without an answer
	Values  []string      // TXT values of the answer
	Serial  uint32        // SOA serial of the answer
	Err     string
}

// Query sends one UDP query for name/qtype to addr, without retries.
func Query(ctx context.Context, addr, name string, qtype uint16, timeout time.Duration) DNSAnswer {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.RecursionDesired = false
	c := &dns.Client{Net: "udp", Timeout: timeout}
	resp, _, err := c.ExchangeContext(ctx, m, addr)
	if err != nil {
		return DNSAnswer{Outcome: model.Unknown, Code: "timeout", Err: err.Error()}
	}
	a := DNSAnswer{Code: dns.RcodeToString[resp.Rcode]}
	if !resp.Authoritative {
		a.Code += "/noaa"
	}
	if resp.Authoritative && (resp.Rcode == dns.RcodeSuccess || resp.Rcode == dns.RcodeNameError) {
		a.Outcome = model.OK
	} else {
		a.Outcome = model.Fail
	}
	for _, rr := range resp.Answer {
		switch r := rr.(type) {
		case *dns.TXT:
			if strings.EqualFold(r.Hdr.Name, dns.Fqdn(name)) {
				a.Values = append(a.Values, strings.Join(r.Txt, ""))
			}
		case *dns.SOA:
			a.Serial = r.Serial
		}
	}
	slices.Sort(a.Values)
	return a
}

// Relative returns name relative to zone ("w1-2" for "w1-2.jepsen.test.").
func Relative(name, zone string) string {
	n := strings.ToLower(dns.Fqdn(name))
	z := strings.ToLower(dns.Fqdn(zone))
	if n == z {
		return "@"
	}
	return strings.TrimSuffix(n, "."+z)
}

// Digest is a content hash of the zone: every RRset, sorted, with its TTL
// and records. Two nodes serving the same content have the same digest.
func (z Zone) Digest() string {
	lines := make([]string, 0, len(z.RRsets))
	for _, s := range z.RRsets {
		recs := slices.Clone(s.Records)
		slices.Sort(recs)
		lines = append(lines, strings.ToLower(dns.Fqdn(s.Name))+" "+s.Type+" "+itoa(s.TTL)+" "+strings.Join(recs, " | "))
	}
	slices.Sort(lines)
	h := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(h[:])
}

// TXTSets returns the zone's TXT RRsets by relative owner name, values
// unquoted and sorted.
func (z Zone) TXTSets(zone string) map[string][]string {
	out := map[string][]string{}
	for _, s := range z.RRsets {
		if s.Type != "TXT" {
			continue
		}
		k := Relative(s.Name, zone)
		for _, r := range s.Records {
			out[k] = append(out[k], Unquote(r))
		}
		slices.Sort(out[k])
	}
	return out
}

func itoa(u uint32) string {
	var b [10]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + u%10)
		u /= 10
		if u == 0 {
			return string(b[i:])
		}
	}
}
