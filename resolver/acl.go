package resolver

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// The recursion ACL: which clients the forwarding stage serves. It is
// checked only for names outside every served zone, after the authority
// stage, so authoritative answers stay open to everyone; a refused client
// gets REFUSED with RA=0, and kudurru is never an open resolver by default.

// acl is a parsed recursion.allow list.
type acl []netip.Prefix

// parseACL parses prefixes and single addresses. IPv4-mapped IPv6
// prefixes are refused: clients are matched unmapped.
func parseACL(list []string) (acl, error) {
	out := make(acl, 0, len(list))
	for i, s := range list {
		s = strings.TrimSpace(s)
		var p netip.Prefix
		var err error
		if strings.Contains(s, "/") {
			p, err = netip.ParsePrefix(s)
		} else {
			var a netip.Addr
			if a, err = netip.ParseAddr(s); err == nil {
				if a.Zone() != "" {
					return nil, fmt.Errorf("allow[%d] %q: zoned addresses are not supported", i, s)
				}
				p = netip.PrefixFrom(a, a.BitLen())
			}
		}
		switch {
		case err != nil:
			return nil, fmt.Errorf("allow[%d] %q: not a CIDR prefix or an IP address", i, s)
		case p.Addr().Is4In6():
			return nil, fmt.Errorf("allow[%d] %q: write IPv4-mapped addresses as IPv4", i, s)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// allows reports whether a client at addr may have names resolved. An
// invalid address (a transport that cannot tell) is refused.
func (l acl) allows(addr netip.Addr) bool {
	addr = addr.Unmap()
	for _, p := range l {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// clientAddr returns the address of the client behind a transport's
// RemoteAddr; the zero Addr when it cannot tell.
func clientAddr(a net.Addr) netip.Addr {
	switch a := a.(type) {
	case *net.UDPAddr:
		ip, _ := netip.AddrFromSlice(a.IP)
		return ip.Unmap()
	case *net.TCPAddr:
		ip, _ := netip.AddrFromSlice(a.IP)
		return ip.Unmap()
	}
	return netip.Addr{}
}
