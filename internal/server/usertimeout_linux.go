package server

import (
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// setUserTimeout makes the kernel abort a TCP connection whose sent bytes
// stay unacknowledged for d (TCP_USER_TIMEOUT). WriteTimeout alone acts
// only when a write blocks; answers that fit the send buffer and are
// never acknowledged, by a peer that stopped reading and whose window
// updates are lost, would otherwise keep the connection forever.
func setUserTimeout(nc net.Conn, d time.Duration) error {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nil
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d.Milliseconds()))
	})
	if err != nil {
		return err
	}
	return serr
}
