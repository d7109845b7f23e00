package zone

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

func mustRR(t testing.TB, s string) dns.RR {
	t.Helper()
	rr, err := dns.NewRR(s)
	if err != nil {
		t.Fatalf("parse %q: %v", s, err)
	}
	return rr
}

func mustRRs(t testing.TB, lines ...string) []dns.RR {
	t.Helper()
	out := make([]dns.RR, len(lines))
	for i, l := range lines {
		out[i] = mustRR(t, l)
	}
	return out
}

func testZone(t testing.TB) *Zone {
	t.Helper()
	z, err := NewZone("Example.COM", mustRRs(t,
		"example.com. 3600 IN SOA ns1.example.com. hostmaster.example.com. 10 3600 600 1209600 300",
		"example.com. 3600 IN NS ns1.example.com.",
		"ns1.example.com. 3600 IN A 192.0.2.53",
		"WWW.example.com. 300 IN A 192.0.2.1",
		"www.example.com. 300 IN A 192.0.2.2",
		"a.b.c.example.com. 300 IN TXT \"deep\"",
	), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	return z
}

func TestKeyOrderAndPrefix(t *testing.T) {
	names := []string{"example.", "a.example.", "yljkjljk.a.example.", "Z.a.example.", "zABC.a.EXAMPLE.", "z.example.", "\\001.z.example.", "*.z.example.", "\\200.z.example."}
	want := []string{"example.", "a.example.", "yljkjljk.a.example.", "z.a.example.", "zabc.a.example.", "z.example.", "\\001.z.example.", "*.z.example.", "\\200.z.example."}
	// RFC 4034 §6.1 gives this order.
	keys := make([][]byte, len(names))
	for i, n := range names {
		keys[i] = Key(n)
	}
	if !slices.IsSortedFunc(keys, bytes.Compare) {
		t.Errorf("keys not in canonical order for %v", want)
	}
	if !bytes.HasPrefix(Key("x.y.a.example."), Key("a.example.")) {
		t.Error("descendant key lacks the ancestor's prefix")
	}
	if bytes.HasPrefix(Key("ab.example."), Key("a.example.")) {
		t.Error("sibling with a longer label shares the key prefix")
	}
	if !bytes.Equal(Key("WWW.Example.COM"), Key("www.example.com.")) {
		t.Error("key is case-sensitive")
	}
}

func TestIsSubdomain(t *testing.T) {
	cases := []struct {
		name          string
		parent, child string
		want          bool
	}{
		{"same", "example.com.", "example.com.", true},
		{"child", "example.com.", "www.example.com.", true},
		{"suffix not label", "example.com.", "badexample.com.", false},
		{"escaped dot", "com.", "a\\.com.", false},
		{"escaped backslash then dot", "com.", "a\\\\.com.", true},
		{"root", ".", "anything.", true},
		{"shorter", "www.example.com.", "example.com.", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := IsSubdomain(c.parent, c.child); got != c.want {
				t.Errorf("IsSubdomain(%q, %q) = %v", c.parent, c.child, got)
			}
		})
	}
}

func TestNewZone(t *testing.T) {
	z := testZone(t)
	if z.Origin != "example.com." {
		t.Fatalf("origin %q", z.Origin)
	}
	if z.Serial() != 10 || z.SOA().Serial != 10 {
		t.Errorf("serial %d / SOA %d, want 10", z.Serial(), z.SOA().Serial)
	}
	if got := len(z.Get("www.example.com.").RRset(dns.TypeA).RRs); got != 2 {
		t.Errorf("www A has %d records", got)
	}
	if z.Records() != 6 || z.Names() != 4 {
		t.Errorf("records %d names %d", z.Records(), z.Names())
	}
	if !z.HasDescendants(Key("b.c.example.com.")) || z.Get("b.c.example.com.") != nil || !z.HasDescendants(Key("c.example.com.")) {
		t.Error("b.c.example.com. and c.example.com. should be empty non-terminals")
	}
	if z.HasDescendants(Key("www.example.com.")) {
		t.Error("www has no descendants")
	}
	var path []string
	z.Ancestors(Key("x.a.b.c.example.com."), func(n *Node) bool { path = append(path, n.Name); return true })
	if want := []string{"example.com.", "a.b.c.example.com."}; !slices.Equal(path, want) {
		t.Errorf("ancestors %v, want %v", path, want)
	}
}

