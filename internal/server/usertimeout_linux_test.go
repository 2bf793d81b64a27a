package server

import (
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestSetUserTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := setUserTimeout(nc, 1500*time.Millisecond); err != nil {
		t.Fatalf("setUserTimeout: %v", err)
	}
	raw, err := nc.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var got int
	var gerr error
	raw.Control(func(fd uintptr) { got, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT) })
	if gerr != nil || got != 1500 {
		t.Errorf("TCP_USER_TIMEOUT = %d (%v), want 1500", got, gerr)
	}
}
