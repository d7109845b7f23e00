//go:build !linux

package resolver

import (
	"errors"
	"syscall"
)

const reusePortSupported = false

func reusePort(network, address string, c syscall.RawConn) error {
	return errors.New("SO_REUSEPORT is not supported on this system")
}
