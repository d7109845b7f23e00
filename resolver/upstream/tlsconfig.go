package upstream

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// baseTLS builds the TLS settings shared by all tls and https upstreams:
// certificates are always verified, against caFile when set or the system
// roots otherwise; sessions are resumed.
func baseTLS(caFile string) (*tls.Config, error) {
	cfg := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ClientSessionCache: tls.NewLRUClientSessionCache(64),
	}
	if caFile == "" {
		return cfg, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("ca_file %q: %w", caFile, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("ca_file %q: no PEM certificates", caFile)
	}
	cfg.RootCAs = pool
	return cfg, nil
}

// tlsFor returns the TLS settings for one upstream: its server name for SNI
// and verification, and the ALPN protocol list of its transport.
func tlsFor(base *tls.Config, a Addr) *tls.Config {
	cfg := base.Clone()
	cfg.ServerName = a.ServerName
	if a.Proto == TLS {
		cfg.NextProtos = []string{"dot"} // RFC 7858 ALPN id
	}
	return cfg
}
