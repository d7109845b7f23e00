package resolver_test

import (
	"sync"
	"testing"

	"github.com/kudurru/kudurru/resolver/resolvertest"
	"github.com/miekg/dns"
)

// TestSharedAnswers answers the same questions from many goroutines at
// once, over UDP and TCP, with and without EDNS and with small sizes, so
// that remembered lookup results are shared by writers that append the OPT
// record, drop additional records and truncate. Under -race, a writer that
// changed a shared result in place would be reported.
func TestSharedAnswers(t *testing.T) {
	srv := resolvertest.Start(t, resolvertest.NewZones(testView(t)), resolvertest.Options{})
	type ask struct {
		name string
		qt   uint16
		size uint16 // 0: no EDNS
		net  string
	}
	var asks []ask
	for _, q := range []struct {
		name string
		qt   uint16
	}{
		{"example.test.", dns.TypeMX},          // additional addresses
		{"example.test.", dns.TypeNS},          // additional addresses
		{"www.deleg.example.test.", dns.TypeA}, // referral with glue
		{"many.example.test.", dns.TypeA},      // truncated below 1232
		{"nope.example.test.", dns.TypeA},      // NXDOMAIN with SOA
	} {
		for _, size := range []uint16{0, 512, 1232} {
			for _, net := range []string{"udp", "tcp"} {
				asks = append(asks, ask{q.name, q.qt, size, net})
			}
		}
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := map[string]*dns.Client{
				"udp": {Net: "udp", UDPSize: dns.MaxMsgSize},
				"tcp": {Net: "tcp"},
			}
			for i := range 3 * len(asks) {
				a := asks[(g+i)%len(asks)]
				m := query(a.name, a.qt)
				if a.size > 0 {
					m.SetEdns0(a.size, true)
				}
				r, _, err := c[a.net].Exchange(m, srv.Addr())
				if err != nil {
					t.Error(err)
					return
				}
				if (r.IsEdns0() != nil) != (a.size > 0) {
					t.Errorf("%s %s size %d over %s: OPT %v", a.name, dns.TypeToString[a.qt], a.size, a.net, r.IsEdns0())
				}
			}
		}()
	}
	wg.Wait()
}
