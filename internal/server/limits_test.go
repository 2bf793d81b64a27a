package server_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/server"
	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/servertest"
	"github.com/rpcbench/rpcbench/internal/transport"
)

// TestMaxConnsBurstLogBounded: a burst of connections past MaxConns is
// counted one by one in conns_rejected, and logged as LIMIT events
// whose counts sum to the burst, at most one a second: a peer that
// connects in a loop does not grow the log per connection. Nothing else
// is logged for the connections turned away.
func TestMaxConnsBurstLogBounded(t *testing.T) {
	const burst = 200
	log := &servertest.Log{}
	cfg := server.DefaultConfig()
	cfg.MaxConns, cfg.Log = 1, log.Logger()
	srv, addr := servertest.Start(t, cfg)
	held := servertest.Dial(t, addr)
	held.Send(servertest.Request(1, serverapi.MethodPing, ""))
	if f := held.Recv(); f.Status != proto.StatusOK {
		t.Fatalf("ping on the one connection allowed: got %v, want OK", f.Status)
	}

	start := time.Now()
	for i := range burst {
		if _, err := servertest.Dial(t, addr).WaitClosed(); err == nil {
			t.Fatalf("connection %d of the burst: read returned no error, want it closed", i)
		}
	}
	took := time.Since(start)
	if got := servertest.Counter(t, srv, "conns_rejected"); got != burst {
		t.Errorf("conns_rejected = %d, want %d", got, burst)
	}
	srv.Close() // logs the refusals still pending

	var sum, lines, other int64
	for _, e := range log.Events(t) {
		switch e.Name {
		case serverapi.EventLimit:
			if got := e.Text(serverapi.KeyLimit); got != serverapi.FlagMaxConns {
				t.Errorf("LIMIT limit=%q, want %q", got, serverapi.FlagMaxConns)
			}
			n, _ := e.Int(serverapi.KeyCount)
			sum += n
			lines++
		case serverapi.EventConnOpen, serverapi.EventConnClosed:
			// The held connection's.
		default:
			if other++; other <= 3 {
				t.Logf("event: %v", e)
			}
		}
	}
	// One at the first refusal, one a second after each LIMIT while
	// refusals go on, and one more at Close.
	maxLines := 2 + int64(took/transport.LimitLogInterval)
	if sum != burst {
		t.Errorf("LIMIT counts sum to %d, want %d", sum, burst)
	}
	if lines < 1 || lines > maxLines {
		t.Errorf("%d LIMIT lines for %d refusals in %v, want 1 to %d", lines, burst, took, maxLines)
	}
	if other != 0 {
		t.Errorf("%d other events logged, want none for the connections turned away", other)
	}
}

// TestMaxConns: a connection beyond MaxConns is closed at once and
// counted; the ones already open are still served, and a slot freed by a
// close can be used again.
func TestMaxConns(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.MaxConns = 2
	srv, addr := servertest.Start(t, cfg)
	ping := func(rc *servertest.Conn, id uint64) {
		t.Helper()
		rc.Send(servertest.Request(id, serverapi.MethodPing, ""))
		if f := rc.Recv(); f.ID != id || f.Status != proto.StatusOK {
			t.Fatalf("ping %d: got id %d %v, want OK", id, f.ID, f.Status)
		}
	}
	a, b := servertest.Dial(t, addr), servertest.Dial(t, addr)
	ping(a, 1)
	ping(b, 2)

	extra := servertest.Dial(t, addr)
	if _, err := extra.WaitClosed(); err == nil {
		t.Fatalf("connection beyond MaxConns: read returned no error")
	}
	if got := servertest.Counter(t, srv, "conns_rejected"); got < 1 {
		t.Errorf("conns_rejected = %d, want at least 1", got)
	}
	ping(a, 3)

	b.Close()
	ping4 := servertest.Encode(t, servertest.Request(4, serverapi.MethodPing, ""))
	servertest.WaitFor(t, "the closed connection to be forgotten", func() bool {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			return false
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(time.Second))
		if _, err := nc.Write(ping4); err != nil {
			return false
		}
		n, err := nc.Read(make([]byte, 64))
		return err == nil && n > 0
	})
}

// pipeListener serves connections made with net.Pipe, which buffers
// nothing: a peer that does not read blocks the server's next write at
// once, whatever the kernel's socket buffers would have absorbed.
type pipeListener struct {
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return &net.UnixAddr{Name: "pipe", Net: "pipe"} }

