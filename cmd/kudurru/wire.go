package main

// This file is serve's wiring: it builds the node's parts from the
// configuration, starts them, runs until the context ends, and shuts them
// down in the reverse order. It is the one place that knows every part.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"

	"github.com/kudurru/kudurru/cluster"
	"github.com/kudurru/kudurru/cluster/httpapi"
	"github.com/kudurru/kudurru/resolver"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// started tells serve where a running node answers.
type started struct {
	APIURL  string // base URL of the admin API, as bound
	DNSAddr string // host:port of the DNS listeners, as bound
}

// runNode runs one node until ctx ends, or until joining the cluster fails
// for good. ready, when not nil, is called once every part serves.
func runNode(ctx context.Context, cfg Config, log *slog.Logger, ready func(started)) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	// 0. Bind the API first: the node advertises the bound address to the
	// cluster (api.addr may name port 0 in tests).
	apiLn, err := net.Listen("tcp", cfg.API.Addr)
	if err != nil {
		return fmt.Errorf("listen api %s: %w", cfg.API.Addr, err)
	}
	if cfg.API.Advertise == "" {
		cfg.API.Advertise = "http://" + apiLn.Addr().String()
	}
	// 1. The node: stores, Raft, the FSM and local.db. From here on it
	// serves its last local View, even before Raft has a quorum.
	node, err := cluster.New(cfg.clusterConfig(log, reg))
	if err != nil {
		return errors.Join(fmt.Errorf("start node: %w", err), apiLn.Close())
	}
	// 2. The admin API, before joining: the leader polls a joiner's
	// /v1/cluster before promoting it to voter.
	apiCfg := cfg.apiConfig(log, reg)
	apiCfg.Listener = apiLn
	api, err := httpapi.New(apiCfg, nodeBackend{node})
	if err == nil {
		err = api.Start()
	}
	if err != nil {
		return errors.Join(fmt.Errorf("start api: %w", err), apiLn.Close(), node.Close())
	}
	// 3. DNS, answering from the node's View. With forwarding configured,
	// New restores the cache dump from local.db before anything listens,
	// and Close writes the last one while the node is still open.
	dns, err := resolver.New(cfg.DNS, resolver.Deps{Zones: node, Status: dnsStatus{node}, Logger: log, Registry: reg,
		Blobs: node})
	if err != nil {
		return errors.Join(fmt.Errorf("start dns: %w", err), api.Close(), node.Close())
	}
	if err := dns.Start(); err != nil {
		// Close stops what New started (forwarding health checks) and
		// writes the cache dump back while the node is open.
		return errors.Join(fmt.Errorf("start dns: %w", err), dns.Close(), api.Close(), node.Close())
	}

	// 4. Join, in the background: JoinCluster retries until a member
	// admits this node. A node of another cluster must not stay up.
	jctx, stopJoin := context.WithCancel(ctx)
	defer stopJoin()
	joinErr := make(chan error, 1)
	var wg sync.WaitGroup
	if len(cfg.Raft.Join) > 0 && node.HadState() {
		// A restarted member needs no join: Raft already knows the cluster.
		log.Info("data dir holds Raft state; raft.join is not needed and is ignored", "join", cfg.Raft.Join)
	} else if len(cfg.Raft.Join) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := node.JoinCluster(jctx); err != nil && jctx.Err() == nil {
				joinErr <- fmt.Errorf("join the cluster: %w", err)
			}
		}()
	}
	if ready != nil {
		ready(started{APIURL: api.URL(), DNSAddr: dns.Addr()})
	}

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-joinErr:
	}
	stopJoin()
	wg.Wait()

	// Shut down in the reverse order of start:
	//  1. DNS first, so no query is answered from a node that is going away.
	//     It writes its last cache dump to local.db, so the node must still
	//     be open.
	//  2. The API next: no new writes are accepted, and those in flight
	//     finish (bounded by api.shutdown_timeout) while Raft still runs.
	//     Other nodes forwarding here get "connection refused", a definite
	//     failure they retry against the next leader.
	//  3. The node last: it hands leadership to another voter if it leads,
	//     shuts Raft down, writes local.db a last time and closes the stores.
	log.Info("shutting down")
	return errors.Join(runErr, dns.Close(), api.Close(), node.Close())
}

// nodeBackend is the admin API's Backend: the node, plus the FSM's
// WaitIndex so a forwarded write is visible here when the API answers.
type nodeBackend struct{ *cluster.Node }

var (
	_ httpapi.Backend     = nodeBackend{}
	_ httpapi.IndexWaiter = nodeBackend{}
)

// WaitIndex blocks until the served View has applied index i.
func (b nodeBackend) WaitIndex(ctx context.Context, i uint64) error {
	return b.FSM().WaitIndex(ctx, i)
}

// dnsStatus tells the DNS health name about the node, cheaply: it runs per
// query of that name and must not wait on Raft.
type dnsStatus struct{ n *cluster.Node }

func (s dnsStatus) NodeStatus() resolver.NodeStatus {
	state := "follower"
	if s.n.IsLeader() {
		state = "leader"
	}
	return resolver.NodeStatus{NodeID: s.n.NodeID(), RaftState: state, AppliedIndex: s.n.Current().Index}
}
