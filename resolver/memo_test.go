package resolver

import (
	"bytes"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/kudurru/kudurru/fsm/zone"
	"github.com/kudurru/kudurru/resolver/lookup"
	"github.com/miekg/dns"
)

func memoView(t *testing.T, index uint64, lines ...string) *zone.View {
	t.Helper()
	var rrs []dns.RR
	for _, l := range lines {
		rr, err := dns.NewRR(l)
		if err != nil {
			t.Fatal(err)
		}
		rrs = append(rrs, rr)
	}
	z, err := zone.NewZone("example.", rrs, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	b := zone.Empty.Edit()
	b.PutZone(z)
	b.SetIndex(index)
	return b.View()
}

func TestAnswerMemo(t *testing.T) {
	soa, ns := "example. 3600 IN SOA ns. host. 1 2 3 4 60", "example. 3600 IN NS ns."
	v1 := memoView(t, 1, soa, ns, "a.example. 60 IN A 192.0.2.1")
	v2 := memoView(t, 2, soa, ns, "a.example. 60 IN A 192.0.2.2")
	q := dns.Question{Name: "a.example.", Qtype: dns.TypeA, Qclass: dns.ClassINET}
	addr := func(r lookup.Result) string {
		if len(r.Answer) != 1 {
			return "none"
		}
		return r.Answer[0].(*dns.A).A.String()
	}
	m := newAnswerMemo()
	first := m.lookup(v1, q)
	if addr(first) != "192.0.2.1" || cap(first.Answer) != len(first.Answer) {
		t.Fatalf("first lookup %v (cap %d), want 192.0.2.1 with clipped slices", first.Answer, cap(first.Answer))
	}
	if again := m.lookup(v1, q); &again.Answer[0] != &first.Answer[0] {
		t.Error("the second lookup on the same View was not remembered")
	}
	if got := addr(m.lookup(v2, q)); got != "192.0.2.2" {
		t.Errorf("after the View changed: %s, want 192.0.2.2", got)
	}
	// A query still on the old View gets the old View's answer.
	if got := addr(m.lookup(v1, q)); got != "192.0.2.1" {
		t.Errorf("old View: %s, want 192.0.2.1", got)
	}
	if got := addr(m.lookup(v2, q)); got != "192.0.2.2" {
		t.Errorf("back on the new View: %s, want 192.0.2.2", got)
	}
	// The name is compared as sent: another spelling gets its own entry,
	// with the owner spelled its way.
	upper := q
	upper.Name = "A.EXAMPLE."
	if r := m.lookup(v2, upper); len(r.Answer) != 1 || r.Answer[0].Header().Name != "A.EXAMPLE." {
		t.Errorf("other spelling: %v", r.Answer)
	}
	// Names outside the zones are not stored.
	out := dns.Question{Name: "www.other.", Qtype: dns.TypeA, Qclass: dns.ClassINET}
	if r := m.lookup(v2, out); r.Outcome != lookup.NotAuthoritative {
		t.Fatalf("outside name: %v", r.Outcome)
	}
	for i := range m.slots {
		if e := m.slots[i].Load(); e != nil && e.name == out.Name {
			t.Fatal("a name outside the zones was stored")
		}
	}
}

// TestTemplateMatchesWriteMsg checks the remembered packed reply against
// the reply built and packed per query: for every name of the test zones,
// spelled as written, in upper case and with an unknown label in front,
// many types, and queries with and without EDNS (several sizes, DO), RD
// and CD, over UDP and TCP, the two must be the same bytes whenever the
// template is used.
func TestTemplateMatchesWriteMsg(t *testing.T) {
	b := zone.Empty.Edit()
	names := map[string]bool{}
	for _, f := range []string{"example.test.", "sub.example.test.", "other.test.", "2.0.192.in-addr.arpa."} {
		fh, err := os.Open("testdata/zones/" + f + "zone")
		if err != nil {
			t.Fatal(err)
		}
		zp := dns.NewZoneParser(fh, f, "")
		var rrs []dns.RR
		for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
			rrs = append(rrs, rr)
			names[rr.Header().Name] = true
		}
		fh.Close()
		if err := zp.Err(); err != nil {
			t.Fatal(err)
		}
		z, err := zone.NewZone(f, rrs, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		b.PutZone(z)
	}
	b.SetIndex(1)
	v := b.View()

	type variant struct {
		tcp, rd, cd, do bool
		edns            uint16 // 0: no OPT
	}
	variants := []variant{
		{}, {rd: true}, {cd: true}, {rd: true, cd: true, edns: 1232},
		{edns: 512}, {edns: 1232, do: true}, {edns: 4096}, {tcp: true}, {tcp: true, edns: 1232, do: true},
	}
	types := []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeMX, dns.TypeTXT, dns.TypeNS, dns.TypeSOA,
		dns.TypeCNAME, dns.TypeSRV, dns.TypeDS, dns.TypeANY, dns.TypePTR, dns.TypeHTTPS, dns.TypeCAA}
	memo := newAnswerMemo()
	addr := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5353}
	var used, cases int
	for name := range names {
		for _, qname := range []string{name, strings.ToUpper(name), "nx-" + name} {
			for _, qt := range types {
				for i, vr := range variants {
					q := new(dns.Msg)
					q.SetQuestion(qname, qt)
					q.Id = uint16(cases*7 + i)
					q.RecursionDesired, q.CheckingDisabled = vr.rd, vr.cd
					if vr.edns > 0 {
						q.SetEdns0(vr.edns, vr.do)
					}
					cases++
					res, tmpl := memo.find(v, q.Question[0])
					if res.Outcome == lookup.NotAuthoritative || tmpl == nil {
						continue
					}
					slow, fast := &benchWriter{addr: addr}, &benchWriter{addr: addr}
					var rw responseWriter
					rw.init(slow, q, vr.tcp, 1, 1232)
					m := new(dns.Msg).SetReply(q)
					m.Authoritative, m.Rcode = res.Authoritative, res.Rcode
					m.Answer, m.Ns, m.Extra = res.Answer, res.Ns, res.Extra
					if err := rw.WriteMsg(m); err != nil {
						t.Fatal(err)
					}
					rw.init(fast, q, vr.tcp, 1, 1232)
					done, err := rw.writeTemplate(tmpl, q)
					if err != nil {
						t.Fatal(err)
					}
					if !done {
						if len(slow.last) < 12 || slow.last[2]&0x02 == 0 {
							t.Errorf("%s %s %+v: template refused a reply that was not truncated", qname, dns.TypeToString[qt], vr)
						}
						continue
					}
					used++
					if !bytes.Equal(slow.last, fast.last) {
						var a, b dns.Msg
						a.Unpack(slow.last)
						b.Unpack(fast.last)
						t.Fatalf("%s %s %+v: template reply differs\nbuilt:\n%v\ntemplate:\n%v", qname, dns.TypeToString[qt], vr, &a, &b)
					}
				}
			}
		}
	}
	// Most replies in these zones are small enough for the template; a
	// test that compared none would prove nothing.
	if used < cases/2 {
		t.Fatalf("template used for %d of %d queries", used, cases)
	}
	t.Logf("template used for %d of %d queries", used, cases)
}