func TestNewZoneErrors(t *testing.T) {
	soa := "example.com. 3600 IN SOA ns1.example.com. h.example.com. 1 2 3 4 5"
	ns := "example.com. 3600 IN NS ns1.example.com."
	cases := []struct {
		name  string
		lines []string
		want  string
	}{
		{"no soa", []string{ns}, "no SOA"},
		{"no ns", []string{soa}, "no NS"},
		{"out of zone", []string{soa, ns, "www.example.org. 1 IN A 192.0.2.1"}, "outside zone"},
		{"cname and other", []string{soa, ns, "w.example.com. 1 IN CNAME x.", "w.example.com. 1 IN A 192.0.2.1"}, "CNAME must be the only"},
		{"two cnames", []string{soa, ns, "w.example.com. 1 IN CNAME x.", "w.example.com. 1 IN CNAME y."}, "at most one CNAME"},
		{"soa below apex", []string{soa, ns, "w.example.com. 1 IN SOA a. b. 1 2 3 4 5"}, "only at the zone apex"},
		{"class", []string{soa, ns, "w.example.com. 1 CH A 192.0.2.1"}, "class IN"},
		{"two soas", []string{soa, ns, "example.com. 3600 IN SOA ns2.example.com. h.example.com. 1 2 3 4 5"}, "exactly one SOA"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewZone("example.com.", mustRRs(t, c.lines...), 0, false)
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want ErrInvalid containing %q", err, c.want)
			}
		})
	}
}

func TestRecordMustSurviveWireEncoding(t *testing.T) {
	// The zone-file parser accepts an SOA with empty rdata (for DNS UPDATE);
	// it packs to bytes that do not unpack, so it must never reach the log.
	empty := &dns.SOA{Hdr: dns.RR_Header{Name: "example.com.", Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: 3600}}
	_, err := NewZone("example.com.", append([]dns.RR{empty}, mustRR(t, "example.com. 3600 IN NS ns1.example.com.")), 0, false)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "wire encoding") {
		t.Fatalf("err = %v", err)
	}
}

func TestApply(t *testing.T) {
	z := testZone(t)
	z2, err := z.Apply([]Change{
		{Op: OpReplace, Name: "www.example.com.", Type: dns.TypeA, TTL: 60, RRs: mustRRs(t, "www.example.com. 1 IN A 192.0.2.9")},
		{Op: OpAdd, Name: "mail.example.com", Type: dns.TypeMX, TTL: 60, RRs: mustRRs(t, "mail.example.com. 60 IN MX 10 mx.example.net.")},
		{Op: OpDeleteName, Name: "a.b.c.example.com."},
	})
	if err != nil {
		t.Fatal(err)
	}
	if z2.Serial() != 11 || z2.SOA().Serial != 11 {
		t.Errorf("serial %d, want 11", z2.Serial())
	}
	if z.Serial() != 10 || len(z.Get("www.example.com.").RRset(dns.TypeA).RRs) != 2 || z.Get("a.b.c.example.com.") == nil {
		t.Error("Apply modified the original zone")
	}
	www := z2.Get("www.example.com.").RRset(dns.TypeA)
	if len(www.RRs) != 1 || www.TTL != 60 || www.RRs[0].Header().Ttl != 60 {
		t.Errorf("www after replace: %v", www)
	}
	if z2.Get("a.b.c.example.com.") != nil || z2.HasDescendants(Key("c.example.com.")) {
		t.Error("delete_name left data behind")
	}
	if z2.Records() != 5 {
		t.Errorf("records %d, want 5", z2.Records())
	}

	// Add then remove a single record.
	z3, err := z2.Apply([]Change{{Op: OpAdd, Name: "www.example.com.", Type: dns.TypeA, TTL: 60, RRs: mustRRs(t, "www.example.com. 60 IN A 192.0.2.10")}})
	if err != nil || len(z3.Get("www.example.com.").RRset(dns.TypeA).RRs) != 2 {
		t.Fatalf("add: %v", err)
	}
	z4, err := z3.Apply([]Change{{Op: OpRemove, Name: "www.example.com.", Type: dns.TypeA, RRs: mustRRs(t, "www.example.com. 60 IN A 192.0.2.9")}})
	if err != nil {
		t.Fatal(err)
	}
	if rrs := z4.Get("www.example.com.").RRset(dns.TypeA).RRs; len(rrs) != 1 || rrs[0].(*dns.A).A.String() != "192.0.2.10" {
		t.Errorf("remove left %v", rrs)
	}

	// A SOA change with a greater serial sets it; a smaller one is overridden.
	z5, err := z4.Apply([]Change{{Op: OpReplace, Name: "example.com.", Type: dns.TypeSOA, RRs: mustRRs(t, "example.com. 3600 IN SOA ns1.example.com. h.example.com. 2026112900 1 2 3 4")}})
	if err != nil || z5.Serial() != 2026112900 {
		t.Fatalf("soa serial: %v %d", err, z5.Serial())
	}
	z6, err := z5.Apply([]Change{{Op: OpReplace, Name: "example.com.", Type: dns.TypeSOA, RRs: mustRRs(t, "example.com. 3600 IN SOA ns1.example.com. h.example.com. 5 1 2 3 4")}})
	if err != nil || z6.Serial() != 2026112901 {
		t.Fatalf("lower soa serial must not go back: %v %d", err, z6.Serial())
	}
}

