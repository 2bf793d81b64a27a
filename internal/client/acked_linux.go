package client

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// bytesAcked returns how many of the bytes written on nc the peer has
// acknowledged (TCP_INFO's tcpi_bytes_acked), and false when it cannot
// tell. It proves the peer's host alive even when its answers are stuck
// behind our own bytes on a slow link.
func bytesAcked(nc net.Conn) (uint64, bool) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return 0, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, false
	}
	var info *unix.TCPInfo
	var gerr error
	if err := rc.Control(func(fd uintptr) {
		info, gerr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil || gerr != nil {
		return 0, false
	}
	return info.Bytes_acked, true
}
