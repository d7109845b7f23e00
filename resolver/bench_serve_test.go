package resolver_test

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kudurru/kudurru/fsm/zone"
	"github.com/kudurru/kudurru/resolver"
	"github.com/kudurru/kudurru/resolver/resolvertest"
	"github.com/miekg/dns"
)

// benchZoneOrigin is the zone scripts/bench-auth.sh serves from both
// kudurru and NSD.
const benchZoneOrigin = "bench.test."

// writeBenchZone writes a zone of 10,000 records (A, AAAA, MX, TXT, CNAME)
// and a dnsperf query file to dir, and returns the zone file's path.
func writeBenchZone(t testing.TB, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "bench.test.zone")
	zf, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zf.Close()
	w := bufio.NewWriter(zf)
	fmt.Fprintf(w, "$ORIGIN %s\n$TTL 3600\n@ SOA ns1 hostmaster 1 7200 3600 1209600 300\n@ NS ns1\n@ NS ns2\nns1 A 192.0.2.1\nns2 A 192.0.2.2\n", benchZoneOrigin)
	records := 5
	for i := 0; records < 10_000; i++ {
		fmt.Fprintf(w, "host%d A 10.%d.%d.%d\n", i, i>>16&255, i>>8&255, i&255)
		records++
		switch i % 10 {
		case 0, 1, 2:
			fmt.Fprintf(w, "host%d AAAA 2001:db8::%x\n", i, i)
			records++
		case 3:
			fmt.Fprintf(w, "host%d MX 10 host%d\n", i, i+1)
			records++
		case 4:
			fmt.Fprintf(w, "host%d TXT \"v=bench %d\"\n", i, i)
			records++
		case 5:
			fmt.Fprintf(w, "alias%d CNAME host%d\n", i, i)
			records++
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	qf, err := os.Create(filepath.Join(dir, "queries.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer qf.Close()
	qw := bufio.NewWriter(qf)
	rng := rand.New(rand.NewPCG(10, 0))
	for range 50_000 {
		i := rng.IntN(7000)
		switch r := rng.IntN(100); {
		case r < 60:
			fmt.Fprintf(qw, "host%d.%s A\n", i, benchZoneOrigin)
		case r < 72:
			fmt.Fprintf(qw, "host%d.%s AAAA\n", i, benchZoneOrigin)
		case r < 80:
			fmt.Fprintf(qw, "alias%d.%s A\n", i/10*10+5, benchZoneOrigin)
		case r < 85:
			fmt.Fprintf(qw, "host%d.%s MX\n", i/10*10+3, benchZoneOrigin)
		case r < 90:
			fmt.Fprintf(qw, "host%d.%s TXT\n", i, benchZoneOrigin)
		default:
			fmt.Fprintf(qw, "nx%d.%s A\n", i, benchZoneOrigin)
		}
	}
	if err := qw.Flush(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestServeForBench is scripts/bench-auth.sh's kudurru server. It runs only
// when KUDURRU_BENCH_DIR names a directory: it writes the benchmark zone,
// the dnsperf query file and a free port for NSD there, serves the zone on
// 127.0.0.1 with the default configuration, writes its address to
// kudurru.addr, and serves until SIGTERM or SIGINT.
// KUDURRU_BENCH_UDP_SOCKETS overrides udp_sockets.
func TestServeForBench(t *testing.T) {
	dir := os.Getenv("KUDURRU_BENCH_DIR")
	if dir == "" {
		t.Skip("set KUDURRU_BENCH_DIR to serve the benchmark zone (scripts/bench-auth.sh does)")
	}
	path := writeBenchZone(t, dir)
	z := resolvertest.LoadZoneFile(t, benchZoneOrigin, path)
	if z.Records() < 10_000 {
		t.Fatalf("bench zone has %d records", z.Records())
	}
	b := zone.Empty.Edit()
	b.PutZone(z)
	cfg := resolver.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	if n, err := strconv.Atoi(os.Getenv("KUDURRU_BENCH_UDP_SOCKETS")); err == nil {
		cfg.UDPSockets = n
	}
	s, err := resolver.New(cfg, resolver.Deps{Zones: resolvertest.NewZones(b.View()),
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(stop)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, port, _ := net.SplitHostPort(s.Addr())
	writeFile(t, filepath.Join(dir, "nsd.port"), strconv.Itoa(freeLoopbackPort(t)))
	writeFile(t, filepath.Join(dir, "kudurru.port"), port) // written last: the script waits for it
	<-stop
}

// writeFile writes atomically, so a reader never sees a partial file.
func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", []byte(content+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkServeUDP measures the whole per-query path of a UDP query on
// loopback: the socket read, parsing, the chain (metrics, ingress, local,
// authority over the 10,000-record benchmark zone), packing and the socket
// write. The client keeps a window of queries in flight on one connected
// socket and allocates nothing per query, so allocs/op are the server's.
// cpu-ns/op is the process's user+system CPU time per query, client
// included; ns/op is wall time per query with the client and the server
// sharing the machine.
func BenchmarkServeUDP(b *testing.B) {
	dir := b.TempDir()
	z := resolvertest.LoadZoneFile(b, benchZoneOrigin, writeBenchZone(b, dir))
	srv := resolvertest.Start(b, resolvertest.NewZones(resolvertest.View(z)), resolvertest.Options{
		Logger: slog.New(slog.DiscardHandler)})
	queries := benchQueries(b, filepath.Join(dir, "queries.txt"))
	conn, err := net.Dial("udp", srv.Addr())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	const window = 16
	buf := make([]byte, 65535)
	next := 0
	send := func() {
		q := queries[next%len(queries)]
		next++
		if _, err := conn.Write(q); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for range min(window, b.N) {
		send()
	}
	for got := 0; got < b.N; {
		if got%256 == 0 {
			conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		}
		n, err := conn.Read(buf)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// A lost datagram: refill the window.
				for range min(window, b.N-got) {
					send()
				}
				continue
			}
			b.Fatal(err)
		}
		if n < 12 || buf[2]&0x80 == 0 {
			b.Fatalf("bad reply: % x", buf[:n])
		}
		got++
		if next < b.N {
			send()
		}
	}
	cpu := processCPU() - cpu0
	b.StopTimer()
	if cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// benchQueries packs the questions of a dnsperf query file, without EDNS as
// dnsperf sends them by default.
func benchQueries(b *testing.B, path string) [][]byte {
	b.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var out [][]byte
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		name, typ, _ := strings.Cut(line, " ")
		m := new(dns.Msg)
		m.SetQuestion(name, dns.StringToType[typ])
		m.Id = uint16(i)
		w, err := m.Pack()
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, w)
	}
	return out
}
