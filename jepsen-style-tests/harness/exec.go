// Package harness runs real kudurru processes for the partition suite, one
// per Linux network namespace, all attached to one bridge, and cuts the
// network between them with drop rules inside each node's namespace.
//
// Topology (subnet 10.77.0.0/24 by default; every address belongs to a
// namespace the harness creates):
//
//	host namespace: the test client, kjh0 = 10.77.0.1
//	   │ veth
//	kj-sw namespace: bridge kjb0 (the "switch")
//	   │ veth per node
//	kj-n1 … kj-nN namespaces: eth0 = 10.77.0.11 …, one kudurru each
//
// The bridge lives in its own namespace rather than in the host's because
// the host may filter bridged traffic (br_netfilter with a FORWARD policy
// of DROP, as Docker leaves it); a fresh namespace has no such rules, and
// the host's firewall is never touched. Partitions are iptables DROP rules
// for TCP and UDP in a KJ chain inside each node's namespace, matching
// peer node addresses only, so the client (10.77.0.1) is never cut and
// availability stays measurable.
//
// Everything the harness creates is removed by Cluster.Close, by the
// SIGINT/SIGTERM handler (InstallSignalHandler), and at the start of the
// next run (StaleCleanup), which also kills node processes left by a run
// that died, found through the pid files the harness writes.
package harness

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// cmdTimeout bounds one ip/iptables/tc command.
const cmdTimeout = 20 * time.Second

// run runs a command and returns its combined output; the error carries
// the command line and the output.
func run(ctx context.Context, stdin string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// ip runs ip(8) with args.
func ip(ctx context.Context, args ...string) error {
	_, err := run(ctx, "", "ip", args...)
	return err
}

// inNS runs a command inside network namespace ns.
func inNS(ctx context.Context, ns, stdin string, args ...string) (string, error) {
	return run(ctx, stdin, "ip", append([]string{"netns", "exec", ns}, args...)...)
}
