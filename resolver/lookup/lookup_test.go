package lookup_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kudurru/kudurru/fsm/zone"
	"github.com/kudurru/kudurru/resolver/lookup"
	"github.com/miekg/dns"
)

func mustZone(t testing.TB, origin string, lines ...string) *zone.Zone {
	t.Helper()
	var rrs []dns.RR
	for _, l := range lines {
		rr, err := dns.NewRR(l)
		if err != nil {
			t.Fatal(err)
		}
		rrs = append(rrs, rr)
	}
	z, err := zone.NewZone(origin, rrs, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	return z
}

func view(zs ...*zone.Zone) *zone.View {
	b := zone.Empty.Edit()
	for _, z := range zs {
		b.PutZone(z)
	}
	return b.View()
}

// The full behaviour is tested over a real server in package resolver and
// against NSD; these cases pin what only the Result shows.
func TestOutcomes(t *testing.T) {
	z := mustZone(t, "example.",
		"example. 3600 IN SOA ns. host. 1 2 3 4 60",
		"example. 3600 IN NS ns.example.",
		"ns.example. 3600 IN A 192.0.2.1",
		"a.example. 3600 IN A 192.0.2.2",
		"c.example. 3600 IN CNAME out.invalid.",
		"d.example. 3600 IN NS ns.d.example.",
		"ns.d.example. 3600 IN A 192.0.2.3",
	)
	v := view(z)
	for _, c := range []struct {
		name     string
		q        string
		t        uint16
		outcome  lookup.Outcome
		rcode    int
		aa       bool
		dangling string
	}{
		{"success", "a.example.", dns.TypeA, lookup.Success, dns.RcodeSuccess, true, ""},
		{"nodata", "a.example.", dns.TypeMX, lookup.NoData, dns.RcodeSuccess, true, ""},
		{"nxdomain", "b.example.", dns.TypeA, lookup.NXDomain, dns.RcodeNameError, true, ""},
		{"referral", "x.d.example.", dns.TypeA, lookup.Referral, dns.RcodeSuccess, false, ""},
		{"dangling CNAME", "C.example.", dns.TypeA, lookup.Success, dns.RcodeSuccess, true, "out.invalid."},
		{"not ours", "a.other.", dns.TypeA, lookup.NotAuthoritative, dns.RcodeRefused, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := lookup.Lookup(v, dns.Question{Name: c.q, Qtype: c.t, Qclass: dns.ClassINET})
			if r.Outcome != c.outcome || r.Rcode != c.rcode || r.Authoritative != c.aa || r.Dangling != c.dangling {
				t.Errorf("got %s rcode %d aa %v dangling %q; want %s %d %v %q",
					r.Outcome, r.Rcode, r.Authoritative, r.Dangling, c.outcome, c.rcode, c.aa, c.dangling)
			}
		})
	}
	if r := lookup.Lookup(nil, dns.Question{Name: "a.example.", Qtype: dns.TypeA}); r.Outcome != lookup.NotAuthoritative {
		t.Errorf("nil view: %s", r.Outcome)
	}
}

// TestZoneDataNotModified checks that answers that rewrite owner names
// (letter case, wildcards) and TTLs (negative answers) copy the records.
func TestZoneDataNotModified(t *testing.T) {
	z := mustZone(t, "example.",
		"example. 3600 IN SOA ns. host. 1 2 3 4 60",
		"example. 3600 IN NS ns.example.",
		"*.w.example. 3600 IN A 192.0.2.9",
		"a.example. 3600 IN A 192.0.2.2",
	)
	v := view(z)
	before := fmt.Sprint(z.AllRecords())
	for _, q := range []string{"A.EXAMPLE.", "x.w.example.", "nx.example.", "X.W.Example."} {
		r := lookup.Lookup(v, dns.Question{Name: q, Qtype: dns.TypeA, Qclass: dns.ClassINET})
		for _, rr := range append(r.Answer, r.Ns...) {
			rr.Header().Name = "mutated."
			rr.Header().Ttl = 1
		}
	}
	if after := fmt.Sprint(z.AllRecords()); after != before {
		t.Errorf("zone data changed:\n%s\n%s", before, after)
	}
}

func TestMaxChain(t *testing.T) {
	lines := []string{"example. 3600 IN SOA ns. host. 1 2 3 4 60", "example. 3600 IN NS ns.example."}
	for i := range 20 {
		lines = append(lines, fmt.Sprintf("c%d.example. 60 IN CNAME c%d.example.", i, i+1))
	}
	v := view(mustZone(t, "example.", lines...))
	r := lookup.Lookup(v, dns.Question{Name: "c0.example.", Qtype: dns.TypeA, Qclass: dns.ClassINET})
	if len(r.Answer) != lookup.MaxChain+1 {
		t.Errorf("%d CNAMEs in the answer, want %d", len(r.Answer), lookup.MaxChain+1)
	}
}

// bigView builds a zone of n names with an A record each, plus wildcards
// and CNAMEs, for the benchmarks.
func bigView(b *testing.B, n int) *zone.View {
	var sb strings.Builder
	sb.WriteString("$ORIGIN big.example.\n@ 3600 IN SOA ns hostmaster 1 7200 3600 1209600 300\n@ NS ns\nns A 192.0.2.1\n")
	sb.WriteString("*.wild A 192.0.2.2\nalias CNAME host-42\n")
	for i := range n {
		fmt.Fprintf(&sb, "host-%d A 10.%d.%d.%d\n", i, i>>16&255, i>>8&255, i&255)
	}
	zp := dns.NewZoneParser(strings.NewReader(sb.String()), "big.example.", "")
	var rrs []dns.RR
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		rrs = append(rrs, rr)
	}
	if err := zp.Err(); err != nil {
		b.Fatal(err)
	}
	z, err := zone.NewZone("big.example.", rrs, 0, false)
	if err != nil {
		b.Fatal(err)
	}
	return view(z)
}

func BenchmarkLookup(b *testing.B) {
	v := bigView(b, 100_000)
	for _, c := range []struct{ name, q string }{
		{"exact", "host-77777.big.example."},
		{"exact_mixed_case", "HOST-77777.Big.Example."},
		{"nxdomain", "nope-77777.big.example."},
		{"wildcard", "x.wild.big.example."},
		{"cname", "alias.big.example."},
		{"not_ours", "www.example.org."},
	} {
		q := dns.Question{Name: c.q, Qtype: dns.TypeA, Qclass: dns.ClassINET}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				lookup.Lookup(v, q)
			}
		})
	}
}
