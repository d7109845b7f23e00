package resolver_test

import (
	"testing"

	"github.com/kudurru/kudurru/fsm/zone"
	"github.com/kudurru/kudurru/resolver/resolvertest"
	"github.com/miekg/dns"
)

// testView loads the differential test's zone files.
func testView(t testing.TB) *zone.View {
	t.Helper()
	var zs []*zone.Zone
	for origin, path := range diffZones {
		zs = append(zs, resolvertest.LoadZoneFile(t, origin, path))
	}
	return resolvertest.View(zs...)
}

const (
	soaExample = "example.test. 300 IN SOA ns1.example.test. hostmaster.example.test. 2024010101 7200 3600 1209600 300"
	soaSub     = "sub.example.test. 600 IN SOA ns1.sub.example.test. hostmaster.example.test. 7 3600 600 86400 900"
	soaOther   = "other.test. 1800 IN SOA ns1.example.test. hostmaster.other.test. 5 3600 600 86400 3600"
	soaReverse = "2.0.192.in-addr.arpa. 60 IN SOA ns1.example.test. hostmaster.example.test. 1 3600 600 86400 60"
)

// TestAuthority covers every answer rule of the lookup over a real server.
func TestAuthority(t *testing.T) {
	srv := resolvertest.Start(t, resolvertest.NewZones(testView(t)), resolvertest.Options{})
	cases := []resolvertest.Case{
		{Name: "exact A", Qname: "www.example.test.", Qtype: dns.TypeA,
			Answer: []string{"www.example.test. 300 IN A 192.0.2.80"}},
		{Name: "exact AAAA", Qname: "www.example.test.", Qtype: dns.TypeAAAA,
			Answer: []string{"www.example.test. 300 IN AAAA 2001:db8::80"}},
		{Name: "letter case kept", Qname: "WwW.ExAmPlE.TeSt.", Qtype: dns.TypeA,
			Answer: []string{"WwW.ExAmPlE.TeSt. 300 IN A 192.0.2.80"}},
		{Name: "mixed case owner in zone", Qname: "mixedcase.example.test.", Qtype: dns.TypeA,
			Answer: []string{"mixedcase.example.test. 3600 IN A 192.0.2.10"}},
		{Name: "escaped dot in label", Qname: `dot\.name.example.test.`, Qtype: dns.TypeA,
			Answer: []string{`dot\.name.example.test. 3600 IN A 192.0.2.9`}},
		{Name: "SOA serial", Qname: "example.test.", Qtype: dns.TypeSOA,
			Answer: []string{"example.test. 3600 IN SOA ns1.example.test. hostmaster.example.test. 2024010101 7200 3600 1209600 300"}},
		{Name: "NXDOMAIN with negative TTL min(SOA TTL, MINIMUM)", Qname: "nope.example.test.", Qtype: dns.TypeA,
			Rcode: dns.RcodeNameError, Ns: []string{soaExample}},
		{Name: "NXDOMAIN SOA TTL smaller than MINIMUM", Qname: "nope.2.0.192.in-addr.arpa.", Qtype: dns.TypePTR,
			Rcode: dns.RcodeNameError, Ns: []string{soaReverse}},
		{Name: "NODATA", Qname: "www.example.test.", Qtype: dns.TypeMX, Ns: []string{soaExample}},
		{Name: "empty non-terminal is NODATA", Qname: "c.ent.example.test.", Qtype: dns.TypeA, Ns: []string{soaExample}},
		{Name: "top empty non-terminal is NODATA", Qname: "ent.example.test.", Qtype: dns.TypeA, Ns: []string{soaExample}},
		{Name: "below an empty non-terminal is NXDOMAIN", Qname: "x.c.ent.example.test.", Qtype: dns.TypeA,
			Rcode: dns.RcodeNameError, Ns: []string{soaExample}},
		{Name: "CNAME", Qname: "alias.example.test.", Qtype: dns.TypeA, Answer: []string{
			"alias.example.test. 3600 IN CNAME www.example.test.", "www.example.test. 300 IN A 192.0.2.80"}},
		{Name: "CNAME asked for", Qname: "alias.example.test.", Qtype: dns.TypeCNAME, Answer: []string{
			"alias.example.test. 3600 IN CNAME www.example.test."}},
		{Name: "CNAME chain", Qname: "chain1.example.test.", Qtype: dns.TypeAAAA, Answer: []string{
			"chain1.example.test. 3600 IN CNAME chain2.example.test.",
			"chain2.example.test. 3600 IN CNAME chain3.example.test.",
			"chain3.example.test. 3600 IN CNAME www.example.test.",
			"www.example.test. 300 IN AAAA 2001:db8::80"}},
		{Name: "CNAME target in upper case", Qname: "upper.example.test.", Qtype: dns.TypeA, Answer: []string{
			"upper.example.test. 3600 IN CNAME WWW.Example.TEST.", "WWW.Example.TEST. 300 IN A 192.0.2.80"}},
		{Name: "CNAME loop stops", Qname: "loop1.example.test.", Qtype: dns.TypeA, Answer: []string{
			"loop1.example.test. 3600 IN CNAME loop2.example.test.", "loop2.example.test. 3600 IN CNAME loop1.example.test."}},
		{Name: "CNAME to itself", Qname: "self.example.test.", Qtype: dns.TypeA, Answer: []string{
			"self.example.test. 3600 IN CNAME self.example.test."}},
		{Name: "CNAME to NXDOMAIN (RFC 6604)", Qname: "dangling.example.test.", Qtype: dns.TypeA,
			Rcode: dns.RcodeNameError, Answer: []string{"dangling.example.test. 3600 IN CNAME nowhere.example.test."},
			Ns: []string{soaExample}},
		{Name: "CNAME out of our zones", Qname: "external.example.test.", Qtype: dns.TypeA,
			Answer: []string{"external.example.test. 3600 IN CNAME www.outside.invalid."}},
		{Name: "CNAME into nested zone", Qname: "tosub.example.test.", Qtype: dns.TypeA, Answer: []string{
			"tosub.example.test. 3600 IN CNAME host.sub.example.test.", "host.sub.example.test. 600 IN A 192.0.2.211"}},
		{Name: "CNAME into nested zone wildcard NODATA", Qname: "tosubnx.example.test.", Qtype: dns.TypeA,
			Answer: []string{"tosubnx.example.test. 3600 IN CNAME nx.sub.example.test."},
			Ns:     []string{soaSub}},
		{Name: "CNAME across zones", Qname: "www.other.test.", Qtype: dns.TypeA, Answer: []string{
			"www.other.test. 1800 IN CNAME www.example.test.", "www.example.test. 300 IN A 192.0.2.80"}},
		{Name: "CNAME into a delegation", Qname: "todeleg.example.test.", Qtype: dns.TypeA,
			Answer: []string{"todeleg.example.test. 3600 IN CNAME host.deleg.example.test."},
			Ns:     []string{"deleg.example.test. 3600 IN NS ns1.deleg.example.test.", "deleg.example.test. 3600 IN NS ns.elsewhere.invalid."},
			Extra:  []string{"ns1.deleg.example.test. 3600 IN A 192.0.2.200", "ns1.deleg.example.test. 3600 IN AAAA 2001:db8::200"}},
		{Name: "CNAME to empty non-terminal", Qname: "toent.example.test.", Qtype: dns.TypeA,
			Answer: []string{"toent.example.test. 3600 IN CNAME c.ent.example.test."}, Ns: []string{soaExample}},
		{Name: "CNAME to wildcard", Qname: "towild.example.test.", Qtype: dns.TypeA, Answer: []string{
			"towild.example.test. 3600 IN CNAME foo.wild.example.test.", "foo.wild.example.test. 3600 IN A 192.0.2.100"}},
		{Name: "wildcard", Qname: "Anything.wild.example.test.", Qtype: dns.TypeA,
			Answer: []string{"Anything.wild.example.test. 3600 IN A 192.0.2.100"}},
		{Name: "wildcard several labels deep", Qname: "a.b.wild.example.test.", Qtype: dns.TypeTXT,
			Answer: []string{`a.b.wild.example.test. 3600 IN TXT "wildcard data"`}},
		{Name: "wildcard NODATA", Qname: "x.wild.example.test.", Qtype: dns.TypeMX, Ns: []string{soaExample}},
		{Name: "wildcard itself", Qname: "*.wild.example.test.", Qtype: dns.TypeA,
			Answer: []string{"*.wild.example.test. 3600 IN A 192.0.2.100"}},
		{Name: "no wildcard across an existing name", Qname: "x.sub.wild.example.test.", Qtype: dns.TypeA,
			Rcode: dns.RcodeNameError, Ns: []string{soaExample}},
		{Name: "existing name beside wildcard", Qname: "sub.wild.example.test.", Qtype: dns.TypeTXT, Ns: []string{soaExample}},
		{Name: "wildcard CNAME", Qname: "q.wildcname.example.test.", Qtype: dns.TypeA, Answer: []string{
			"q.wildcname.example.test. 3600 IN CNAME www.example.test.", "www.example.test. 300 IN A 192.0.2.80"}},
		{Name: "wildcard MX with additional", Qname: "q.wildmx.example.test.", Qtype: dns.TypeMX,
			Answer: []string{"q.wildmx.example.test. 3600 IN MX 10 mail.example.test."},
			Extra:  []string{"mail.example.test. 3600 IN A 192.0.2.25"}},
		{Name: "empty wildcard is NODATA", Qname: "y.wildent.example.test.", Qtype: dns.TypeA, Ns: []string{soaExample}},
		{Name: "referral", Qname: "www.deleg.example.test.", Qtype: dns.TypeA, NoAA: true,
			Ns:    []string{"deleg.example.test. 3600 IN NS ns1.deleg.example.test.", "deleg.example.test. 3600 IN NS ns.elsewhere.invalid."},
			Extra: []string{"ns1.deleg.example.test. 3600 IN A 192.0.2.200", "ns1.deleg.example.test. 3600 IN AAAA 2001:db8::200"}},
		{Name: "referral at the cut", Qname: "deleg.example.test.", Qtype: dns.TypeNS, NoAA: true,
			Ns:    []string{"deleg.example.test. 3600 IN NS ns1.deleg.example.test.", "deleg.example.test. 3600 IN NS ns.elsewhere.invalid."},
			Extra: []string{"ns1.deleg.example.test. 3600 IN A 192.0.2.200", "ns1.deleg.example.test. 3600 IN AAAA 2001:db8::200"}},
		{Name: "glue is not answered authoritatively", Qname: "ns1.deleg.example.test.", Qtype: dns.TypeA, NoAA: true,
			Ns:    []string{"deleg.example.test. 3600 IN NS ns1.deleg.example.test.", "deleg.example.test. 3600 IN NS ns.elsewhere.invalid."},
			Extra: []string{"ns1.deleg.example.test. 3600 IN A 192.0.2.200", "ns1.deleg.example.test. 3600 IN AAAA 2001:db8::200"}},
		{Name: "DS from the parent side", Qname: "deleg.example.test.", Qtype: dns.TypeDS, Answer: []string{
			"deleg.example.test. 3600 IN DS 12345 8 2 49FD46E6C4B45C55D4AC69CBD3CD34AC1AFE51DE94A2C5C8F2A2C0A1B2C3D4E5"}},
		{Name: "no DS at a cut is NODATA from the parent", Qname: "nodsdeleg.example.test.", Qtype: dns.TypeDS, Ns: []string{soaExample}},
		{Name: "DS of nested zone from the parent zone", Qname: "sub.example.test.", Qtype: dns.TypeDS, Ns: []string{soaExample}},
		{Name: "DS at a top zone answered by the zone", Qname: "other.test.", Qtype: dns.TypeDS, Ns: []string{soaOther}},
		{Name: "nested zone wins", Qname: "sub.example.test.", Qtype: dns.TypeNS,
			Answer: []string{"sub.example.test. 600 IN NS ns1.sub.example.test."},
			Extra:  []string{"ns1.sub.example.test. 600 IN A 192.0.2.210"}},
		{Name: "referral inside nested zone", Qname: "a.deeper.sub.example.test.", Qtype: dns.TypeA, NoAA: true,
			Ns:    []string{"deeper.sub.example.test. 600 IN NS ns.deeper.sub.example.test."},
			Extra: []string{"ns.deeper.sub.example.test. 600 IN A 192.0.2.212"}},
		{Name: "MX additional", Qname: "example.test.", Qtype: dns.TypeMX,
			Answer: []string{"example.test. 3600 IN MX 10 mail.example.test.", "example.test. 3600 IN MX 20 mail2.example.test."},
			Extra:  []string{"mail.example.test. 3600 IN A 192.0.2.25", "mail2.example.test. 3600 IN AAAA 2001:db8::25"}},
		{Name: "MX additional only from the answering zone", Qname: "mx.other.test.", Qtype: dns.TypeMX,
			Answer: []string{"mx.other.test. 1800 IN MX 10 mail.example.test."}},
		{Name: "null MX", Qname: "nullmx.example.test.", Qtype: dns.TypeMX,
			Answer: []string{"nullmx.example.test. 3600 IN MX 0 ."}},
		{Name: "SRV additional", Qname: "_sip._tcp.example.test.", Qtype: dns.TypeSRV,
			Answer: []string{"_sip._tcp.example.test. 3600 IN SRV 10 60 5060 sipserver.example.test.",
				"_sip._tcp.example.test. 3600 IN SRV 20 0 5061 sip2.other.test."},
			Extra: []string{"sipserver.example.test. 3600 IN A 192.0.2.60"}},
		{Name: "NS additional with glue", Qname: "example.test.", Qtype: dns.TypeNS,
			Answer: []string{"example.test. 3600 IN NS ns1.example.test.", "example.test. 3600 IN NS ns2.example.test."},
			Extra: []string{"ns1.example.test. 3600 IN A 192.0.2.53", "ns1.example.test. 3600 IN AAAA 2001:db8::53",
				"ns2.example.test. 3600 IN A 192.0.2.54"}},
		{Name: "ANY gives one RRset (RFC 8482)", Qname: "www.example.test.", Qtype: dns.TypeANY,
			Answer: []string{"www.example.test. 300 IN A 192.0.2.80"}},
		{Name: "ANY at the apex gives the SOA", Qname: "example.test.", Qtype: dns.TypeANY,
			Answer: []string{"example.test. 3600 IN SOA ns1.example.test. hostmaster.example.test. 2024010101 7200 3600 1209600 300"}},
		{Name: "ANY on a missing name", Qname: "nope.example.test.", Qtype: dns.TypeANY,
			Rcode: dns.RcodeNameError, Ns: []string{soaExample}},
		{Name: "TXT escapes", Qname: "txt.example.test.", Qtype: dns.TypeTXT,
			Answer: []string{`txt.example.test. 3600 IN TXT "hello world" "with \"quotes\"" "semi;colon" "back\\slash" "\255\000bin"`}},
		{Name: "HTTPS", Qname: "https.example.test.", Qtype: dns.TypeHTTPS,
			Answer: []string{`https.example.test. 3600 IN HTTPS 1 . alpn="h2,h3" ipv4hint="192.0.2.80" ipv6hint="2001:db8::80"`}},
		{Name: "PTR", Qname: "80.2.0.192.in-addr.arpa.", Qtype: dns.TypePTR,
			Answer: []string{"80.2.0.192.in-addr.arpa. 86400 IN PTR www.example.test."}},
		{Name: "outside every zone is REFUSED", Qname: "www.outside.invalid.", Qtype: dns.TypeA,
			Rcode: dns.RcodeRefused, NoAA: true},
		{Name: "parent of every zone is REFUSED", Qname: "test.", Qtype: dns.TypeSOA,
			Rcode: dns.RcodeRefused, NoAA: true},
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			for _, net := range []string{"udp", "tcp"} {
				r := resolvertest.Exchange(t, net, srv.Addr(), c.Msg())
				if r.Question[0].Name != c.Qname {
					t.Errorf("%s: question %q, want %q", net, r.Question[0].Name, c.Qname)
				}
				c.Check(t, r)
			}
		})
	}
}

