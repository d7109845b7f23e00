package upstream

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"io"
	"log"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testWriter routes log output to t.Log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// testConfig is a fast configuration without health checks.
func testConfig(zones map[string][]string) Config {
	cfg := DefaultConfig()
	cfg.Forward = zones
	cfg.Policy = Sequential
	cfg.AttemptTimeout = 500 * time.Millisecond
	cfg.QueryTimeout = 2 * time.Second
	cfg.HealthCheckInterval = 0
	return cfg
}

// newForwarder builds and starts a Forwarder closed at the end of the test.
func newForwarder(t *testing.T, cfg Config, hook func(string, bool)) (*Forwarder, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	f, err := New(cfg, testLogger(t), reg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	f.onHealth = hook
	f.Start()
	t.Cleanup(func() { f.Close() })
	return f, reg
}

func query(name string, qtype uint16) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.Id = 0x4242
	return m
}

// answerA answers every query with one A record.
func answerA(ip string) dns.HandlerFunc {
	return func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		m.RecursionAvailable = true
		if r.Question[0].Qtype == dns.TypeA {
			m.Answer = []dns.RR{&dns.A{
				Hdr: dns.RR_Header{Name: r.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60},
				A:   net.ParseIP(ip),
			}}
		}
		w.WriteMsg(m)
	}
}

// rcodeHandler answers every query with rcode.
func rcodeHandler(rcode int) dns.HandlerFunc {
	return func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetRcode(r, rcode)
		w.WriteMsg(m)
	}
}

// silent never answers.
func silent(dns.ResponseWriter, *dns.Msg) {}

// dnsServer is a miekg/dns server on UDP and TCP on one loopback port, which
// can go down and come back on the same port.
type dnsServer struct {
	t    *testing.T
	addr string
	h    dns.Handler
	// tcpMaxQueries, if set, closes a TCP connection after that many queries.
	tcpMaxQueries int

	udpQueries, tcpQueries atomic.Int64

	mu       sync.Mutex
	udp, tcp *dns.Server // guarded by mu
	wg       sync.WaitGroup
}

func startDNS(t *testing.T, h dns.HandlerFunc) *dnsServer {
	t.Helper()
	s := &dnsServer{t: t, h: h}
	s.startOn("127.0.0.1:0")
	t.Cleanup(s.stop)
	return s
}

func (s *dnsServer) url(proto string) string { return proto + "://" + s.addr }

func (s *dnsServer) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	if _, ok := w.RemoteAddr().(*net.TCPAddr); ok {
		s.tcpQueries.Add(1)
	} else {
		s.udpQueries.Add(1)
	}
	s.h.ServeDNS(w, r)
}

func (s *dnsServer) startOn(addr string) {
	s.t.Helper()
	var (
		pc  net.PacketConn
		ln  net.Listener
		err error
	)
	// UDP first on a kernel-chosen port, then TCP on the same number; on
	// the rare clash, pick again.
	for range 10 {
		if pc, err = net.ListenPacket("udp", addr); err != nil {
			s.t.Fatalf("listen udp: %v", err)
		}
		if ln, err = net.Listen("tcp", pc.LocalAddr().String()); err == nil {
			break
		}
		pc.Close()
		if addr != "127.0.0.1:0" {
			s.t.Fatalf("listen tcp %s: %v", addr, err)
		}
	}
	if err != nil {
		s.t.Fatalf("listen tcp: %v", err)
	}
	s.addr = pc.LocalAddr().String()
	mux := dns.HandlerFunc(s.ServeDNS)
	udpUp, tcpUp := make(chan struct{}), make(chan struct{})
	udp := &dns.Server{PacketConn: pc, Handler: mux, NotifyStartedFunc: func() { close(udpUp) }}
	tcp := &dns.Server{Listener: ln, Handler: mux, NotifyStartedFunc: func() { close(tcpUp) }, MaxTCPQueries: s.tcpMaxQueries}
	s.mu.Lock()
	s.udp, s.tcp = udp, tcp
	s.mu.Unlock()
	for _, srv := range []*dns.Server{udp, tcp} {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			srv.ActivateAndServe()
		}()
	}
	<-udpUp
	<-tcpUp
}

// stop takes the server down; its port stays free for restart.
func (s *dnsServer) stop() {
	s.mu.Lock()
	udp, tcp := s.udp, s.tcp
	s.udp, s.tcp = nil, nil
	s.mu.Unlock()
	if udp != nil {
		udp.Shutdown()
		tcp.Shutdown()
	}
	s.wg.Wait()
}

