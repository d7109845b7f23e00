package resolver

import (
	"net"
	"net/netip"
	"testing"
)

func TestRecursionACLDecision(t *testing.T) {
	def, err := parseACL(DefaultConfig().Recursion.Allow)
	if err != nil {
		t.Fatal(err)
	}
	custom, err := parseACL([]string{"203.0.113.0/24", "2001:db8::1", " 198.51.100.7 "})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		acl  acl
		addr string
		want bool
	}{
		{"loopback v4", def, "127.0.0.1", true},
		{"loopback elsewhere in 127/8", def, "127.8.9.10", true},
		{"loopback v6", def, "::1", true},
		{"RFC 1918 10/8", def, "10.20.30.40", true},
		{"RFC 1918 172.16/12", def, "172.31.255.255", true},
		{"just outside 172.16/12", def, "172.32.0.1", false},
		{"RFC 1918 192.168/16", def, "192.168.1.1", true},
		{"ULA", def, "fd12:3456::1", true},
		{"IPv4-mapped private", def, "::ffff:192.168.1.1", true},
		{"public v4", def, "8.8.8.8", false},
		{"public v6", def, "2001:4860::8888", false},
		{"CGNAT is not private", def, "100.64.0.1", false},
		{"link-local", def, "169.254.1.1", false},
		{"custom prefix", custom, "203.0.113.99", true},
		{"custom single v6", custom, "2001:db8::1", true},
		{"custom single v6 neighbour", custom, "2001:db8::2", false},
		{"custom single v4 trimmed", custom, "198.51.100.7", true},
		{"custom excludes loopback", custom, "127.0.0.1", false},
		{"unknown address", def, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var a netip.Addr
			if c.addr != "" {
				a = netip.MustParseAddr(c.addr)
			}
			if got := c.acl.allows(a); got != c.want {
				t.Errorf("allows(%s) = %v, want %v", c.addr, got, c.want)
			}
		})
	}
	for _, bad := range []string{"10.0.0.0/33", "localhost", "fe80::1%eth0", "::ffff:10.0.0.0/104", ""} {
		if _, err := parseACL([]string{bad}); err == nil {
			t.Errorf("parseACL(%q) succeeded", bad)
		}
	}
}

func TestClientAddr(t *testing.T) {
	for _, c := range []struct {
		a    net.Addr
		want string
	}{
		{&net.UDPAddr{IP: net.ParseIP("192.0.2.1"), Port: 53}, "192.0.2.1"},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:10.0.0.1"), Port: 53}, "10.0.0.1"},
		{&net.UDPAddr{IP: net.ParseIP("2001:db8::1")}, "2001:db8::1"},
	} {
		if got := clientAddr(c.a); got.String() != c.want {
			t.Errorf("clientAddr(%v) = %v, want %s", c.a, got, c.want)
		}
	}
	if got := clientAddr(&net.UnixAddr{}); got.IsValid() {
		t.Errorf("clientAddr(unix) = %v, want invalid", got)
	}
}