// TestZoneChangeVisible publishes a new View and expects the very next
// query to see it, with the new serial.
func TestZoneChangeVisible(t *testing.T) {
	v := testView(t)
	zs := resolvertest.NewZones(v)
	srv := resolvertest.Start(t, zs, resolvertest.Options{})
	q := resolvertest.Case{Qname: "new.example.test.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: []string{soaExample}}
	q.Check(t, resolvertest.Exchange(t, "udp", srv.Addr(), q.Msg()))

	z := v.Zone("example.test.")
	next, err := z.Apply([]zone.Change{{Op: zone.OpReplace, Name: "new.example.test.", Type: dns.TypeA,
		TTL: 60, RRs: []dns.RR{resolvertest.RR(t, "new.example.test. 60 IN A 192.0.2.99")}}})
	if err != nil {
		t.Fatal(err)
	}
	b := v.Edit()
	b.PutZone(next)
	zs.Set(b.View())
	q = resolvertest.Case{Qname: "new.example.test.", Qtype: dns.TypeA, Answer: []string{"new.example.test. 60 IN A 192.0.2.99"}}
	q.Check(t, resolvertest.Exchange(t, "udp", srv.Addr(), q.Msg()))
	soa := resolvertest.Exchange(t, "tcp", srv.Addr(), resolvertest.Case{Qname: "example.test.", Qtype: dns.TypeSOA}.Msg())
	if got := soa.Answer[0].(*dns.SOA).Serial; got != next.Serial() || got != 2024010102 {
		t.Errorf("SOA serial over DNS = %d, want the zone's %d", got, next.Serial())
	}
}
