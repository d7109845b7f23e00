package upstream

import (
	"strings"
	"testing"
)

func TestParseAddr(t *testing.T) {
	cases := []struct {
		in         string
		proto      Proto
		dial       string
		serverName string
		url        string
		canonical  string
	}{
		{"udp://192.0.2.53", UDP, "192.0.2.53:53", "", "", "udp://192.0.2.53:53"},
		{"UDP://192.0.2.53:5353", UDP, "192.0.2.53:5353", "", "", "udp://192.0.2.53:5353"},
		{"tcp://[2001:db8::53]", TCP, "[2001:db8::53]:53", "", "", "tcp://[2001:db8::53]:53"},
		{"tls://192.0.2.53", TLS, "192.0.2.53:853", "192.0.2.53", "", "tls://192.0.2.53:853"},
		{"tls://dns.example:8853?ip=192.0.2.53", TLS, "192.0.2.53:8853", "dns.example", "", "tls://dns.example:8853?ip=192.0.2.53"},
		{"tls://dns.example", TLS, "dns.example:853", "dns.example", "", "tls://dns.example:853"},
		{"https://dns.example", HTTPS, "dns.example:443", "dns.example", "https://dns.example/dns-query", "https://dns.example/dns-query"},
		{"https://dns.example:8443/q?ip=2001:db8::1", HTTPS, "[2001:db8::1]:8443", "dns.example", "https://dns.example:8443/q", "https://dns.example:8443/q?ip=2001:db8::1"},
		{"https://dns.example/dns-query{?dns}", HTTPS, "dns.example:443", "dns.example", "https://dns.example/dns-query", "https://dns.example/dns-query"},
		{"https://dns.example/resolve?ct=1&ip=192.0.2.1", HTTPS, "192.0.2.1:443", "dns.example", "https://dns.example/resolve?ct=1", "https://dns.example/resolve?ct=1&ip=192.0.2.1"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			a, err := ParseAddr(tc.in)
			if err != nil {
				t.Fatalf("ParseAddr: %v", err)
			}
			if a.Proto != tc.proto || a.Dial != tc.dial || a.ServerName != tc.serverName || a.URL != tc.url {
				t.Errorf("got %+v, want proto %s dial %s server name %q url %q", a, tc.proto, tc.dial, tc.serverName, tc.url)
			}
			if tc.canonical == "" {
				return
			}
			if got := a.String(); got != tc.canonical {
				t.Errorf("String = %q, want %q", got, tc.canonical)
			}
			again, err := ParseAddr(a.String())
			if err != nil || again != a {
				t.Errorf("String does not parse back: %+v, %v", again, err)
			}
		})
	}
}

func TestParseAddrErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{"192.0.2.53", "scheme"},
		{"dns://192.0.2.53", `scheme "dns"`},
		{"udp://dns.example", "must be an IP address"},
		{"tcp://dns.example:53", "must be an IP address"},
		{"udp://192.0.2.53:0", "port"},
		{"udp://192.0.2.53:65536", "port"},
		{"udp://192.0.2.53:dns", "port"},
		{"udp://192.0.2.53/path", "path"},
		{"udp://192.0.2.53?ip=192.0.2.1", "the ip parameter"},
		{"tls://dns.example?ip=dns.other", "not an IP address"},
		{"tls://dns.example?sni=x", "unknown parameters"},
		{"tls://user@dns.example", "user info"},
		{"https://dns.example/#frag", "fragment"},
		{"udp://[fe80::1%25eth0]", "zoned"},
		{"udp:192.0.2.53", "want udp://host"},
		{"udp://", "want udp://host"},
		{"udp://%zz", "invalid"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			_, err := ParseAddr(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "upstream address") {
				t.Errorf("ParseAddr(%q) = %v, want an error mentioning %q", tc.in, err, tc.want)
			}
		})
	}
}
