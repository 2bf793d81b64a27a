package transport_test

import (
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rpcbench/rpcbench/internal/transport"
)

// TestTuneTCPKeepAlive runs the kernel's keepalive under TuneTCP's
// tuning, with the shortest keepalive it takes (1s) and a write timeout
// shorter than the probe interval. The peer loses probes through a
// socket filter that drops everything it receives, before TCP sees it:
// a peer that loses the first probe and answers the next is kept, and a
// peer that never answers again is dropped, but not before the third
// probe has gone unanswered.
func TestTuneTCPKeepAlive(t *testing.T) {
	const keepAlive, writeTimeout = time.Second, 500 * time.Millisecond
	plan := transport.PlanTCP(keepAlive, writeTimeout)
	t.Run("lost_probe", func(t *testing.T) {
		t.Parallel()
		srv, peer := tunedPair(t, keepAlive, writeTimeout)
		dead := readErr(srv)
		deaf(t, peer, true)
		awaitProbes(t, srv, dead, func(n int) bool { return n >= 1 })
		deaf(t, peer, false)
		// The next probe is answered: the count is reset, the peer kept.
		awaitProbes(t, srv, dead, func(n int) bool { return n == 0 })
		if _, err := peer.Write([]byte{1}); err != nil {
			t.Fatalf("peer write after the lost probe: %v", err)
		}
		select {
		case err := <-dead:
			if err != nil {
				t.Fatalf("server side after the lost probe: %v, want the byte", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the peer's byte never arrived")
		}
	})
	t.Run("dead_peer", func(t *testing.T) {
		t.Parallel()
		srv, peer := tunedPair(t, keepAlive, writeTimeout)
		start := time.Now()
		dead := readErr(srv)
		deaf(t, peer, true)
		var err error
		select {
		case err = <-dead:
		case <-time.After(10 * plan.UserTimeout):
			t.Fatalf("a peer answering no probe still connected after %v", 10*plan.UserTimeout)
		}
		took := time.Since(start)
		if !errors.Is(err, syscall.ETIMEDOUT) {
			t.Errorf("server side read: %v, want ETIMEDOUT", err)
		}
		// The kernel aborts when the timer fires after the last probe;
		// timers fire late, never early.
		low := plan.Idle + time.Duration(plan.Probes-1)*plan.Interval
		high := plan.Idle + time.Duration(plan.Probes)*plan.Interval + 2*time.Second
		if took < low || took > high {
			t.Errorf("dead peer dropped after %v, want within [%v, %v]", took.Round(time.Millisecond), low, high)
		}
	})
}

// tunedPair returns both ends of a loopback connection, the accepted one
// tuned by TuneTCP; the peer sends no keepalive of its own.
func tunedPair(t *testing.T, keepAlive, writeTimeout time.Duration) (srv, peer *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	d := net.Dialer{KeepAlive: -1}
	nc, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	sc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Close() })
	if err := transport.TuneTCP(sc, keepAlive, writeTimeout); err != nil {
		t.Fatalf("TuneTCP: %v", err)
	}
	return sc.(*net.TCPConn), nc.(*net.TCPConn)
}

// readErr reads one byte from c in the background and sends the error,
// nil once a byte arrived.
func readErr(c *net.TCPConn) <-chan error {
	ch := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 1))
		ch <- err
	}()
	return ch
}

// deaf attaches to c, or detaches, a socket filter that drops every
// segment c receives before TCP processes it: c neither sees nor
// answers the probes meanwhile, as if they were lost on the way.
func deaf(t *testing.T, c *net.TCPConn, on bool) {
	t.Helper()
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	err = raw.Control(func(fd uintptr) {
		if !on {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_DETACH_FILTER, 0)
			return
		}
		drop := []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: 0}}
		serr = unix.SetsockoptSockFprog(int(fd), unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &unix.SockFprog{Len: 1, Filter: &drop[0]})
	})
	if err != nil || serr != nil {
		t.Fatalf("socket filter on=%v: %v %v", on, err, serr)
	}
}

// awaitProbes waits until the count of unanswered keepalive probes on c
// satisfies cond; the connection dying first fails the test.
func awaitProbes(t *testing.T, c *net.TCPConn, dead <-chan error, cond func(int) bool) {
	t.Helper()
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	limit := time.Now().Add(10 * time.Second)
	for {
		var n int
		var ierr error
		raw.Control(func(fd uintptr) {
			var info *unix.TCPInfo
			info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
			if ierr == nil {
				n = int(info.Probes)
			}
		})
		if ierr != nil {
			t.Fatalf("TCP_INFO: %v", ierr)
		}
		if cond(n) {
			return
		}
		select {
		case err := <-dead:
			t.Fatalf("connection dropped with %d probes unanswered: %v", n, err)
		default:
		}
		if time.Now().After(limit) {
			t.Fatalf("unanswered probes still %d after 10s", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTuneTCPSockopts: TuneTCP sets what PlanTCP decides on the socket.
func TestTuneTCPSockopts(t *testing.T) {
	for _, keepAlive := range []time.Duration{15 * time.Second, 0} {
		srv, _ := tunedPair(t, keepAlive, 10*time.Second)
		plan := transport.PlanTCP(keepAlive, 10*time.Second)
		raw, err := srv.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		get := func(level, opt int) int {
			var v int
			var gerr error
			raw.Control(func(fd uintptr) { v, gerr = unix.GetsockoptInt(int(fd), level, opt) })
			if gerr != nil {
				t.Fatalf("getsockopt %d: %v", opt, gerr)
			}
			return v
		}
		if got, want := get(unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT), int(plan.UserTimeout.Milliseconds()); got != want {
			t.Errorf("keepalive %v: TCP_USER_TIMEOUT = %d, want %d", keepAlive, got, want)
		}
		if got, want := get(unix.SOL_SOCKET, unix.SO_KEEPALIVE) != 0, plan.KeepAlive; got != want {
			t.Errorf("keepalive %v: SO_KEEPALIVE = %v, want %v", keepAlive, got, want)
		}
		if !plan.KeepAlive {
			continue
		}
		for _, o := range []struct {
			name string
			opt  int
			want int
		}{
			{"TCP_KEEPIDLE", unix.TCP_KEEPIDLE, int(plan.Idle / time.Second)},
			{"TCP_KEEPINTVL", unix.TCP_KEEPINTVL, int(plan.Interval / time.Second)},
			{"TCP_KEEPCNT", unix.TCP_KEEPCNT, plan.Probes},
		} {
			if got := get(unix.IPPROTO_TCP, o.opt); got != o.want {
				t.Errorf("keepalive %v: %s = %d, want %d", keepAlive, o.name, got, o.want)
			}
		}
	}
}
