package client

import (
	"math"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// userTimeoutControl returns a net.Dialer.Control that sets
// TCP_USER_TIMEOUT to d on the socket before it connects, so that it
// covers the handshake too. d is in whole milliseconds, rounded down but
// at least 1: 0 would mean the kernel's default.
func userTimeoutControl(d time.Duration) func(network, address string, rc syscall.RawConn) error {
	ms := int(min(max(d.Milliseconds(), 1), math.MaxInt32))
	return func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, ms)
		})
		if err != nil {
			return err
		}
		return serr
	}
}
