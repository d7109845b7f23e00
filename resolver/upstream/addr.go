package upstream

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// Proto is an upstream transport.
type Proto string

// Transports.
const (
	UDP   Proto = "udp"   // DNS over UDP, with TCP fallback on TC=1
	TCP   Proto = "tcp"   // DNS over TCP (RFC 7766), pipelined
	TLS   Proto = "tls"   // DNS over TLS (RFC 7858), pipelined
	HTTPS Proto = "https" // DNS over HTTPS (RFC 8484)
)

// Addr is a parsed upstream address.
//
//	udp://192.0.2.53[:53]
//	tcp://[2001:db8::53][:53]
//	tls://dns.example[:853][?ip=192.0.2.53]   SNI and certificate name dns.example
//	tls://192.0.2.53[:853]                    certificate must name the IP
//	https://dns.example[:443][/dns-query][?ip=192.0.2.53]
//	https://dns.example/dns-query{?dns}       an RFC 8484 URI template
//
// udp and tcp take an IP literal only, so that forwarding never depends on
// name resolution. tls and https take a host name, which is the TLS server
// name; the optional ip parameter says where to connect, otherwise the name
// is resolved with the system resolver when a connection is made.
type Addr struct {
	Proto Proto
	// Host is the host as written: an IP literal or a name.
	Host string
	// Dial is the host:port to connect to.
	Dial string
	// ServerName is the TLS server name (SNI and verification): Host.
	ServerName string
	// URL is the DoH endpoint, without the ip parameter (https only).
	URL string
}

var defaultPorts = map[Proto]string{UDP: "53", TCP: "53", TLS: "853", HTTPS: "443"}

// ParseAddr parses an upstream address; see Addr.
func ParseAddr(s string) (Addr, error) {
	// Accept an RFC 8484 URI template as published by DoH providers.
	u, err := url.Parse(strings.TrimSuffix(s, "{?dns}"))
	if err != nil {
		return Addr{}, fmt.Errorf("upstream address %q: %w", s, err)
	}
	a := Addr{Proto: Proto(strings.ToLower(u.Scheme))}
	port, ok := defaultPorts[a.Proto]
	if !ok {
		return Addr{}, fmt.Errorf("upstream address %q: scheme %q is not udp, tcp, tls or https", s, u.Scheme)
	}
	switch {
	case u.Opaque != "" || u.Host == "":
		return Addr{}, fmt.Errorf("upstream address %q: want %s://host[:port]", s, a.Proto)
	case u.User != nil:
		return Addr{}, fmt.Errorf("upstream address %q: user info is not allowed", s)
	case u.Fragment != "":
		return Addr{}, fmt.Errorf("upstream address %q: fragment is not allowed", s)
	case a.Proto != HTTPS && u.Path != "" && u.Path != "/":
		return Addr{}, fmt.Errorf("upstream address %q: path is only allowed for https", s)
	}
	a.Host = u.Hostname()
	if p := u.Port(); p != "" {
		port = p
	}
	if n, err := netip.ParseAddrPort("0.0.0.0:" + port); err != nil || n.Port() == 0 {
		return Addr{}, fmt.Errorf("upstream address %q: port %q is not between 1 and 65535", s, port)
	}
	hostIP, hostErr := netip.ParseAddr(a.Host)
	if hostErr == nil && hostIP.Zone() != "" {
		return Addr{}, fmt.Errorf("upstream address %q: zoned IP addresses are not supported", s)
	}
	q := u.Query()
	dialHost := a.Host
	if hostErr == nil {
		dialHost = hostIP.String()
	}
	if ip := q.Get("ip"); ip != "" {
		if a.Proto == UDP || a.Proto == TCP {
			return Addr{}, fmt.Errorf("upstream address %q: the ip parameter is for tls and https", s)
		}
		dip, err := netip.ParseAddr(ip)
		if err != nil || dip.Zone() != "" {
			return Addr{}, fmt.Errorf("upstream address %q: ip %q is not an IP address", s, ip)
		}
		dialHost = dip.String()
		q.Del("ip")
	}
	switch a.Proto {
	case UDP, TCP:
		if hostErr != nil {
			return Addr{}, fmt.Errorf("upstream address %q: host %q must be an IP address", s, a.Host)
		}
		if len(q) != 0 {
			return Addr{}, fmt.Errorf("upstream address %q: unknown parameters %q", s, q.Encode())
		}
	case TLS:
		if len(q) != 0 {
			return Addr{}, fmt.Errorf("upstream address %q: unknown parameters %q", s, q.Encode())
		}
		a.ServerName = a.Host
	case HTTPS:
		a.ServerName = a.Host
		path := u.EscapedPath()
		if path == "" || path == "/" {
			path = "/dns-query"
		}
		a.URL = "https://" + u.Host + path
		if len(q) != 0 {
			a.URL += "?" + q.Encode()
		}
	}
	a.Dial = net.JoinHostPort(dialHost, port)
	return a, nil
}

// String returns the address in canonical form; it names the upstream in
// logs and metric labels.
func (a Addr) String() string {
	switch a.Proto {
	case HTTPS:
		if h, _, _ := net.SplitHostPort(a.Dial); h != a.Host {
			sep := "?"
			if strings.Contains(a.URL, "?") {
				sep = "&"
			}
			return a.URL + sep + "ip=" + h
		}
		return a.URL
	case TLS:
		host, port, _ := net.SplitHostPort(a.Dial)
		if host != a.Host {
			return "tls://" + net.JoinHostPort(a.Host, port) + "?ip=" + host
		}
	}
	return string(a.Proto) + "://" + a.Dial
}
