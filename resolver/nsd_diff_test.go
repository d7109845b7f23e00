package resolver_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/kudurru/kudurru/fsm/zone"
	"github.com/kudurru/kudurru/resolver/resolvertest"
	"github.com/miekg/dns"
)

// diffZones are served by both NSD and kudurru in the differential test.
var diffZones = map[string]string{
	"example.test.":         "testdata/zones/example.test.zone",
	"sub.example.test.":     "testdata/zones/sub.example.test.zone",
	"other.test.":           "testdata/zones/other.test.zone",
	"2.0.192.in-addr.arpa.": "testdata/zones/2.0.192.in-addr.arpa.zone",
}

// diffTypes are asked for every generated name.
var diffTypes = []uint16{
	dns.TypeA, dns.TypeAAAA, dns.TypeNS, dns.TypeSOA, dns.TypeCNAME, dns.TypeMX,
	dns.TypeTXT, dns.TypeSRV, dns.TypePTR, dns.TypeCAA, dns.TypeDS, dns.TypeNAPTR,
	dns.TypeSSHFP, dns.TypeTLSA, dns.TypeHTTPS, dns.TypeSVCB, dns.TypeANY,
	dns.TypeDNSKEY, dns.TypeHINFO,
}

// diffQuery is one generated question and how it is sent.
type diffQuery struct {
	name  string // as sent, letter case included
	qtype uint16
	net   string // udp or tcp
	edns  int    // 0: no OPT; else the advertised UDP size
	do    bool
}

func (q diffQuery) String() string {
	return fmt.Sprintf("%s %s over %s edns=%d do=%v", q.name, dns.Type(q.qtype), q.net, q.edns, q.do)
}

func (q diffQuery) msg() *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(q.name, q.qtype)
	m.RecursionDesired = false
	if q.edns > 0 {
		m.SetEdns0(uint16(q.edns), q.do)
	}
	return m
}

// generateQueries builds the query set from the zones: every owner name,
// every empty non-terminal, a missing child and a missing sibling of each,
// and names outside the zones, each with every type of diffTypes. Letter
// case, EDNS size, DO bit and transport vary by a fixed seed.
func generateQueries(zs []*zone.Zone) []diffQuery {
	seen := map[string]bool{}
	var names []string
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	for _, z := range zs {
		z.Walk(func(n *zone.Node) bool {
			add(n.Name)
			for p := zone.Parent(n.Name); p != "" && zone.IsSubdomain(z.Origin, p); p = zone.Parent(p) {
				add(p) // empty non-terminals and ancestors
			}
			add("nx-child." + n.Name)
			if n.Name != z.Origin {
				add("nx-sibling-" + n.Name)
			}
			return true
		})
	}
	add("www.outside.invalid.")
	add("test.")
	add(".")
	rng := rand.New(rand.NewPCG(3, 1232))
	sizes := []int{0, 512, 600, 1232, 1232, 4096}
	var qs []diffQuery
	for _, n := range names {
		for _, t := range diffTypes {
			q := diffQuery{name: n, qtype: t, net: "udp", edns: sizes[rng.IntN(len(sizes))]}
			if rng.IntN(2) == 0 {
				q.name = mixCase(rng, n)
			}
			if q.edns > 0 {
				q.do = rng.IntN(4) == 0
			}
			if rng.IntN(7) == 0 {
				q.net = "tcp"
			}
			qs = append(qs, q)
		}
	}
	// Large answers at every size, with and without DO, over both
	// transports: these force truncation and the dropping of additional
	// data at different points.
	for _, big := range []struct {
		name  string
		qtype uint16
	}{
		{"many.example.test.", dns.TypeA}, {"bigtxt.example.test.", dns.TypeTXT},
		{"longtxt.example.test.", dns.TypeTXT}, {"example.test.", dns.TypeMX},
		{"example.test.", dns.TypeNS}, {"www.deleg.example.test.", dns.TypeA},
		{"_sip._tcp.example.test.", dns.TypeSRV}, {"many.example.test.", dns.TypeANY},
	} {
		for _, size := range []int{0, 100, 512, 513, 600, 700, 900, 1000, 1232, 4096} {
			for _, net := range []string{"udp", "tcp"} {
				qs = append(qs, diffQuery{name: mixCase(rng, big.name), qtype: big.qtype, net: net, edns: size, do: size%2 == 0 && size > 0})
			}
		}
	}
	return qs
}

func mixCase(rng *rand.Rand, s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' && rng.IntN(2) == 0 {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// TestDifferentialNSD sends the same queries to NSD and to kudurru serving
// the same zone files, and requires the same rcode, AA and TC bits and the
// same sections compared as RRsets, apart from the differences accepted in
// compareWithNSD.
func TestDifferentialNSD(t *testing.T) {
	if testing.Short() {
		t.Skip("starts NSD; skipped with -short")
	}
	nsdAddr := startNSD(t, diffZones)
	var zs []*zone.Zone
	for origin, path := range diffZones {
		zs = append(zs, resolvertest.LoadZoneFile(t, origin, path))
	}
	srv := resolvertest.Start(t, resolvertest.NewZones(resolvertest.View(zs...)), resolvertest.Options{})
	qs := generateQueries(zs)
	if len(qs) < 2000 {
		t.Fatalf("generated %d queries, want at least 2000", len(qs))
	}
	accepted := map[string]int{}
	failures := 0
	for _, q := range qs {
		ours := resolvertest.Exchange(t, q.net, srv.Addr(), q.msg())
		theirs := resolvertest.Exchange(t, q.net, nsdAddr, q.msg())
		if diffs := compareWithNSD(q, ours, theirs, accepted); len(diffs) > 0 {
			failures++
			if failures <= 25 {
				t.Errorf("%s:\n  %s\n--- kudurru:\n%v\n--- nsd:\n%v", q, strings.Join(diffs, "\n  "), ours, theirs)
			}
		}
	}
	if failures > 25 {
		t.Errorf("%d more queries differ", failures-25)
	}
	keys := make([]string, 0, len(accepted))
	for k := range accepted {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		t.Logf("accepted difference %-28s %5d queries", k, accepted[k])
	}
	t.Logf("%d queries compared, %d differ", len(qs), failures)
}
