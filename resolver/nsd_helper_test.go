package resolver_test

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// nsdBinary finds NSD. Missing NSD fails the test on CI (the Makefile and
// .ci/run install it) and skips it elsewhere.
func nsdBinary(t testing.TB) string {
	t.Helper()
	for _, p := range []string{"/usr/sbin/nsd", "/usr/local/sbin/nsd"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("nsd"); err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("nsd is not installed; the differential test needs Debian's nsd package (make deps installs it)")
	}
	t.Skip("nsd is not installed (apt-get install nsd); skipping the NSD differential test")
	return ""
}

// freeLoopbackPort returns a port that was free for both UDP and TCP on
// 127.0.0.1 a moment ago.
func freeLoopbackPort(t testing.TB) int {
	t.Helper()
	for range 20 {
		u, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := u.LocalAddr().(*net.UDPAddr).Port
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		u.Close()
		if err == nil {
			l.Close()
			return port
		}
	}
	t.Fatal("no free loopback port for UDP and TCP")
	return 0
}

// startNSD runs NSD in the foreground on a free loopback port, serving the
// zone files (origin → path), and stops it when the test ends. It returns
// once NSD answers the SOA of every zone.
func startNSD(t testing.TB, zones map[string]string) string {
	t.Helper()
	bin := nsdBinary(t)
	dir := t.TempDir()
	port := freeLoopbackPort(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	var conf bytes.Buffer
	fmt.Fprintf(&conf, `server:
	ip-address: 127.0.0.1@%d
	server-count: 1
	username: ""
	chroot: ""
	zonesdir: "%[2]s"
	pidfile: "%[2]s/nsd.pid"
	database: ""
	xfrdfile: "%[2]s/xfrd.state"
	xfrdir: "%[2]s"
	zonelistfile: "%[2]s/zone.list"
	logfile: "%[2]s/nsd.log"
	verbosity: 1
	hide-version: yes
	hide-identity: yes
	rrl-ratelimit: 0
	rrl-whitelist-ratelimit: 0
	ipv4-edns-size: 1232
	minimal-responses: no
	refuse-any: no
	round-robin: no
	zonefiles-check: no
remote-control:
	control-enable: no
`, port, dir)
	for origin, path := range zones {
		abs, err := filepath.Abs(path)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&conf, "zone:\n\tname: %q\n\tzonefile: %q\n", origin, abs)
	}
	confPath := filepath.Join(dir, "nsd.conf")
	if err := os.WriteFile(confPath, conf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command(bin, "-d", "-c", confPath)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start nsd: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	// NSD has no readiness signal on stdout in -d mode that names the
	// zones; poll each SOA with a deadline.
	deadline := time.Now().Add(15 * time.Second)
	c := &dns.Client{Net: "udp", Timeout: 200 * time.Millisecond}
	for origin := range zones {
		m := new(dns.Msg)
		m.SetQuestion(origin, dns.TypeSOA)
		for {
			r, _, err := c.Exchange(m, addr)
			if err == nil && r.Rcode == dns.RcodeSuccess && len(r.Answer) == 1 {
				break
			}
			if time.Now().After(deadline) {
				log, _ := os.ReadFile(filepath.Join(dir, "nsd.log"))
				t.Fatalf("nsd did not serve %s within 15s: %v\n%s\n%s", origin, err, out.String(), log)
			}
			select {
			case err := <-exited:
				log, _ := os.ReadFile(filepath.Join(dir, "nsd.log"))
				t.Fatalf("nsd exited: %v\n%s\n%s", err, out.String(), log)
			case <-time.After(20 * time.Millisecond): // poll interval
			}
		}
	}
	return addr
}
