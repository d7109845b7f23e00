package resolver_test

import (
	"errors"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kudurru/kudurru/fsm/zone"
	"github.com/kudurru/kudurru/resolver"
	"github.com/kudurru/kudurru/resolver/resolvertest"
	"github.com/miekg/dns"
)

// gateZones holds the first query that reads the zones until release is
// closed, like a stage waiting on the network; later queries pass at once.
type gateZones struct {
	v       *zone.View
	once    sync.Once
	entered chan struct{} // closed when the first query is held
	release chan struct{}
}

func newGateZones(v *zone.View) *gateZones {
	return &gateZones{v: v, entered: make(chan struct{}), release: make(chan struct{})}
}

func (g *gateZones) Current() *zone.View {
	first := false
	g.once.Do(func() { first = true })
	if first {
		close(g.entered)
		<-g.release
	}
	return g.v
}

// udpClient sends raw queries from one socket and reads their replies.
type udpClient struct {
	t    *testing.T
	conn net.Conn
}

func dialUDP(t *testing.T, addr string) *udpClient {
	t.Helper()
	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &udpClient{t: t, conn: c}
}

func (c *udpClient) send(m *dns.Msg) {
	c.t.Helper()
	b, err := m.Pack()
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.conn.Write(b); err != nil {
		c.t.Fatal(err)
	}
}

// read returns the next reply, or nil when none comes within wait.
func (c *udpClient) read(wait time.Duration) *dns.Msg {
	c.t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(wait))
	buf := make([]byte, dns.MaxMsgSize)
	n, err := c.conn.Read(buf)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return nil
	}
	if err != nil {
		c.t.Fatal(err)
	}
	r := new(dns.Msg)
	if err := r.Unpack(buf[:n]); err != nil {
		c.t.Fatalf("reply does not parse: %v", err)
	}
	return r
}

// oneWorker runs the test with GOMAXPROCS 1, so that a server with one
// UDP socket reads it from one goroutine.
func oneWorker(t *testing.T) {
	prev := runtime.GOMAXPROCS(1)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
}

// TestSlowQueryDoesNotHoldUpTheSocket: a query held in the chain (a stage
// waiting on the network) must not delay the queries after it on the same
// socket.
func TestSlowQueryDoesNotHoldUpTheSocket(t *testing.T) {
	oneWorker(t)
	g := newGateZones(testView(t))
	srv := resolvertest.Start(t, g, resolvertest.Options{
		Config: func(c *resolver.Config) { c.UDPSockets = 1 }})
	slow, fast := dialUDP(t, srv.Addr()), dialUDP(t, srv.Addr())
	a := query("www.example.test.", dns.TypeA)
	slow.send(a)
	select {
	case <-g.entered:
	case <-time.After(10 * time.Second):
		close(g.release)
		t.Fatal("the first query never reached the zones")
	}
	for i := range 3 {
		b := query("www.example.test.", dns.TypeAAAA)
		fast.send(b)
		r := fast.read(10 * time.Second)
		if r == nil || r.Id != b.Id || len(r.Answer) != 1 {
			close(g.release)
			t.Fatalf("query %d behind a held one: reply %v, want its answer", i, r)
		}
	}
	close(g.release)
	if r := slow.read(10 * time.Second); r == nil || r.Id != a.Id || len(r.Answer) != 1 {
		t.Fatalf("held query: reply %v, want its answer once released", r)
	}
}

// slowZones makes every tenth query wait 5 ms in the chain, like a stage
// waiting on an upstream.
type slowZones struct {
	v     *zone.View
	calls atomic.Int64
}

func (z *slowZones) Current() *zone.View {
	if z.calls.Add(1)%10 == 0 {
		time.Sleep(5 * time.Millisecond) // the work being simulated, not a synchronisation
	}
	return z.v
}

