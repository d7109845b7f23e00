package resolver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
)

// listen binds n UDP sockets and one TCP listener to addr. With n > 1 every
// UDP socket sets SO_REUSEPORT and the kernel spreads flows over them. With
// port 0 the first UDP socket picks the port and the rest, TCP included,
// bind the same one; when TCP finds that port taken the whole set is tried
// again on a new one.
func listen(addr string, n int) ([]*net.UDPConn, net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, err
	}
	tries := 1
	if port == "0" {
		tries = 8
	}
	for {
		udp, tcp, err := listenOnce(host, port, n)
		tries--
		if err == nil || tries == 0 || !errors.Is(err, syscall.EADDRINUSE) {
			return udp, tcp, err
		}
	}
}

func listenOnce(host, port string, n int) ([]*net.UDPConn, net.Listener, error) {
	lc := net.ListenConfig{}
	if n > 1 {
		lc.Control = reusePort
	}
	ctx := context.Background()
	var conns []*net.UDPConn
	fail := func(err error) ([]*net.UDPConn, net.Listener, error) {
		for _, c := range conns {
			c.Close()
		}
		return nil, nil, err
	}
	addr := net.JoinHostPort(host, port)
	for i := 0; i < n; i++ {
		pc, err := lc.ListenPacket(ctx, "udp", addr)
		if err != nil {
			return fail(fmt.Errorf("listen udp %s (socket %d of %d): %w", addr, i+1, n, err))
		}
		conns = append(conns, pc.(*net.UDPConn))
		if i == 0 {
			addr = net.JoinHostPort(host, strconv.Itoa(pc.LocalAddr().(*net.UDPAddr).Port))
		}
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return fail(fmt.Errorf("listen tcp %s: %w", addr, err))
	}
	return conns, ln, nil
}
