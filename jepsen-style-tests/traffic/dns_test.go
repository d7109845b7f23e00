package traffic

import (
	"testing"
)

func TestUnquote(t *testing.T) {
	cases := map[string]string{
		`"v1"`:         "v1",
		`"a" "b"`:      "ab",
		`"with \"q\""`: `with "q"`,
		`bare`:         "bare",
		Quote("w3-17"): "w3-17",
	}
	for in, want := range cases {
		if got := Unquote(in); got != want {
			t.Errorf("Unquote(%s) = %q, want %q", in, got, want)
		}
	}
}

func TestRelative(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"w1-2.jepsen.test.", "w1-2"},
		{"W1-2.Jepsen.Test", "w1-2"},
		{"jepsen.test.", "@"},
	} {
		if got := Relative(c.name, "jepsen.test."); got != c.want {
			t.Errorf("Relative(%s) = %s, want %s", c.name, got, c.want)
		}
	}
}

func TestDigestIgnoresOrder(t *testing.T) {
	a := Zone{RRsets: []RRset{{Name: "a.z.", Type: "TXT", TTL: 60, Records: []string{`"1"`, `"2"`}}, {Name: "b.z.", Type: "TXT", TTL: 60, Records: []string{`"x"`}}}}
	b := Zone{RRsets: []RRset{{Name: "b.z.", Type: "TXT", TTL: 60, Records: []string{`"x"`}}, {Name: "a.z.", Type: "TXT", TTL: 60, Records: []string{`"2"`, `"1"`}}}}
	c := Zone{RRsets: []RRset{{Name: "b.z.", Type: "TXT", TTL: 61, Records: []string{`"x"`}}, {Name: "a.z.", Type: "TXT", TTL: 60, Records: []string{`"2"`, `"1"`}}}}
	if a.Digest() != b.Digest() {
		t.Error("same content, different digest")
	}
	if a.Digest() == c.Digest() {
		t.Error("different TTL, same digest")
	}
	sets := a.TXTSets("z.")
	if len(sets["a"]) != 2 || sets["b"][0] != "x" {
		t.Errorf("TXTSets: %v", sets)
	}
}
