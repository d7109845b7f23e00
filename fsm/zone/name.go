package zone

import (
	"fmt"
	"strings"

	"github.com/miekg/dns"
)

// CanonicalName returns name lower-cased and fully qualified, or an error when
// it is not a valid domain name.
func CanonicalName(name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("empty domain name")
	}
	fq := dns.Fqdn(name)
	if _, ok := dns.IsDomainName(fq); !ok {
		return "", fmt.Errorf("invalid domain name %q", name)
	}
	// Round-trip through wire form to normalise escapes (\065 vs A).
	buf := make([]byte, 256)
	off, err := dns.PackDomainName(fq, buf, 0, nil, false)
	if err != nil {
		return "", fmt.Errorf("invalid domain name %q: %w", name, err)
	}
	out, _, err := dns.UnpackDomainName(buf[:off], 0)
	if err != nil {
		return "", fmt.Errorf("invalid domain name %q: %w", name, err)
	}
	return strings.ToLower(out), nil
}

// Key returns the tree key of a domain name given in presentation format. The
// key is case-insensitive: the labels are lower-cased, reversed, and written
// with 0x00 as terminator (0x00 and 0x01 inside a label are escaped as
// 0x01 0x01 and 0x01 0x02). Byte order of keys is canonical name order, and
// Key(parent) is a prefix of Key(child) for every descendant.
//
// The root name "." has the empty key. Key does not validate the name; an
// invalid name gives an unspecified but deterministic key.
func Key(name string) []byte {
	return AppendKey(make([]byte, 0, len(name)+1), name)
}

// AppendKey appends the key of name to dst, as Key does. It parses the
// presentation format directly (escapes \X and \DDD included) and allocates
// only when dst must grow.
func AppendKey(dst []byte, name string) []byte {
	// Find label boundaries: starts of labels, separated by unescaped dots.
	var starts [128]int
	n := 0
	if name != "." && name != "" {
		starts[0] = 0
		n = 1
		for i := 0; i < len(name); i++ {
			switch name[i] {
			case '\\':
				i++
			case '.':
				if i+1 < len(name) && n < len(starts) {
					starts[n] = i + 1
					n++
				}
			}
		}
	}
	for j := n - 1; j >= 0; j-- {
		end := len(name)
		if j+1 < n {
			end = starts[j+1] - 1
		} else if end > 0 && name[end-1] == '.' && !escapedAt(name, end-1) {
			end--
		}
		for i := starts[j]; i < end; i++ {
			c := name[i]
			if c == '\\' && i+1 < end {
				i++
				c = name[i]
				if isDigit(c) && i+2 < end && isDigit(name[i+1]) && isDigit(name[i+2]) {
					c = byte(int(c-'0')*100 + int(name[i+1]-'0')*10 + int(name[i+2]-'0'))
					i += 2
				}
			}
			switch {
			case c == 0:
				dst = append(dst, 1, 1)
			case c == 1:
				dst = append(dst, 1, 2)
			case c >= 'A' && c <= 'Z':
				dst = append(dst, c+('a'-'A'))
			default:
				dst = append(dst, c)
			}
		}
		dst = append(dst, 0)
	}
	return dst
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// escapedAt reports whether the byte at i is preceded by an odd number of
// backslashes.
func escapedAt(s string, i int) bool {
	bs := 0
	for k := i - 1; k >= 0 && s[k] == '\\'; k-- {
		bs++
	}
	return bs%2 == 1
}

// IsSubdomain reports whether child is parent or below it. Both must be
// canonical names.
func IsSubdomain(parent, child string) bool {
	if parent == "." {
		return true
	}
	if len(child) < len(parent) || !strings.HasSuffix(child, parent) {
		return false
	}
	if len(child) == len(parent) {
		return true
	}
	// The byte before the suffix must end a label: a '.' that is not escaped.
	i := len(child) - len(parent) - 1
	if child[i] != '.' {
		return false
	}
	bs := 0
	for k := i - 1; k >= 0 && child[k] == '\\'; k-- {
		bs++
	}
	return bs%2 == 0
}

// Parent returns the name one label up, or "" for the root.
func Parent(name string) string {
	if name == "." || name == "" {
		return ""
	}
	next, end := dns.NextLabel(name, 0)
	if end || next >= len(name) {
		return "."
	}
	return name[next:]
}

// EqualNames reports whether two domain names in presentation format are
// the same name, comparing ASCII letters without case (RFC 4343) and every
// other byte exactly. It does not allocate.
func EqualNames(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
