package harness

import (
	"context"
	"fmt"
	"strings"
)

// initFirewall creates the KJ chain in ns and sends INPUT and OUTPUT
// through it.
func initFirewall(ctx context.Context, ns string) error {
	rules := "*filter\n:" + fwChain + " - [0:0]\n-I INPUT -j " + fwChain + "\n-I OUTPUT -j " + fwChain + "\nCOMMIT\n"
	if _, err := inNS(ctx, ns, rules, "iptables-restore", "-w", "--noflush"); err != nil {
		return fmt.Errorf("firewall in %s: %w", ns, err)
	}
	return nil
}

// setBlocked replaces the KJ chain of ns with DROP rules for TCP and UDP
// to and from each peer address, in one atomic iptables-restore.
func setBlocked(ctx context.Context, ns string, peers []string) error {
	var b strings.Builder
	b.WriteString("*filter\n-F " + fwChain + "\n")
	for _, p := range peers {
		for _, proto := range []string{"tcp", "udp"} {
			fmt.Fprintf(&b, "-A %s -s %s/32 -p %s -j DROP\n", fwChain, p, proto)
			fmt.Fprintf(&b, "-A %s -d %s/32 -p %s -j DROP\n", fwChain, p, proto)
		}
	}
	b.WriteString("COMMIT\n")
	if _, err := inNS(ctx, ns, b.String(), "iptables-restore", "-w", "--noflush"); err != nil {
		return fmt.Errorf("drop rules in %s: %w", ns, err)
	}
	return nil
}

// setNetem adds (spec non-empty) or removes a tc netem qdisc on eth0 of ns.
// It fails where the kernel has no sch_netem.
func setNetem(ctx context.Context, ns string, spec []string) error {
	if len(spec) == 0 {
		_, err := inNS(ctx, ns, "", "tc", "qdisc", "del", "dev", "eth0", "root")
		return err
	}
	_, err := inNS(ctx, ns, "", append([]string{"tc", "qdisc", "replace", "dev", "eth0", "root", "netem"}, spec...)...)
	return err
}