func TestApplyAtomic(t *testing.T) {
	z := testZone(t)
	bad := []struct {
		name    string
		changes []Change
	}{
		{"cname conflict", []Change{{Op: OpReplace, Name: "www.example.com.", Type: dns.TypeCNAME, RRs: mustRRs(t, "www.example.com. 1 IN CNAME x.")}}},
		{"apex ns delete", []Change{{Op: OpDeleteRRset, Name: "example.com.", Type: dns.TypeNS}}},
		{"apex ns remove last", []Change{{Op: OpRemove, Name: "example.com.", Type: dns.TypeNS, RRs: mustRRs(t, "example.com. 1 IN NS ns1.example.com.")}}},
		{"apex delete", []Change{{Op: OpDeleteName, Name: "example.com."}}},
		{"outside", []Change{{Op: OpReplace, Name: "x.example.org.", Type: dns.TypeA, RRs: mustRRs(t, "x.example.org. 1 IN A 192.0.2.1")}}},
		{"second soa", []Change{{Op: OpAdd, Name: "example.com.", Type: dns.TypeSOA, RRs: mustRRs(t, "example.com. 1 IN SOA a. b. 1 2 3 4 5")}}},
		{"type mismatch", []Change{{Op: OpReplace, Name: "w.example.com.", Type: dns.TypeAAAA, RRs: mustRRs(t, "w.example.com. 1 IN A 192.0.2.1")}}},
		{"owner mismatch", []Change{{Op: OpReplace, Name: "w.example.com.", Type: dns.TypeA, RRs: mustRRs(t, "v.example.com. 1 IN A 192.0.2.1")}}},
		{"forbidden type", []Change{{Op: OpDeleteRRset, Name: "w.example.com.", Type: dns.TypeANY}}},
		{"unknown op", []Change{{Op: 99, Name: "w.example.com."}}},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			// A good change first: it must not survive the bad one.
			changes := append([]Change{{Op: OpReplace, Name: "ok.example.com.", Type: dns.TypeA, RRs: mustRRs(t, "ok.example.com. 1 IN A 192.0.2.7")}}, c.changes...)
			if _, err := z.Apply(changes); !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			if z.Get("ok.example.com.") != nil || z.Serial() != 10 {
				t.Fatal("failed Apply changed the zone")
			}
		})
	}
}

func TestSerialArithmetic(t *testing.T) {
	cases := []struct {
		a, b uint32
		want bool
	}{
		{1, 0, true}, {0, 1, false}, {0, 0xffffffff, true}, {0xffffffff, 0, false},
		{5, 5, false}, {1 << 31, 0, false}, {(1 << 31) - 1, 0, true},
	}
	for _, c := range cases {
		if got := SerialGreater(c.a, c.b); got != c.want {
			t.Errorf("SerialGreater(%d, %d) = %v", c.a, c.b, got)
		}
	}
	if nextSerial(0xffffffff, 0, false) != 0 || !SerialGreater(nextSerial(0xffffffff, 0, false), 0xffffffff) {
		t.Error("serial must wrap and still be greater")
	}
}