// TestTemplateSizeBound: an answer larger than maxTemplate gets no packed
// template (each spelling of its name would hold its own copy); a small
// one does.
func TestTemplateSizeBound(t *testing.T) {
	long := `"` + strings.Repeat("x", 250) + `"`
	v := memoView(t, 1, "example. 3600 IN SOA ns. host. 1 2 3 4 60", "example. 3600 IN NS ns.",
		"big.example. 60 IN TXT "+long+" "+long+" "+long,
		"small.example. 60 IN TXT \"x\"")
	m := newAnswerMemo()
	for _, c := range []struct {
		name string
		want bool
	}{{"big.example.", false}, {"BIG.example.", false}, {"small.example.", true}} {
		res, tmpl := m.find(v, dns.Question{Name: c.name, Qtype: dns.TypeTXT, Qclass: dns.ClassINET})
		if len(res.Answer) != 1 {
			t.Fatalf("%s: answer %v", c.name, res.Answer)
		}
		if got := tmpl != nil; got != c.want {
			t.Errorf("%s: template %v (%d bytes), want %v", c.name, got, len(tmpl), c.want)
		}
		if len(tmpl)+optLen > maxTemplate {
			t.Errorf("%s: template of %d bytes", c.name, len(tmpl))
		}
	}
}

// TestMemoBudget: spellings of a name with a large answer each make an
// entry with its own records; the table stores them only while their
// estimated cost fits the budget, and entries of an older View free
// theirs when they are replaced.
func TestMemoBudget(t *testing.T) {
	long := `"` + strings.Repeat("x", 250) + `"`
	lines := []string{"example. 3600 IN SOA ns. host. 1 2 3 4 60", "example. 3600 IN NS ns.",
		"big.example. 60 IN TXT " + long + " " + long + " " + long}
	v1, v2 := memoView(t, 1, lines...), memoView(t, 2, lines...)
	m := newAnswerMemo()
	m.budget = 20_000
	// Every letter-case spelling of "big": 8 entries of about 4 KB each.
	var spellings []string
	for i := range 8 {
		b := []byte("big")
		for j := range b {
			if i&(1<<j) != 0 {
				b[j] -= 'a' - 'A'
			}
		}
		spellings = append(spellings, string(b)+".example.")
	}
	stored := func(v *zone.View) int {
		n := 0
		for _, name := range spellings {
			q := dns.Question{Name: name, Qtype: dns.TypeTXT, Qclass: dns.ClassINET}
			first, _ := m.find(v, q)
			again, _ := m.find(v, q)
			if &first.Answer[0] == &again.Answer[0] {
				n++ // the second find hit the table
			}
			if used := m.bytes(); used > m.budget || used < 0 {
				t.Fatalf("table holds %d bytes, budget %d", used, m.budget)
			}
		}
		return n
	}
	n1 := stored(v1)
	if n1 == 0 || n1 == len(spellings) {
		t.Fatalf("stored %d of %d spellings: want some, not all, with a budget of %d", n1, len(spellings), m.budget)
	}
	// A new View: the old entries are outdated, replacing them frees
	// their cost, so the new View's answers are stored as before.
	if n2 := stored(v2); n2 == 0 {
		t.Fatalf("nothing stored for the new View: outdated entries did not free their cost (%d bytes used)", m.bytes())
	}
	// Entries in slots no query visits again do not hold the budget for
	// good: refused stores evict entries elsewhere, until a small answer
	// that keeps missing is stored.
	small := memoView(t, 3, append(lines, "small.example. 60 IN TXT \"x\"")...)
	m.budget = m.bytes() // full
	q := dns.Question{Name: "small.example.", Qtype: dns.TypeTXT, Qclass: dns.ClassINET}
	for i := 0; ; i++ {
		first, _ := m.find(small, q)
		if again, _ := m.find(small, q); &first.Answer[0] == &again.Answer[0] {
			break
		}
		if i == 10*answerSlots {
			t.Fatalf("a full table never made room (%d bytes used)", m.bytes())
		}
	}
}
