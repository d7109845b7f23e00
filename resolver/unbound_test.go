package resolver_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kudurru/kudurru/resolver"
	"github.com/kudurru/kudurru/resolver/resolvertest"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// unboundBinary finds Unbound. Missing Unbound fails the test on CI and
// skips it elsewhere.
func unboundBinary(t testing.TB) string {
	t.Helper()
	for _, p := range []string{"/usr/sbin/unbound", "/usr/local/sbin/unbound"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("unbound"); err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("unbound is not installed; the end-to-end forwarding test needs Debian's unbound package")
	}
	t.Skip("unbound is not installed (apt-get install unbound); skipping the end-to-end forwarding test")
	return ""
}

// startUnbound runs Unbound in the foreground on a free loopback port with
// local data only (no root hints are fetched: it is never asked for another
// name), and stops it when the test ends. It returns once Unbound reports
// that it serves.
func startUnbound(t *testing.T, localData ...string) string {
	t.Helper()
	bin := unboundBinary(t)
	dir := t.TempDir()
	port := freeLoopbackPort(t)
	var data strings.Builder
	for _, d := range localData {
		fmt.Fprintf(&data, "\tlocal-data: %q\n", d)
	}
	conf := fmt.Sprintf(`server:
	username: ""
	chroot: ""
	directory: %q
	pidfile: ""
	do-daemonize: no
	use-syslog: no
	logfile: ""
	verbosity: 1
	interface: 127.0.0.1@%d
	port: %d
	do-ip6: no
	access-control: 127.0.0.0/8 allow
	module-config: "iterator"
	auto-trust-anchor-file: ""
	trust-anchor-file: ""
	num-threads: 1
	local-zone: "upstream.test." static
%sremote-control:
	control-enable: no
`, dir, port, port, data.String())
	path := filepath.Join(dir, "unbound.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin + "-checkconf"); err == nil {
		if out, err := exec.Command(bin+"-checkconf", path).CombinedOutput(); err != nil {
			t.Fatalf("unbound-checkconf: %v\n%s", err, out)
		}
	}
	cmd := exec.Command(bin, "-d", "-c", path)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	serving := make(chan struct{})
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		sc := bufio.NewScanner(stderr)
		once := false
		for sc.Scan() {
			t.Log("unbound: " + sc.Text())
			if !once && strings.Contains(sc.Text(), "start of service") {
				once = true
				close(serving)
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { <-logDone; exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	select {
	case <-serving:
	case err := <-exited:
		exited <- err
		t.Fatalf("unbound exited before serving: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("unbound did not start within 10s")
	}
	return fmt.Sprintf("127.0.0.1:%d", port)
}

// TestForwardThroughUnbound: kudurru forwards to a real Unbound on loopback
// and caches its answers.
func TestForwardThroughUnbound(t *testing.T) {
	addr := startUnbound(t,
		"upstream.test. 3600 SOA ns.upstream.test. host.upstream.test. 1 3600 600 86400 60",
		"www.upstream.test. 300 A 192.0.2.77",
		"www.upstream.test. 300 AAAA 2001:db8::77")
	reg := prometheus.NewRegistry()
	v := testView(t).Edit()
	v.SetIndex(1)
	srv := resolvertest.Start(t, resolvertest.NewZones(v.View()), resolvertest.Options{
		Registry: reg,
		Config: func(c *resolver.Config) {
			c.Forward = []resolver.ForwardZone{{Zone: ".", Upstreams: []string{"udp://" + addr}}}
			c.Upstream.HealthCheckInterval = 0
		},
	})
	for _, c := range []resolvertest.Case{
		{Name: "A", Qname: "www.upstream.test.", Qtype: dns.TypeA, NoAA: true,
			Answer: []string{"www.upstream.test. 300 IN A 192.0.2.77"}},
		{Name: "AAAA", Qname: "www.upstream.test.", Qtype: dns.TypeAAAA, NoAA: true,
			Answer: []string{"www.upstream.test. 300 IN AAAA 2001:db8::77"}},
		{Name: "NXDOMAIN in a static local zone", Qname: "nope.upstream.test.", Qtype: dns.TypeA, NoAA: true,
			Rcode: dns.RcodeNameError,
			Ns:    []string{"upstream.test. 60 IN SOA ns.upstream.test. host.upstream.test. 1 3600 600 86400 60"}},
		{Name: "authoritative zone still ours", Qname: "www.example.test.", Qtype: dns.TypeA,
			Answer: []string{"www.example.test. 300 IN A 192.0.2.80"}},
	} {
		t.Run(c.Name, func(t *testing.T) {
			m := c.Msg()
			m.RecursionDesired = true
			c.Check(t, resolvertest.Exchange(t, "udp", srv.Addr(), m))
		})
	}
	// Asked again: from the cache, not Unbound.
	before := counterValue(t, reg, "kudurru_upstream_requests_total", nil)
	r := ask(t, srv.Addr(), "www.upstream.test.", dns.TypeA, 1232)
	if firstA(r) != "192.0.2.77" {
		t.Fatalf("cached: %v", r)
	}
	if r := ask(t, srv.Addr(), "nope.upstream.test.", dns.TypeA, 1232); r.Rcode != dns.RcodeNameError {
		t.Fatalf("cached NXDOMAIN: %v", r)
	}
	if after := counterValue(t, reg, "kudurru_upstream_requests_total", nil); after != before || before != 3 {
		t.Errorf("upstream requests %v then %v, want 3 and no more", before, after)
	}
}