func TestFindZone(t *testing.T) {
	parent := testZone(t)
	child, err := NewZone("sub.example.com.", mustRRs(t,
		"sub.example.com. 1 IN SOA ns.sub.example.com. h. 1 2 3 4 5",
		"sub.example.com. 1 IN NS ns.sub.example.com."), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	b := Empty.Edit()
	b.PutZone(parent)
	b.PutZone(child)
	v := b.View()
	for q, want := range map[string]string{
		"www.example.com.":     "example.com.",
		"example.com.":         "example.com.",
		"a.sub.example.com.":   "sub.example.com.",
		"sub.example.com.":     "sub.example.com.",
		"xsub.example.com.":    "example.com.",
		"example.org.":         "",
		"a\\.sub.example.com.": "example.com.",
	} {
		got := ""
		if z := v.FindZone(q); z != nil {
			got = z.Origin
		}
		if got != want {
			t.Errorf("FindZone(%q) = %q, want %q", q, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { v.FindZone("a.b.www.example.com.") }); n != 0 {
		t.Errorf("FindZone allocates %v times", n)
	}
}

func TestDeleteZoneTombstone(t *testing.T) {
	b := Empty.Edit()
	b.PutZone(testZone(t))
	v := b.View()
	b = v.Edit()
	b.DeleteZone("example.com.")
	v2 := b.View()
	if v2.Zone("example.com.") != nil || v.Zone("example.com.") == nil {
		t.Fatal("delete did not copy-on-write")
	}
	if s, ok := v2.Tombstone("example.com."); !ok || s != 10 {
		t.Fatalf("tombstone %d %v", s, ok)
	}
}

func TestKeyEscapes(t *testing.T) {
	cases := []struct{ a, b string }{
		{"A.example.", "\\065.example."},
		{"a\\.b.example.", "a\\046b.example."},
		{"x.example", "X.EXAMPLE."},
	}
	for _, c := range cases {
		if !bytes.Equal(Key(c.a), Key(c.b)) {
			t.Errorf("Key(%q) = %q, Key(%q) = %q", c.a, Key(c.a), c.b, Key(c.b))
		}
	}
	if bytes.Equal(Key("a\\.b.example."), Key("a.b.example.")) {
		t.Error("escaped dot must stay inside the label")
	}
	if len(Key(".")) != 0 {
		t.Error("root key must be empty")
	}
	if got := Key("a\\000b.example."); !bytes.Equal(got, []byte("example\x00a\x01\x01b\x00")) {
		t.Errorf("zero byte escape: %q", got)
	}
}

func FuzzKey(f *testing.F) {
	f.Add("www.Example.com.")
	f.Add("a\\.b\\255.c")
	f.Fuzz(func(t *testing.T, name string) {
		canon, err := CanonicalName(name)
		if err != nil {
			return
		}
		// The direct parser agrees with the wire round trip.
		if !bytes.Equal(Key(name), Key(canon)) {
			t.Fatalf("Key(%q)=%q but Key(%q)=%q", name, Key(name), canon, Key(canon))
		}
	})
}

func TestCheckPrecondition(t *testing.T) {
	z := testZone(t)
	www := mustRRs(t, "www.example.com. 1 IN A 192.0.2.2", "www.example.com. 9 IN A 192.0.2.1")
	next := []Change{{Op: OpReplace, Name: "www.example.com.", Type: dns.TypeA, RRs: mustRRs(t, "www.example.com. 1 IN A 192.0.2.3")}}
	z2, err := z.Apply(append([]Change{{Op: OpCheck, Name: "www.example.com.", Type: dns.TypeA, RRs: www}}, next...))
	if err != nil {
		t.Fatalf("matching check: %v", err)
	}
	if _, err := z2.Apply(append([]Change{{Op: OpCheck, Name: "www.example.com.", Type: dns.TypeA, RRs: www}}, next...)); !errors.Is(err, ErrPrecondition) {
		t.Fatalf("stale check: %v", err)
	}
	if _, err := z2.Apply([]Change{{Op: OpCheck, Name: "new.example.com.", Type: dns.TypeA}}); err != nil {
		t.Fatalf("absent check: %v", err)
	}
	if _, err := z2.Apply([]Change{{Op: OpCheck, Name: "www.example.com.", Type: dns.TypeA}}); !errors.Is(err, ErrPrecondition) {
		t.Fatalf("absent check on present set: %v", err)
	}
}

func TestEqualNames(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"WWW.Example.", "www.example.", true},
		{"www.example.", "www.example", false},
		{"\xc3\x84.example.", "\xc3\xa4.example.", false}, // only ASCII folds (RFC 4343)
		{"a-b.", "A-B.", true},
		{"@.", "`.", false},
	} {
		if got := EqualNames(c.a, c.b); got != c.want {
			t.Errorf("EqualNames(%q, %q) = %v", c.a, c.b, got)
		}
	}
}
