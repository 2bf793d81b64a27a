package server_test

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/server"
	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/servertest"
)

// TestReadTimeout: a peer that trickles a frame a byte at a time
// (slowloris) is disconnected once the frame has taken ReadTimeout,
// logged READ_TIMEOUT with the bytes of the frame it had sent, and
// counted; meanwhile a polite connection is served, and connections idle
// between frames, past ReadTimeout, are kept.
func TestReadTimeout(t *testing.T) {
	const readTimeout = 250 * time.Millisecond
	log := &servertest.Log{}
	cfg := server.DefaultConfig()
	cfg.ReadTimeout = readTimeout
	cfg.Log = log.Logger()
	srv, addr := servertest.Start(t, cfg)
	ping := func(rc *servertest.Conn, id uint64) {
		t.Helper()
		rc.Send(servertest.Request(id, serverapi.MethodPing, ""))
		if f := rc.Recv(); f.ID != id || f.Status != proto.StatusOK {
			t.Fatalf("ping %d: got id %d %v, want OK", id, f.ID, f.Status)
		}
	}

	never := servertest.Dial(t, addr) // sends nothing at all
	polite := servertest.Dial(t, addr)
	ping(polite, 1)
	// A frame in two pieces, well within ReadTimeout of each other: its
	// deadline must end with it, or the idle below would trip it.
	split := servertest.Dial(t, addr)
	frame := servertest.Encode(t, servertest.Request(2, serverapi.MethodPing, ""))
	split.SendBytes(frame[:5])
	time.Sleep(readTimeout / 3)
	split.SendBytes(frame[5:])
	if f := split.Recv(); f.ID != 2 || f.Status != proto.StatusOK {
		t.Fatalf("split ping: got id %d %v, want OK", f.ID, f.Status)
	}

	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	trickler := servertest.NewConn(t, nc)
	stop := make(chan struct{})
	halt := sync.OnceFunc(func() { close(stop) })
	t.Cleanup(halt)
	trickled := make(chan int, 1)
	slow := servertest.Encode(t, servertest.Request(3, serverapi.MethodPing, string(make([]byte, 30))))
	go func() {
		// A byte every ReadTimeout/3: each read is prompt, the frame is
		// not. The frame would take 10 ReadTimeouts to finish.
		sent := 0
		defer func() { trickled <- sent }()
		tick := time.NewTicker(readTimeout / 3)
		defer tick.Stop()
		for sent < len(slow) {
			if _, err := nc.Write(slow[sent : sent+1]); err != nil {
				return
			}
			sent++
			select {
			case <-tick.C:
			case <-stop:
				return
			}
		}
	}()
	ping(polite, 4)
	ev := log.WaitEvent(t, serverapi.EventReadTimeout, nil)
	halt()
	sent := <-trickled
	if _, err := trickler.WaitClosed(); err == nil {
		t.Errorf("trickler: read returned no error, want the connection closed")
	}
	if got, want := ev.Attrs[serverapi.KeyTimeout], readTimeout.String(); got != want {
		t.Errorf("READ_TIMEOUT timeout = %v, want %v", got, want)
	}
	if b, ok := ev.Attrs[serverapi.KeyBuffered].(float64); !ok || b < 1 || int(b) > sent {
		t.Errorf("READ_TIMEOUT buffered = %v, want between 1 and the %d bytes sent", ev.Attrs[serverapi.KeyBuffered], sent)
	}
	if got := servertest.Counter(t, srv, "read_timeouts"); got != 1 {
		t.Errorf("read_timeouts = %d, want 1", got)
	}

	// The idle is the condition under test, not a wait for anything: the
	// idle connections outlive ReadTimeout by half.
	time.Sleep(readTimeout + readTimeout/2)
	ping(polite, 5)
	ping(split, 6)
	ping(never, 7)
	if got := servertest.Counter(t, srv, "read_timeouts"); got != 1 {
		t.Errorf("read_timeouts after the idle = %d, want still 1", got)
	}
}