func (l *pipeListener) dial(t *testing.T) net.Conn {
	t.Helper()
	client, server := net.Pipe()
	select {
	case l.conns <- server:
	case <-time.After(servertest.WaitLimit):
		t.Fatal("server did not accept a pipe connection")
	}
	t.Cleanup(func() { client.Close() })
	return client
}

// servePipe serves New's server on a pipeListener, closed when the
// test ends.
func servePipe(t *testing.T, cfg server.Config, faults ...string) (*server.Server, *pipeListener) {
	t.Helper()
	srv := servertest.New(t, cfg, faults...)
	ln := newPipeListener()
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return srv, ln
}

// sendUntilRefused writes up to sent requests for method with payload to
// nc, a client that reads nothing, one write each, and then says on the
// channel it returns how many it wrote: all of them, or those before a
// write failed.
func sendUntilRefused(nc net.Conn, sent int, method string, payload []byte) <-chan int {
	wrote := make(chan int, 1)
	go func() {
		n := 0
		for ; n < sent; n++ {
			b, _ := proto.AppendFrame(nil, &proto.Frame{Type: proto.TypeRequest, ID: uint64(n + 1), BudgetMs: 5000, Method: method, Payload: payload})
			if _, err := nc.Write(b); err != nil {
				break
			}
		}
		wrote <- n
	}()
	return wrote
}

// awaitRefused returns sendUntilRefused's count; no count within
// WaitLimit fails the test.
func awaitRefused(t *testing.T, wrote <-chan int) int {
	t.Helper()
	select {
	case n := <-wrote:
		return n
	case <-time.After(servertest.WaitLimit):
		t.Fatal("the hog's writes never failed: the server kept reading, or never disconnected it")
		return 0
	}
}

// TestClientThatNeverReads: a client that sends requests without reading
// any answer is no longer read once its answers cannot be written, and is
// disconnected after WriteTimeout; meanwhile another client is served.
// Answers the reader writes itself block the reader directly; answers the
// writer goroutine writes (chunk mode here) pile up to MaxOutBytes, and
// then the reader waits for room.
func TestClientThatNeverReads(t *testing.T) {
	for _, chunk := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunk=%v", chunk), func(t *testing.T) {
			cfg := server.DefaultConfig()
			cfg.Chunk = chunk
			cfg.MaxOutBytes = proto.MaxFrameLen + 4
			cfg.WriteTimeout = 300 * time.Millisecond
			srv, ln := servePipe(t, cfg)

			const sent = 20000
			wrote := sendUntilRefused(ln.dial(t), sent, bank.MethodGet, []byte("account=hog"))

			// While the hog is stuck, another connection is served.
			rc := servertest.NewConn(t, ln.dial(t))
			rc.Send(servertest.Request(1, bank.MethodGet, "account=polite"))
			if f := rc.Recv(); f.Status != proto.StatusOK {
				t.Errorf("polite client during the stall: %v %q, want OK", f.Status, f.Payload)
			}

			n := awaitRefused(t, wrote)
			if n >= sent {
				t.Errorf("server read all %d requests of a client that reads nothing; want it to stop reading", sent)
			}
			stats := srv.Counters()
			if v, _ := stats.Int("write_timeouts", 0); v < 1 {
				t.Errorf("write_timeouts = %d, want at least 1", v)
			}
			if v, _ := stats.Int("out_limit_waits", 0); chunk && v < 1 {
				t.Errorf("out_limit_waits = %d, want at least 1 when the writer goroutine writes", v)
			}
			rc.Send(servertest.Request(2, bank.MethodGet, "account=polite"))
			if f := rc.Recv(); f.Status != proto.StatusOK {
				t.Errorf("polite client after the hog was dropped: %v, want OK", f.Status)
			}
			t.Logf("the hog got %d of %d requests in before the server stopped reading", n, sent)
		})
	}
}

func TestServerConfigLimits(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(*server.Config)
	}{
		{"MaxConns 0", func(c *server.Config) { c.MaxConns = 0 }},
		{"MaxOutBytes below one frame", func(c *server.Config) { c.MaxOutBytes = proto.MaxFrameLen }},
		{"WriteTimeout 0", func(c *server.Config) { c.WriteTimeout = 0 }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := server.DefaultConfig()
			tt.edit(&cfg)
			if err := cfg.Validate(); !errors.Is(err, server.ErrConfig) {
				t.Errorf("Validate() = %v, want an error wrapping ErrConfig", err)
			}
		})
	}
}

