package resolver

import (
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
