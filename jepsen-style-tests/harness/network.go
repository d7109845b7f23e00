package harness

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
)

// Names of what the harness creates. Everything starts with "kj" so the
// stale cleanup can find it and nothing else.
const (
	nsPrefix   = "kj-"
	switchNS   = "kj-sw"
	bridgeName = "kjb0" // inside switchNS
	hostLink   = "kjh0" // host end of the uplink
	upLink     = "kjup" // switch end of the uplink
	fwChain    = "KJ"   // iptables chain inside each node namespace
)

// Network is the bridge, the host uplink and the node namespaces.
type Network struct {
	prefix netip.Prefix // e.g. 10.77.0.0/24
	host   netip.Addr   // the client's address on the bridge
}

// NewNetwork checks the subnet and the tools; it creates nothing.
func NewNetwork(subnet string) (*Network, error) {
	p, err := netip.ParsePrefix(subnet)
	if err != nil || !p.Addr().Is4() || p.Bits() != 24 || !p.Addr().IsPrivate() {
		return nil, fmt.Errorf("subnet %q: want a private IPv4 /24 such as 10.77.0.0/24", subnet)
	}
	for _, tool := range []string{"ip", "iptables", "iptables-restore"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("%s not found: install iproute2 and iptables", tool)
		}
	}
	p = p.Masked()
	return &Network{prefix: p, host: p.Addr().Next()}, nil
}

// HostAddr is the client's address.
func (nw *Network) HostAddr() string { return nw.host.String() }

// NodeAddr returns the address of node index i (1-based): .11, .12, …
func (nw *Network) NodeAddr(i int) string {
	b := nw.prefix.Addr().As4()
	b[3] = byte(10 + i)
	return netip.AddrFrom4(b).String()
}

// Setup creates the switch namespace, the bridge and the host uplink.
func (nw *Network) Setup(ctx context.Context) error {
	cidr := fmt.Sprintf("%s/%d", nw.host, nw.prefix.Bits())
	steps := [][]string{
		{"netns", "add", switchNS},
		{"-n", switchNS, "link", "set", "lo", "up"},
		{"-n", switchNS, "link", "add", bridgeName, "type", "bridge"},
		{"-n", switchNS, "link", "set", bridgeName, "up"},
		{"link", "add", hostLink, "type", "veth", "peer", "name", upLink, "netns", switchNS},
		{"addr", "add", cidr, "dev", hostLink},
		{"link", "set", hostLink, "up"},
		{"-n", switchNS, "link", "set", upLink, "master", bridgeName},
		{"-n", switchNS, "link", "set", upLink, "up"},
	}
	for _, s := range steps {
		if err := ip(ctx, s...); err != nil {
			return fmt.Errorf("network setup: %w", err)
		}
	}
	return nil
}

// AddNamespace creates namespace ns with address addr on eth0, plugged
// into the bridge through a veth pair, and its empty KJ firewall chain.
func (nw *Network) AddNamespace(ctx context.Context, ns, addr string) error {
	port := "kjp-" + strings.TrimPrefix(ns, nsPrefix)
	steps := [][]string{
		{"netns", "add", ns},
		{"-n", ns, "link", "set", "lo", "up"},
		{"-n", switchNS, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns},
		{"-n", switchNS, "link", "set", port, "master", bridgeName},
		{"-n", switchNS, "link", "set", port, "up"},
		{"-n", ns, "addr", "add", fmt.Sprintf("%s/%d", addr, nw.prefix.Bits()), "dev", "eth0"},
		{"-n", ns, "link", "set", "eth0", "up"},
	}
	for _, s := range steps {
		if err := ip(ctx, s...); err != nil {
			return fmt.Errorf("namespace %s: %w", ns, err)
		}
	}
	return initFirewall(ctx, ns)
}

// Teardown removes the node namespaces, the switch and the uplink. Node
// processes must be gone first, or their namespaces live on.
func (nw *Network) Teardown(ctx context.Context) error {
	return removeAll(ctx)
}

// removeAll deletes every kj- namespace and the host uplink.
func removeAll(ctx context.Context) error {
	var errs []error
	out, err := run(ctx, "", "ip", "netns", "list")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], nsPrefix) {
			continue
		}
		if err := ip(ctx, "netns", "del", f[0]); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := run(ctx, "", "ip", "link", "show", hostLink); err == nil {
		if err := ip(ctx, "link", "del", hostLink); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