// TestSlowQueriesUnderLoad mixes slow queries into a steady stream from
// several clients, so that workers are rescued while their batches hold
// more queries; every query must get its own answer.
func TestSlowQueriesUnderLoad(t *testing.T) {
	srv := resolvertest.Start(t, &slowZones{v: testView(t)}, resolvertest.Options{
		Config: func(c *resolver.Config) { c.UDPSockets = 1 }})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := range 4 {
		conn, err := net.Dial("udp", srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- clientRun(conn, uint16(i*200), 200)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestInflightLimit: with udp_max_inflight 1, a held query keeps the socket
// from being read until it is answered.
func TestInflightLimit(t *testing.T) {
	oneWorker(t)
	g := newGateZones(testView(t))
	srv := resolvertest.Start(t, g, resolvertest.Options{
		Config: func(c *resolver.Config) { c.UDPSockets, c.UDPMaxInflight = 1, 1 }})
	slow, other := dialUDP(t, srv.Addr()), dialUDP(t, srv.Addr())
	a := query("www.example.test.", dns.TypeA)
	slow.send(a)
	<-g.entered
	b := query("www.example.test.", dns.TypeAAAA)
	other.send(b)
	// Nothing announces that the server is not reading; wait a while for
	// a reply that must not come.
	if r := other.read(300 * time.Millisecond); r != nil {
		close(g.release)
		t.Fatalf("answered %v beyond the in-flight limit", r)
	}
	close(g.release)
	if r := slow.read(10 * time.Second); r == nil || r.Id != a.Id {
		t.Fatalf("held query: reply %v", r)
	}
	if r := other.read(10 * time.Second); r == nil || r.Id != b.Id || len(r.Answer) != 1 {
		t.Fatalf("queued query: reply %v, want its answer once a slot is free", r)
	}
}

// TestLongUDPQuery: a query longer than the read slots (padded to 5000
// bytes) is read whole and answered.
func TestLongUDPQuery(t *testing.T) {
	srv := resolvertest.Start(t, resolvertest.NewZones(testView(t)), resolvertest.Options{})
	c := dialUDP(t, srv.Addr())
	m := query("www.example.test.", dns.TypeA)
	m.SetEdns0(1232, false)
	opt := m.IsEdns0()
	opt.Option = append(opt.Option, &dns.EDNS0_PADDING{Padding: make([]byte, 5000)})
	c.send(m)
	r := c.read(10 * time.Second)
	if r == nil || r.Id != m.Id || r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
		t.Fatalf("reply %v, want the answer", r)
	}
	if o := r.IsEdns0(); o == nil || len(o.Option) != 0 {
		t.Errorf("OPT %v, want one without options", o)
	}
}

// TestManyClients sends from many sockets at once, so that replies leave
// in batches to many peers, and checks that each gets its own answers.
func TestManyClients(t *testing.T) {
	srv := resolvertest.Start(t, resolvertest.NewZones(testView(t)), resolvertest.Options{})
	const clients, each = 8, 50
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		conn, err := net.Dial("udp", srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- clientRun(conn, uint16(i*each), each)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// clientRun sends n queries with consecutive IDs, window of them at a
// time (more could overflow the socket buffers: UDP drops), and checks that
// every ID comes back once with its answer.
func clientRun(conn net.Conn, id0 uint16, n int) error {
	const window = 8
	sent := 0
	send := func() error {
		m := query("www.example.test.", dns.TypeA)
		m.Id = id0 + uint16(sent)
		sent++
		b, err := m.Pack()
		if err != nil {
			return err
		}
		_, err = conn.Write(b)
		return err
	}
	for sent < min(window, n) {
		if err := send(); err != nil {
			return err
		}
	}
	seen := map[uint16]bool{}
	buf := make([]byte, 4096)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for len(seen) < n {
		k, err := conn.Read(buf)
		if err != nil {
			return err
		}
		r := new(dns.Msg)
		if err := r.Unpack(buf[:k]); err != nil {
			return err
		}
		if r.Id < id0 || r.Id >= id0+uint16(n) || seen[r.Id] || len(r.Answer) != 1 {
			return errors.New("unexpected reply: " + r.String())
		}
		seen[r.Id] = true
		if sent < n {
			if err := send(); err != nil {
				return err
			}
		}
	}
	return nil
}
