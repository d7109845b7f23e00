package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/kudurru/kudurru/cluster/httpapi/client"
)

// The addresses of `serve --dev`: loopback only, next to the usual ports,
// and DNS on 1053 so neither root nor port 53 (nor mDNS's 5353) is needed.
const (
	devAPIAddr  = "127.0.0.1:8053"
	devRaftAddr = "127.0.0.1:8054"
	devDNSAddr  = "127.0.0.1:1053"
	devZone     = "example.test."
)

// devPreset is the configuration layer of --dev, above the defaults and
// below the file, the environment and the flags.
func devPreset() map[string]any {
	return map[string]any{
		"node.id":        "dev",
		"raft.bootstrap": true,
		"api.addr":       devAPIAddr,
		"raft.addr":      devRaftAddr,
		"dns.addr":       devDNSAddr,
	}
}

// devZoneFile is the demo zone of --dev.
const devZoneFile = `$ORIGIN example.test.
$TTL 300
@     IN SOA   ns1 hostmaster 1 3600 600 1209600 300
@     IN NS    ns1
@     IN A     192.0.2.10
@     IN MX    10 mail
@     IN TXT   "kudurru demo zone"
ns1   IN A     192.0.2.53
www   IN A     192.0.2.10
www   IN AAAA  2001:db8::10
mail  IN A     192.0.2.25
blog  IN CNAME www
`

// devReady loads the demo zone once the dev node leads, and prints how to
// query it.
func devReady(ctx context.Context, a *app, cfg Config, s started, log *slog.Logger) {
	c, err := client.New(s.APIURL, cfg.API.Token, nil)
	if err == nil {
		err = seedDemo(ctx, c)
	}
	if err != nil {
		log.Warn("demo zone not loaded", "err", err)
	}
	host, port, _ := net.SplitHostPort(s.DNSAddr)
	fmt.Fprintf(a.stdout, `
kudurru dev node %q is up.
  API   %s (no token: loopback only)
  DNS   %s, UDP and TCP
  data  %s (removed on exit)

The demo zone %s is loaded. Try:
  dig @%s -p %s www.example.test A
  kdig @%s -p %s example.test MX
  kudurru record list example.test
  kudurru record add example.test 'api 300 IN A 192.0.2.80'

Stop with Ctrl-C.
`, cfg.Node.ID, s.APIURL, s.DNSAddr, cfg.Node.DataDir, devZone, host, port, host, port)
	if s.APIURL != "http://"+devAPIAddr {
		fmt.Fprintf(a.stdout, "(The API is not on the CLI's default address: export KUDURRU_API=%s)\n", s.APIURL)
	}
}

// seedDemo waits (bounded) until the node leads a bootstrapped cluster,
// then imports the demo zone unless it exists.
func seedDemo(ctx context.Context, c *client.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond) // across HTTP there is no event to wait on
	defer tick.Stop()
	for {
		st, err := c.Status(ctx)
		if err == nil && st.State == "leader" && st.ClusterID != "" && st.Ready {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the dev node did not become a ready leader: %w", ctx.Err())
		case <-tick.C:
		}
	}
	if _, err := c.GetZone(ctx, devZone); err == nil {
		return nil // a persistent --data-dir already has it
	}
	_, err := c.Import(ctx, devZone, strings.NewReader(devZoneFile))
	return err
}
