package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kudurru/kudurru/jepsen-style-tests/traffic"
	"github.com/miekg/dns"
)

// Config describes a cluster to build.
type Config struct {
	Bin          string        // absolute path of the kudurru binary
	Nodes        int           // voters at boot: 3 or 5
	Dir          string        // per-scenario artifacts dir; node data and logs go under nodes/
	Subnet       string        // private /24, default 10.77.0.0/24
	Token        string        // API bearer token
	Zone         string        // the zone the suite writes, absolute
	ExtraArgs    []string      // appended to every serve command line
	ReadyTimeout time.Duration // bound on every wait for the cluster
	Logf         func(format string, args ...any)
}

// Cluster is a set of nodes on one bridge. Its methods are safe for
// concurrent use.
type Cluster struct {
	cfg        Config
	net        *Network
	api        *traffic.Client
	procs      sync.WaitGroup // one goroutine per node process, waiting for its exit
	unregister func()

	mu      sync.Mutex // guards the fields below
	nodes   []*Node
	members map[string]bool    // the Raft voters, as the harness made them
	retired map[string]bool    // nodes the client no longer talks to
	hidden  map[string]bool    // nodes of another cluster (I6), never targeted
	blocked map[[2]string]bool // node pairs cut from each other, both orders
	netem   map[string]bool    // nodes with a netem qdisc
	closed  bool
}

// New creates the network and one namespace per node; it starts no
// process. Close undoes it.
func New(ctx context.Context, cfg Config) (*Cluster, error) {
	if cfg.Subnet == "" {
		cfg.Subnet = "10.77.0.0/24"
	}
	if cfg.ReadyTimeout == 0 {
		cfg.ReadyTimeout = 30 * time.Second
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if st, err := os.Stat(cfg.Bin); err != nil || st.IsDir() {
		return nil, fmt.Errorf("kudurru binary %q not found: run make build, or set KUDURRU_BIN", cfg.Bin)
	}
	nw, err := NewNetwork(cfg.Subnet)
	if err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg, net: nw, api: traffic.NewClient(cfg.Token, 5*time.Second),
		members: map[string]bool{}, retired: map[string]bool{}, hidden: map[string]bool{},
		blocked: map[[2]string]bool{}, netem: map[string]bool{}}
	c.unregister = onInterrupt(func() { c.killAll() })
	if err := nw.Setup(ctx); err != nil {
		c.Close()
		return nil, err
	}
	for range cfg.Nodes {
		if _, err := c.AddNode(ctx, false); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// API is the cluster's admin client.
func (c *Cluster) API() *traffic.Client { return c.api }

// Zone is the zone the suite writes.
func (c *Cluster) Zone() string { return c.cfg.Zone }

// AddNode creates the namespace of a new node; hidden nodes belong to
// another cluster and are never sent traffic.
func (c *Cluster) AddNode(ctx context.Context, hidden bool) (*Node, error) {
	c.mu.Lock()
	i := len(c.nodes) + 1
	c.mu.Unlock()
	if i > 200 {
		return nil, errors.New("too many nodes")
	}
	id := fmt.Sprintf("n%d", i)
	if hidden {
		id = fmt.Sprintf("x%d", i)
	}
	dir := filepath.Join(c.cfg.Dir, "nodes", id)
	n := &Node{ID: id, Index: i, NS: nsPrefix + id, IP: c.net.NodeAddr(i),
		DataDir: filepath.Join(dir, "data"), LogPath: filepath.Join(dir, "kudurru.log")}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := c.net.AddNamespace(ctx, n.NS, n.IP); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.nodes = append(c.nodes, n)
	if hidden {
		c.hidden[id] = true
	}
	c.mu.Unlock()
	return n, nil
}

// Nodes returns every node of this cluster (not the hidden ones), in order.
func (c *Cluster) Nodes() []*Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*Node
	for _, n := range c.nodes {
		if !c.hidden[n.ID] {
			out = append(out, n)
		}
	}
	return out
}

// Node returns the node with this ID, or nil.
func (c *Cluster) Node(id string) *Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// Members returns the voters, sorted.
func (c *Cluster) Members() []*Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*Node
	for _, n := range c.nodes {
		if c.members[n.ID] {
			out = append(out, n)
		}
	}
	return out
}

// SetMember records that id is (or no longer is) a voter.
func (c *Cluster) SetMember(id string, member bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if member {
		c.members[id] = true
	} else {
		delete(c.members, id)
	}
}

// Retire stops the client from talking to id.
func (c *Cluster) Retire(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.retired[id] = true
}

// Targets returns the nodes the workloads talk to.
func (c *Cluster) Targets() []traffic.Target {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []traffic.Target
	for _, n := range c.nodes {
		if c.hidden[n.ID] || c.retired[n.ID] || !n.Started() {
			continue
		}
		out = append(out, traffic.Target{ID: n.ID, API: n.APIURL(), DNS: n.DNSAddr()})
	}
	return out
}

// IDs returns the IDs of nodes.
func IDs(nodes []*Node) []string {
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, n.ID)
	}
	return out
}

