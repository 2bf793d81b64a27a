package client_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/servertest"
)

// slowReader hands its connection's bytes on at about 20 KB/s, as a slow
// link would deliver them.
type slowReader struct{ nc net.Conn }

func (r slowReader) Read(p []byte) (int, error) {
	time.Sleep(50 * time.Millisecond)
	return r.nc.Read(p[:min(len(p), 1024)])
}

// TestKeepaliveSlowLinkIsAlive: a large request takes about three seconds
// to reach a peer that answers everything, pings included, as soon as it
// has read it. The ping is queued behind the request, so nothing is read
// for far longer than Time+Timeout; but the peer's host keeps
// acknowledging the request's bytes as they cross (its receive buffer is
// small, so they cannot all be taken in at once), and that is life: the
// connection must be kept and the call answered. Acknowledgements come a
// few KB at a time, as the peer's window opens, so Timeout must span the
// gap between them; with the acknowledgement check removed the test fails
// after Time+Timeout.
func TestKeepaliveSlowLinkIsAlive(t *testing.T) {
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		fr := proto.NewFrameReader(slowReader{nc}, proto.TypeRequest, 0)
		for {
			frames, err := fr.ReadBatch()
			var out []byte
			for _, f := range frames {
				out, _ = proto.AppendFrame(out, &proto.Frame{Type: proto.TypeResponse, ID: f.ID, Method: f.Method, Status: proto.StatusOK, Payload: []byte("ok")})
			}
			if _, werr := nc.Write(out); werr != nil || err != nil {
				io.Copy(io.Discard, nc)
				return
			}
		}
	}()

	cfg := servertest.ClientConfig()
	cfg.AttemptTimeout, cfg.Deadline, cfg.MaxAttempts = 20*time.Second, 20*time.Second, 1
	// Timeout spans a gap between acknowledgements on a loaded machine
	// (500ms did not, once, under -race beside other builds, nor did 1s
	// once beside the whole go test -race ./...), and Time+Timeout stays
	// well short of the request's three seconds.
	cfg.Keepalive = &client.KeepaliveConfig{Time: 100 * time.Millisecond, Timeout: 1500 * time.Millisecond}
	c, err := client.New(ln.Addr().String(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := c.Do(context.Background(), client.Call{Method: "get", Idempotent: true, Payload: []byte(strings.Repeat("x", 60_000))})
	st := c.Stats()
	if r.Status != proto.StatusOK || st.KeepaliveTimeouts != 0 {
		t.Fatalf("call over a slow link: got %v %v after %v, keepalive timeouts %d; want OK and none", r.Status, r.Err, r.Elapsed, st.KeepaliveTimeouts)
	}
	if r.Elapsed < 2*time.Second {
		t.Fatalf("the request crossed in %v: the peer was not slow, the test proves nothing", r.Elapsed)
	}
	t.Logf("answered after %v, %d pings", r.Elapsed, st.PingsSent)
}

// TestKeepaliveHungPeerWithTraffic: a peer whose process never reads
// again, while calls keep coming. Its kernel acknowledges every new
// request (and every cancel) while its receive buffer has room; those
// acknowledgements come from bytes written after the ping and must not
// keep the connection alive. It is declared dead, as an idle one would
// be, instead of every call timing out on it.
func TestKeepaliveHungPeerWithTraffic(t *testing.T) {
	addr := fakeServer(t, func(nc net.Conn) { <-t.Context().Done() }) // never reads
	lost := newLostLog()
	cfg := servertest.ClientConfig()
	cfg.Keepalive = &client.KeepaliveConfig{Time: 100 * time.Millisecond, Timeout: 300 * time.Millisecond}
	cfg.OnConnLost, cfg.CancelAbandoned, cfg.MaxAttempts = lost.hook, true, 1
	c, err := client.New(addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			c.Do(context.Background(), client.Call{Method: "get", Idempotent: true, Payload: []byte("account=a"), Timeout: 150 * time.Millisecond})
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	lc := lost.wait(t)
	close(stop)
	<-done
	if !errors.Is(lc.err, client.ErrKeepaliveTimeout) {
		t.Fatalf("connection lost to %v, want ErrKeepaliveTimeout", lc.err)
	}
	t.Logf("declared dead with calls flowing; %d pings", c.Stats().PingsSent)
}
