package cache

import (
	"bytes"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// FuzzNameToWire checks the fast path against miekg/dns.
func FuzzNameToWire(f *testing.F) {
	for _, s := range []string{".", "example.", "www.Example.ORG.", `a\.b.example.`, `\065.example.`,
		"a..b.", ".a.", "a", strings.Repeat("a", 64) + ".", strings.Repeat("abcdefg.", 32)} {
		f.Add(s)
	}
	// testdata/fuzz/FuzzNameToWire/9f24aa4f7774defc: an escaped name that
	// miekg/dns packs but IsDomainName refuses; the oracle now compares with
	// PackDomainName only, which the escape path calls.
	f.Add("\u04fa\\.")
	f.Fuzz(func(t *testing.T, s string) {
		var got [maxName + 1]byte
		n, ok := nameToWire(s, &got)
		var want [maxName + 1]byte
		wn, err := dns.PackDomainName(s, want[:], 0, nil, false)
		wantOK := err == nil && wn > 0 && wn <= maxName
		if ok && !wantOK {
			t.Fatalf("nameToWire(%q) accepted a name miekg/dns refuses", s)
		}
		if ok && !bytes.Equal(got[:n], want[:wn]) {
			t.Fatalf("nameToWire(%q) = %x, miekg/dns %x", s, got[:n], want[:wn])
		}
		if !ok && wantOK && !strings.Contains(s, `\`) {
			t.Fatalf("nameToWire(%q) refused a name miekg/dns packs", s)
		}
	})
}