// Start starts n's process. With bootstrap it creates a new cluster;
// otherwise it joins through the API of join (none: restart with the
// state in its data dir).
func (c *Cluster) Start(n *Node, bootstrap bool, join []*Node) error {
	args := []string{"serve", "--node-id", n.ID, "--data-dir", n.DataDir,
		"--api-addr", strings.TrimPrefix(n.APIURL(), "http://"), "--raft-addr", n.RaftAddr(),
		"--dns-addr", n.DNSAddr(), "--token", c.cfg.Token}
	if bootstrap {
		args = append(args, "--bootstrap")
	}
	if len(join) > 0 {
		urls := make([]string, 0, len(join))
		for _, j := range join {
			urls = append(urls, j.APIURL())
		}
		args = append(args, "--join", strings.Join(urls, ","))
	}
	args = append(args, c.cfg.ExtraArgs...)
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return errors.New("cluster is closed")
	}
	return n.start(c.cfg.Bin, args, &c.procs)
}

// Status reads GET /v1/cluster from n with a short timeout.
func (c *Cluster) Status(ctx context.Context, n *Node) (traffic.ClusterStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return c.api.Status(ctx, n.APIURL())
}

// poll calls f every 100 ms until it returns true, the timeout passes or
// ctx ends. It is for states the product signals no event for.
func poll(ctx context.Context, timeout time.Duration, f func() bool) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if f() {
			return true
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	return false
}

// Leader waits up to timeout for a serving node that reports itself
// leader, preferring the highest term.
func (c *Cluster) Leader(ctx context.Context, timeout time.Duration) (*Node, error) {
	var leader *Node
	ok := poll(ctx, timeout, func() bool {
		var best uint64
		leader = nil
		for _, n := range c.Nodes() {
			if !n.Serving() {
				continue
			}
			st, err := c.Status(ctx, n)
			if err == nil && st.State == "leader" && st.LeaderID == n.ID && st.Term >= best {
				leader, best = n, st.Term
			}
		}
		return leader != nil
	})
	if !ok {
		return nil, fmt.Errorf("no leader within %s", timeout)
	}
	return leader, nil
}

// WaitReady waits until every node in nodes answers /ready with 200 and
// serves the zone's SOA authoritatively over DNS.
func (c *Cluster) WaitReady(ctx context.Context, nodes []*Node, timeout time.Duration) error {
	var pending []string
	ok := poll(ctx, timeout, func() bool {
		pending = pending[:0]
		for _, n := range nodes {
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			ready := c.api.Ready(rctx, n.APIURL())
			cancel()
			if ready && c.cfg.Zone != "" {
				a := traffic.Query(ctx, n.DNSAddr(), c.cfg.Zone, dns.TypeSOA, time.Second)
				ready = a.Serial != 0
			}
			if !ready {
				pending = append(pending, n.ID)
			}
		}
		return len(pending) == 0
	})
	if !ok {
		return fmt.Errorf("nodes %v not ready within %s", pending, timeout)
	}
	return nil
}

// Boot starts the first node with --bootstrap, joins the others through
// it one by one, creates the zone and waits until every node serves it.
func (c *Cluster) Boot(ctx context.Context) error {
	nodes := c.Nodes()
	first := nodes[0]
	if err := c.Start(first, true, nil); err != nil {
		return err
	}
	if _, err := c.Leader(ctx, c.cfg.ReadyTimeout); err != nil {
		return fmt.Errorf("bootstrap %s: %w (see %s)", first.ID, err, first.LogPath)
	}
	c.SetMember(first.ID, true)
	for _, n := range nodes[1:] {
		if err := c.Join(ctx, n, []*Node{first}); err != nil {
			return err
		}
	}
	var err error
	poll(ctx, c.cfg.ReadyTimeout, func() bool {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		err = c.api.CreateZone(rctx, first.APIURL(), c.cfg.Zone, []string{"ns1." + c.cfg.Zone})
		return err == nil
	})
	if err != nil {
		return fmt.Errorf("create zone %s: %w", c.cfg.Zone, err)
	}
	return c.WaitReady(ctx, nodes, c.cfg.ReadyTimeout)
}

// Join starts n with --join through via and waits until the leader lists
// it as a voter.
func (c *Cluster) Join(ctx context.Context, n *Node, via []*Node) error {
	if err := c.Start(n, false, via); err != nil {
		return err
	}
	ok := poll(ctx, c.cfg.ReadyTimeout, func() bool {
		for _, v := range via {
			st, err := c.Status(ctx, v)
			if err != nil {
				continue
			}
			for _, m := range st.Members {
				if m.ID == n.ID && m.Suffrage == "voter" {
					return true
				}
			}
		}
		return false
	})
	if !ok {
		return fmt.Errorf("node %s did not become a voter within %s (see %s)", n.ID, c.cfg.ReadyTimeout, n.LogPath)
	}
	c.SetMember(n.ID, true)
	return nil
}

// Close kills every node process, removes the namespaces, the bridge and
// the uplink. It is idempotent.
func (c *Cluster) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.killAll()
	c.procs.Wait()
	c.api.Close()
	c.unregister()
	return c.net.Teardown(context.Background())
}

// killAll SIGKILLs every running node; the signal handler calls it too.
func (c *Cluster) killAll() {
	c.mu.Lock()
	nodes := slices.Clone(c.nodes)
	c.mu.Unlock()
	for _, n := range nodes {
		if n.Running() {
			if err := n.Kill(); err != nil {
				c.cfg.Logf("cleanup: %v", err)
			}
		}
	}
}
