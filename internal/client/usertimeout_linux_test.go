package client

import (
	"context"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestUserTimeout: every connection the client dials carries
// Config.UserTimeout as TCP_USER_TIMEOUT, in whole milliseconds, at
// least 1; zero leaves the kernel's default, 0.
func TestUserTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tests := []struct {
		name string
		d    time.Duration
		want int
	}{
		{"off", 0, 0},
		{"1500ms", 1500 * time.Millisecond, 1500},
		{"rounded_down", 2*time.Second + 999*time.Microsecond, 2000},
		{"at_least_1ms", 10 * time.Microsecond, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.UserTimeout = tt.d
			c, err := New(ln.Addr().String(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			cn, _, err := c.dial(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer cn.close()
			raw, err := cn.nc.(*net.TCPConn).SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			var got int
			var gerr error
			if err := raw.Control(func(fd uintptr) {
				got, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT)
			}); err != nil {
				t.Fatal(err)
			}
			if gerr != nil || got != tt.want {
				t.Errorf("got TCP_USER_TIMEOUT %d (%v), want %d", got, gerr, tt.want)
			}
		})
	}
}
