package main

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/kudurru/kudurru/cluster"
	"github.com/kudurru/kudurru/cluster/httpapi/apiv1"
	"github.com/kudurru/kudurru/cluster/httpapi/client"
	"github.com/miekg/dns"
)

// e2eNode is one in-process node run by runNode: real Raft over TCP, real
// bbolt files, real HTTP and DNS sockets on kernel-chosen loopback ports.
type e2eNode struct {
	id   string
	s    started
	c    *client.Client
	stop context.CancelFunc
	done chan error
}

func e2eConfig(t *testing.T, id string, dataDir string) Config {
	cfg := DefaultConfig()
	cfg.Node.ID, cfg.Node.DataDir = id, dataDir
	cfg.API.Addr = "127.0.0.1:0"
	cfg.Raft.Addr = "127.0.0.1:0"
	cfg.Raft.HeartbeatTimeout, cfg.Raft.ElectionTimeout, cfg.Raft.LeaderLeaseTimeout = 300*time.Millisecond, 300*time.Millisecond, 150*time.Millisecond
	cfg.Raft.PromoteInterval = 100 * time.Millisecond
	cfg.DNS.Addr, cfg.DNS.UDPSockets = "127.0.0.1:0", 1
	return cfg
}

func startE2ENode(t *testing.T, cfg Config) *e2eNode {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &e2eNode{id: cfg.Node.ID, stop: cancel, done: make(chan error, 1)}
	ready := make(chan started, 1)
	go func() {
		n.done <- runNode(ctx, cfg, testLogger(t).With("node", cfg.Node.ID), func(s started) { ready <- s })
	}()
	select {
	case n.s = <-ready:
	case err := <-n.done:
		cancel()
		t.Fatalf("node %s: %v", cfg.Node.ID, err)
	}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	c, err := client.New(n.s.APIURL, "", &http.Client{Transport: tr, Timeout: 15 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	n.c = c
	t.Cleanup(func() { n.shutdown(t) })
	return n
}

func (n *e2eNode) shutdown(t *testing.T) {
	if n.stop == nil {
		return
	}
	n.stop()
	n.stop = nil
	if err := <-n.done; err != nil {
		t.Errorf("node %s shutdown: %v", n.id, err)
	}
}

// waitFor polls cond until it holds or the deadline passes. Used only where
// the process offers no event to wait on (another node's Raft state).
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func voters(st cluster.Status) int {
	v := 0
	for _, m := range st.Members {
		if m.Suffrage == "voter" {
			v++
		}
	}
	return v
}

func queryDNS(t *testing.T, addr, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.SetEdns0(1232, false)
	r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, addr)
	if err != nil {
		t.Fatalf("query %s %s at %s: %v", name, dns.TypeToString[qtype], addr, err)
	}
	return r
}

// TestThreeNodeClusterServesDNS is the end-to-end path of a write: a zone
// and a record written through followers' APIs are committed through the
// leader and answered over DNS by all three nodes, with the zone's serial
// as the API reported it.
func TestThreeNodeClusterServesDNS(t *testing.T) {
	if testing.Short() {
		t.Skip("three-node cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	c1 := e2eConfig(t, "n1", t.TempDir())
	c1.Raft.Bootstrap = true
	n1 := startE2ENode(t, c1)
	waitFor(t, "n1 to lead", 10*time.Second, func() bool {
		st, err := n1.c.Status(ctx)
		return err == nil && st.State == "leader" && st.ClusterID != ""
	})
	nodes := []*e2eNode{n1}
	for _, id := range []string{"n2", "n3"} {
		c := e2eConfig(t, id, t.TempDir())
		c.Raft.Join = []string{n1.s.APIURL}
		nodes = append(nodes, startE2ENode(t, c))
	}
	waitFor(t, "three voters", 20*time.Second, func() bool {
		st, err := n1.c.Status(ctx)
		return err == nil && voters(st) == 3
	})

	// Writes through the followers are forwarded to the leader.
	if _, err := nodes[1].c.CreateZone(ctx, apiv1.CreateZone{Name: "corp.example.", NS: []string{"ns1.corp.example."}}); err != nil {
		t.Fatalf("create zone via n2: %v", err)
	}
	ttl := uint32(300)
	res, err := nodes[2].c.Patch(ctx, "corp.example.",
		apiv1.Change{Op: apiv1.OpReplace, Name: "www", Type: "A", TTL: &ttl, Records: []string{"192.0.2.10"}},
		apiv1.Change{Op: apiv1.OpAdd, Name: "ns1", Type: "A", TTL: &ttl, Records: []string{"192.0.2.53"}})
	if err != nil {
		t.Fatalf("patch via n3: %v", err)
	}

	for _, n := range nodes {
		t.Run(n.id, func(t *testing.T) {
			// Once the node has applied the write's index, DNS must show it.
			waitFor(t, fmt.Sprintf("%s to apply index %d", n.id, res.Index), 10*time.Second, func() bool {
				st, err := n.c.Status(ctx)
				return err == nil && st.ServingIndex >= res.Index
			})
			r := queryDNS(t, n.s.DNSAddr, "WWW.corp.example.", dns.TypeA)
			if r.Rcode != dns.RcodeSuccess || !r.Authoritative || len(r.Answer) != 1 {
				t.Fatalf("answer from %s: %v", n.id, r)
			}
			a, ok := r.Answer[0].(*dns.A)
			if !ok || a.A.String() != "192.0.2.10" || a.Hdr.Name != "WWW.corp.example." {
				t.Fatalf("answer from %s: %v", n.id, r.Answer[0])
			}
			soa := queryDNS(t, n.s.DNSAddr, "corp.example.", dns.TypeSOA)
			if len(soa.Answer) != 1 || soa.Answer[0].(*dns.SOA).Serial != res.Serial {
				t.Fatalf("SOA from %s: %v, want serial %d", n.id, soa.Answer, res.Serial)
			}
		})
	}
}