// restart brings the server back on the same address.
func (s *dnsServer) restart() { s.startOn(s.addr) }

// pki is a test certificate authority and a server certificate for
// 127.0.0.1 and dns.test.
type pki struct {
	caFile string
	pool   *x509.CertPool
	server tls.Certificate
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kudurru test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "dns.test"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(time.Hour),
		DNSNames:     []string{"dns.test"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	p := &pki{
		caFile: filepath.Join(t.TempDir(), "ca.pem"),
		pool:   x509.NewCertPool(),
		server: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
	}
	p.pool.AddCert(ca)
	if err := os.WriteFile(p.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// tlsServer is a DNS-over-TLS server that records the SNI names it saw.
type tlsServer struct {
	addr    string
	conns   atomic.Int64
	queries atomic.Int64
	mu      sync.Mutex
	sni     []string // guarded by mu
}

func startDoT(t *testing.T, p *pki, h dns.HandlerFunc) *tlsServer {
	t.Helper()
	s := &tlsServer{}
	cfg := &tls.Config{
		Certificates: []tls.Certificate{p.server},
		GetConfigForClient: func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			s.mu.Lock()
			s.sni = append(s.sni, hello.ServerName)
			s.mu.Unlock()
			s.conns.Add(1)
			return nil, nil
		},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	up := make(chan struct{})
	srv := &dns.Server{
		Listener: tls.NewListener(ln, cfg), Net: "tcp-tls", NotifyStartedFunc: func() { close(up) },
		Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) { s.queries.Add(1); h(w, r) }),
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		srv.ActivateAndServe()
	}()
	<-up
	t.Cleanup(func() {
		srv.Shutdown()
		wg.Wait()
	})
	return s
}

func (s *tlsServer) sniSeen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.sni...)
}

// dohServer is an RFC 8484 server over HTTP/2 in front of a DNS handler.
type dohServer struct {
	*httptest.Server
	gets, posts, h2 atomic.Int64
	// override, when set, replaces the whole HTTP answer.
	override atomic.Pointer[http.HandlerFunc]
}

func startDoH(t *testing.T, p *pki, h dns.HandlerFunc) *dohServer {
	t.Helper()
	s := &dohServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 {
			s.h2.Add(1)
		}
		if o := s.override.Load(); o != nil {
			(*o)(w, r)
			return
		}
		var wire []byte
		var err error
		switch r.Method {
		case http.MethodGet:
			s.gets.Add(1)
			wire, err = base64.RawURLEncoding.DecodeString(r.URL.Query().Get("dns"))
		case http.MethodPost:
			s.posts.Add(1)
			if r.Header.Get("Content-Type") != dnsMessage {
				http.Error(w, "bad content type", http.StatusUnsupportedMediaType)
				return
			}
			wire, err = io.ReadAll(r.Body)
		}
		q := new(dns.Msg)
		if err != nil || q.Unpack(wire) != nil || q.Id != 0 {
			http.Error(w, "bad query", http.StatusBadRequest)
			return
		}
		rec := &recorder{}
		h(rec, q)
		if rec.msg == nil {
			return // let the client time out
		}
		out, _ := rec.msg.Pack()
		w.Header().Set("Content-Type", dnsMessage)
		w.Write(out)
	}))
	s.EnableHTTP2 = true
	s.Config.ErrorLog = log.New(testWriter{t}, "doh server: ", 0)
	s.TLS = &tls.Config{Certificates: []tls.Certificate{p.server}}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

// recorder is a dns.ResponseWriter that keeps the message written.
type recorder struct {
	dns.ResponseWriter
	msg *dns.Msg
}

func (r *recorder) WriteMsg(m *dns.Msg) error { r.msg = m; return nil }
func (r *recorder) RemoteAddr() net.Addr      { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// healthEvents turns health transitions into a channel tests wait on.
type healthEvents chan string

func (h healthEvents) hook(name string, healthy bool) {
	state := "down"
	if healthy {
		state = "up"
	}
	select {
	case h <- name + " " + state:
	default: // never block the prober
	}
}

func newHealthEvents() healthEvents { return make(healthEvents, 256) }

// wait fails the test unless want arrives within a generous bound.
func (h healthEvents) wait(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case got := <-h:
			if got == want {
				return
			}
			t.Logf("health event %q while waiting for %q", got, want)
		case <-timeout:
			t.Fatalf("no health event %q", want)
		}
	}
}
