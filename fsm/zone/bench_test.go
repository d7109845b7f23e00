package zone

import (
	"fmt"
	"net"
	"runtime"
	"testing"

	"github.com/miekg/dns"
)

// bigZone builds a zone of n A records (host<i>.big.example.).
func bigZone(tb testing.TB, n int) *Zone {
	tb.Helper()
	rrs := make([]dns.RR, 0, n+2)
	rrs = append(rrs,
		&dns.SOA{Hdr: dns.RR_Header{Name: "big.example.", Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: 3600}, Ns: "ns.big.example.", Mbox: "h.big.example.", Serial: 1, Refresh: 1, Retry: 1, Expire: 1, Minttl: 1},
		&dns.NS{Hdr: dns.RR_Header{Name: "big.example.", Rrtype: dns.TypeNS, Class: dns.ClassINET, Ttl: 3600}, Ns: "ns.big.example."},
	)
	for i := 0; len(rrs) < n; i++ {
		rrs = append(rrs, &dns.A{
			Hdr: dns.RR_Header{Name: fmt.Sprintf("host%d.big.example.", i), Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 300},
			A:   net.IPv4(10, byte(i>>16), byte(i>>8), byte(i)).To4(),
		})
	}
	z, err := NewZone("big.example.", rrs, 0, false)
	if err != nil {
		tb.Fatal(err)
	}
	return z
}

var sinkNode *Node

// BenchmarkLookup1M measures finding the zone and the node of a name in a
// View holding a 1,000,000-record zone.
func BenchmarkLookup1M(b *testing.B) {
	z := bigZone(b, 1_000_000)
	vb := Empty.Edit()
	vb.PutZone(z)
	v := vb.View()
	names := make([]string, 1024)
	for i := range names {
		names[i] = fmt.Sprintf("host%d.big.example.", (i*7919)%999_000)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		name := names[i&1023]
		sinkNode = v.FindZone(name).Get(name)
	}
	if sinkNode == nil {
		b.Fatal("lookup missed")
	}
}

// BenchmarkChange1M measures one committed change (replace one RRset) on a
// 1,000,000-record zone: it must cost O(change), not O(zone).
func BenchmarkChange1M(b *testing.B) {
	z := bigZone(b, 1_000_000)
	changes := make([][]Change, 256)
	for i := range changes {
		name := fmt.Sprintf("host%d.big.example.", i*3001)
		changes[i] = []Change{{Op: OpReplace, Name: name, Type: dns.TypeA, TTL: 60, RRs: []dns.RR{
			&dns.A{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.IPv4(192, 0, 2, byte(i)).To4()},
		}}}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		nz, err := z.Apply(changes[i&255])
		if err != nil {
			b.Fatal(err)
		}
		z = nz
	}
}

// BenchmarkMemoryPerRecord reports the heap a 1,000,000-record zone holds,
// per record (bytes/record).
func BenchmarkMemoryPerRecord(b *testing.B) {
	for i := 0; i < b.N; i++ {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		z := bigZone(b, 1_000_000)
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(z.Records()), "bytes/record")
		runtime.KeepAlive(z)
	}
}
