//go:build !linux

package client

import (
	"syscall"
	"time"
)

// userTimeoutControl is Linux-only; elsewhere Config.UserTimeout is
// ignored and the dialer gets no hook.
func userTimeoutControl(time.Duration) func(network, address string, rc syscall.RawConn) error {
	return nil
}