// TestLentAnswerWriteDeadline: the writev of a lent answer (an echo of
// writevMin bytes or more, written from the request's memory) runs under
// a fresh WriteTimeout deadline, as a copied answer's write does. A
// client that reads nothing is disconnected with a write_timeout within
// WriteTimeout and a margin, rather than holding the writer forever, and
// that whether its first answer is lent or one comes after the
// connection idled past WriteTimeout; a client that does read gets a
// lent answer sent after such an idle whole, rather than the deadline
// of the write before it.
func TestLentAnswerWriteDeadline(t *testing.T) {
	const writeTimeout = 200 * time.Millisecond
	for _, tt := range []struct {
		name  string
		idle  bool // a copied answer is read, then the connection idles past WriteTimeout
		reads bool // the client reads the lent answer
	}{
		{"first answer lent, never read", false, false},
		{"lent after idling, never read", true, false},
		{"lent after idling, read", true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			log := &servertest.Log{}
			cfg := server.DefaultConfig()
			cfg.WriteTimeout = writeTimeout
			cfg.Log = log.Logger()
			srv, ln := servePipe(t, cfg)
			rc := servertest.NewConn(t, ln.dial(t))
			if tt.idle {
				rc.Send(servertest.Request(1, serverapi.MethodPing, ""))
				if f := rc.Recv(); f.Status != proto.StatusOK {
					t.Fatalf("ping: got %v, want OK", f.Status)
				}
				// The idle is the condition under test, not a wait for
				// anything: the ping's write deadline passes.
				time.Sleep(2 * writeTimeout)
			}
			payload := bytes.Repeat([]byte{'x'}, 4096) // lent: at least writevMin
			start := time.Now()
			rc.Send(servertest.Request(2, bank.MethodEcho, string(payload)))
			if tt.reads {
				f := rc.Recv()
				if f.ID != 2 || f.Status != proto.StatusOK || !bytes.Equal(f.Payload, payload) {
					t.Fatalf("echo after idling: got id %d %v, %d bytes, want id 2 OK, the %d bytes sent", f.ID, f.Status, len(f.Payload), len(payload))
				}
				if n := servertest.Counter(t, srv, "write_timeouts"); n != 0 {
					t.Errorf("write_timeouts = %d, want 0 for a client that reads", n)
				}
				return
			}
			log.WaitEvent(t, serverapi.EventWriteTimeout, nil)
			if took, bound := time.Since(start), writeTimeout+5*time.Second; took > bound {
				t.Errorf("write_timeout after %v, want within %v", took, bound)
			}
		})
	}
}

// TestLentAnswersCountTowardMaxOutBytes: answers lent to the writer (an
// echo's payload, written from the request's memory) count toward
// MaxOutBytes with their payloads, as copied ones do. A client that
// sends echoes through the workers (a fault rule for a method never
// called keeps the reader from running them) and reads nothing is no
// longer read once the unwritten answers reach the limit, long before
// it sent answers worth several times the limit.
func TestLentAnswersCountTowardMaxOutBytes(t *testing.T) {
	for _, tt := range []struct {
		name string
		size int
	}{
		{"copied", 2000},   // under writevMin
		{"lent", 16 << 10}, // at least writevMin
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := server.DefaultConfig()
			cfg.MaxOutBytes = proto.MaxFrameLen + 4
			cfg.WriteTimeout = 200 * time.Millisecond
			srv, ln := servePipe(t, cfg, paths[1].faults...)

			// Answers worth 50 times the limit: even counting their
			// heads alone, the server would not stop reading before the
			// last request.
			sent := 50 * cfg.MaxOutBytes / tt.size
			payload := bytes.Repeat([]byte{'x'}, tt.size)
			wrote := sendUntilRefused(ln.dial(t), sent, bank.MethodEcho, payload)
			n := awaitRefused(t, wrote)
			if n >= sent {
				t.Errorf("server read all %d echoes of %d bytes of a client that reads nothing; want it to stop reading at MaxOutBytes", sent, tt.size)
			}
			if v := servertest.Counter(t, srv, "out_limit_waits"); v < 1 {
				t.Errorf("out_limit_waits = %d, want at least 1", v)
			}
			t.Logf("the hog got %d of %d echoes of %d bytes in before the server stopped reading", n, sent, tt.size)
		})
	}
}
