package resolvertest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// Exchange sends m to addr over net ("udp" or "tcp") and returns the reply.
// UDP replies may be up to 64 KiB so that size limits are the server's.
func Exchange(t testing.TB, net, addr string, m *dns.Msg) *dns.Msg {
	t.Helper()
	c := &dns.Client{Net: net, Timeout: 5 * time.Second, UDPSize: dns.MaxMsgSize}
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("exchange %s %s over %s: %v", m.Question[0].Name, dns.Type(m.Question[0].Qtype), net, err)
	}
	return r
}

// RR parses a record in zone file syntax, or fails the test.
func RR(t testing.TB, s string) dns.RR {
	t.Helper()
	rr, err := dns.NewRR(s)
	if err != nil || rr == nil {
		t.Fatalf("bad test record %q: %v", s, err)
	}
	return rr
}

// Case is one question and the reply expected for it. Records are written
// in zone file syntax with explicit TTLs; sections compare as sets, owner
// names with their exact letter case; OPT records are ignored.
type Case struct {
	Name   string // subtest name
	Qname  string
	Qtype  uint16
	Qclass uint16 // default IN
	Rcode  int
	NoAA   bool // expect AA=0 (referrals)
	Answer []string
	Ns     []string
	Extra  []string
}

// Msg returns the query of c with EDNS (1232, DO=0).
func (c Case) Msg() *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(c.Qname, c.Qtype)
	m.RecursionDesired = false
	if c.Qclass != 0 {
		m.Question[0].Qclass = c.Qclass
	}
	m.SetEdns0(1232, false)
	return m
}

// Check compares a reply with c and reports every difference.
func (c Case) Check(t testing.TB, r *dns.Msg) {
	t.Helper()
	if r.Rcode != c.Rcode {
		t.Errorf("rcode = %s, want %s", dns.RcodeToString[r.Rcode], dns.RcodeToString[c.Rcode])
	}
	if r.Authoritative == c.NoAA {
		t.Errorf("AA = %v, want %v", r.Authoritative, !c.NoAA)
	}
	for _, sec := range []struct {
		name string
		got  []dns.RR
		want []string
	}{{"answer", r.Answer, c.Answer}, {"authority", r.Ns, c.Ns}, {"additional", r.Extra, c.Extra}} {
		if diff := DiffSection(t, sec.got, sec.want); diff != "" {
			t.Errorf("%s section differs:\n%s", sec.name, diff)
		}
	}
}

// DiffSection compares records with expected records in zone file syntax, as
// sets, and describes the difference ("" when equal).
func DiffSection(t testing.TB, got []dns.RR, want []string) string {
	t.Helper()
	var g, w []string
	for _, rr := range got {
		if rr.Header().Rrtype != dns.TypeOPT {
			g = append(g, rr.String())
		}
	}
	for _, s := range want {
		w = append(w, RR(t, s).String())
	}
	slices.Sort(g)
	slices.Sort(w)
	if slices.Equal(g, w) {
		return ""
	}
	var b strings.Builder
	for _, s := range w {
		if !slices.Contains(g, s) {
			fmt.Fprintf(&b, "  missing: %s\n", s)
		}
	}
	for _, s := range g {
		if !slices.Contains(w, s) {
			fmt.Fprintf(&b, "  extra:   %s\n", s)
		}
	}
	return b.String()
}
