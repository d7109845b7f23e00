package zone

import (
	"bytes"
	"errors"
	"testing"

	"github.com/miekg/dns"
)

func testView(t testing.TB) *View {
	t.Helper()
	b := Empty.Edit()
	b.SetClusterID("c0ffee")
	b.SetIndex(42)
	b.PutZone(testZone(t))
	z2, err := NewZone("example.net.", mustRRs(t,
		"example.net. 60 IN SOA ns.example.net. h.example.net. 7 1 2 3 4",
		"example.net. 60 IN NS ns.example.net.",
		"txt.example.net. 60 IN TXT \"a\\\"b\" \"c;d\"",
		"_sip._tcp.example.net. 60 IN SRV 10 5 5060 sip.example.net.",
	), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	b.PutZone(z2)
	b.PutMember(Member{ID: "n1", APIAddr: "http://127.0.0.1:1"})
	b.SetTombstone("gone.example.", 99)
	return b.View()
}

func TestViewRoundTrip(t *testing.T) {
	v := testView(t)
	var buf bytes.Buffer
	if err := WriteView(&buf, v); err != nil {
		t.Fatal(err)
	}
	got, err := ReadView(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if got.ClusterID != "c0ffee" || got.Index != 42 || got.Hash() != v.Hash() {
		t.Fatalf("round trip changed the view: %+v", got)
	}
	if s, _ := got.Tombstone("gone.example."); s != 99 {
		t.Error("tombstone lost")
	}
	if m, ok := got.Member("n1"); !ok || m.APIAddr != "http://127.0.0.1:1" {
		t.Error("member lost")
	}
	if got.Zone("example.net.").Serial() != 7 {
		t.Error("serial lost")
	}
}

func TestViewDecodeRefusesDamage(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteView(&buf, testView(t)); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	newer := bytes.Clone(good)
	newer[4] = ViewFormatVersion + 1
	if _, err := ReadView(bytes.NewReader(newer)); !errors.Is(err, ErrNewerFormat) {
		t.Errorf("newer version: %v", err)
	}
	for i := 5; i < len(good); i += 7 {
		bad := bytes.Clone(good)
		bad[i] ^= 0x20
		if _, err := ReadView(bytes.NewReader(bad)); err == nil {
			t.Fatalf("flipping byte %d was not detected", i)
		}
	}
	for _, n := range []int{0, 3, 5, len(good) / 2, len(good) - 1} {
		if _, err := ReadView(bytes.NewReader(good[:n])); !errors.Is(err, ErrFormat) {
			t.Errorf("truncated at %d: %v", n, err)
		}
	}
}

func TestZoneRoundTrip(t *testing.T) {
	z := testZone(t)
	b, err := EncodeZone(z)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeZone(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Serial() != z.Serial() || got.Records() != z.Records() {
		t.Fatal("zone round trip differs")
	}
	b[len(b)-6] ^= 1
	if _, err := DecodeZone(b); err == nil {
		t.Fatal("damage not detected")
	}
}

func FuzzReadView(f *testing.F) {
	var buf bytes.Buffer
	if err := WriteView(&buf, testView(f)); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte("KDRV\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := ReadView(bytes.NewReader(data))
		if err != nil {
			return
		}
		// Whatever decodes must encode and decode to the same content.
		var out bytes.Buffer
		if err := WriteView(&out, v); err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		v2, err := ReadView(&out)
		if err != nil || v2.Hash() != v.Hash() {
			t.Fatalf("re-decode: %v", err)
		}
	})
}

func FuzzDecodeZone(f *testing.F) {
	b, err := EncodeZone(testZone(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		z, err := DecodeZone(data)
		if err != nil {
			return
		}
		if z.SOA() == nil || z.SOA().Serial != z.Serial() || z.Apex().RRset(dns.TypeNS) == nil {
			t.Fatal("decoded zone breaks the zone rules")
		}
	})
}
