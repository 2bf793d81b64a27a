package main

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/serverproc"
)

// TestLongIdleConnsKept is a measurement, not part of go test's default
// run: it takes minutes. Run it with
//
//	RPCBENCH_LONG=1 go test ./cmd/rpcserver -run TestLongIdleConnsKept -v -timeout 10m
//
// It starts a real rpcserver process with the default flags, bar
// -max-conns (raised to admit the connections), opens 10,000 connections
// from this process, has each make one ping, and lets them idle for 2
// minutes: long enough for several rounds of keepalive probes. Then the
// server must report every one of them open (conns_open, from ctl.stats)
// and every client socket must still be open, neither at EOF nor reset.
// RPCBENCH_LONG_CONNS and RPCBENCH_LONG_IDLE (a Go duration) change the
// count and the idle; RPCSERVER_BIN runs a prebuilt rpcserver instead of
// building this one, to measure another version.
func TestLongIdleConnsKept(t *testing.T) {
	if os.Getenv("RPCBENCH_LONG") != "1" {
		t.Skip("a measurement of minutes: set RPCBENCH_LONG=1 to run it")
	}
	conns, idle := 10000, 2*time.Minute
	if v := os.Getenv("RPCBENCH_LONG_CONNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("RPCBENCH_LONG_CONNS=%q: want a positive integer", v)
		}
		conns = n
	}
	if v := os.Getenv("RPCBENCH_LONG_IDLE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("RPCBENCH_LONG_IDLE=%q: want a positive Go duration", v)
		}
		idle = d
	}
	bin := os.Getenv("RPCSERVER_BIN")
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "rpcserver")
		if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	}
	logPath := filepath.Join(t.TempDir(), "server.log")
	spec := serverproc.RPCServer{Bin: bin, LogPath: logPath}.Spec()
	spec.Args = append(spec.Args, "-"+serverapi.FlagMaxConns, strconv.Itoa(conns+16))
	srv, err := serverproc.StartAwait(context.Background(), spec, serverproc.StartTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	addr := srv.Addr

	ping, err := proto.AppendFrame(nil, &proto.Frame{Type: proto.TypeRequest, ID: 1, BudgetMs: 5000, Method: serverapi.MethodPing})
	if err != nil {
		t.Fatal(err)
	}
	ncs := make([]net.Conn, conns)
	defer func() {
		for _, nc := range ncs {
			if nc != nil {
				nc.Close()
			}
		}
	}()
	// A few dialers at once: the connections open within a second or
	// two, so that their keepalive timers fire together, as a load
	// generator's do.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			buf := make([]byte, 256)
			for i := w; i < conns; i += 8 {
				nc, err := net.Dial("tcp", addr)
				if err != nil {
					errs <- err
					return
				}
				ncs[i] = nc
				nc.SetDeadline(time.Now().Add(30 * time.Second))
				if _, err := nc.Write(ping); err != nil {
					errs <- err
					return
				}
				if _, err := nc.Read(buf); err != nil {
					errs <- err
					return
				}
				nc.SetDeadline(time.Time{})
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatalf("opening %d connections: %v", conns, err)
	}
	t.Logf("%d connections open and pinged; idling %v", conns, idle)
	time.Sleep(idle) // the idle is what is measured

	open := statsConnsOpen(t, addr) - 1 // less the stats connection
	dead := map[string]int{}
	for _, nc := range ncs {
		if state := socketState(nc); state != "open" {
			dead[state]++
		}
	}
	t.Logf("after %v idle: server conns_open=%d of %d; client sockets not open: %v", idle, open, conns, dead)
	if open != int64(conns) || len(dead) > 0 {
		t.Errorf("got conns_open %d and client sockets not open %v, want all %d open", open, dead, conns)
	}
}

// statsConnsOpen asks the server at addr for conns_open.
func statsConnsOpen(t *testing.T, addr string) int64 {
	t.Helper()
	c, err := client.New(addr, client.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := c.Do(context.Background(), client.Call{Method: serverapi.MethodStats, Idempotent: true})
	if r.Status != proto.StatusOK {
		t.Fatalf("ctl.stats: %v %v", r.Status, r.Err)
	}
	ctr, err := serverapi.ParseCounters(r.Payload)
	if err != nil {
		t.Fatal(err)
	}
	return ctr.ConnsOpen
}

// socketState peeks at nc without blocking: "open" when nothing is to
// be read, "eof" when the peer closed, else the socket's error.
func socketState(nc net.Conn) string {
	raw, err := nc.(*net.TCPConn).SyscallConn()
	if err != nil {
		return err.Error()
	}
	state := ""
	raw.Control(func(fd uintptr) {
		n, _, err := unix.Recvfrom(int(fd), make([]byte, 1), unix.MSG_PEEK|unix.MSG_DONTWAIT)
		switch {
		case errors.Is(err, unix.EAGAIN):
			state = "open"
		case err != nil:
			state = err.Error()
		case n == 0:
			state = "eof"
		default:
			state = "unread bytes"
		}
	})
	return state
}
