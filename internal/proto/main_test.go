package proto_test

import (
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/rpcbench/rpcbench/internal/proto"
)

// TestMain fails the package if any test leaves a goroutine behind: every
// server and client a test starts must be closed by the time it ends.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// waitLimit bounds every wait for an event. It only guards against a hung
// test; nothing depends on its value.
const waitLimit = 10 * time.Second

// startServer runs an in-process server on a free loopback port and closes
// it when the test ends. Fault texts are parsed with ParseFault.
func startServer(t *testing.T, cfg proto.ServerConfig, faults ...string) (*proto.Server, string) {
	t.Helper()
	for _, s := range faults {
		f, err := proto.ParseFault(s)
		if err != nil {
			t.Fatalf("ParseFault(%q): %v", s, err)
		}
		cfg.Faults = append(cfg.Faults, f)
	}
	srv, err := proto.NewServer(cfg)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		t.Fatalf("listen: %v", err)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-errc; !errors.Is(err, proto.ErrServerClosed) {
			t.Errorf("Serve returned %v, want %v", err, proto.ErrServerClosed)
		}
	})
	return srv, ln.Addr().String()
}

// testConfig is DefaultConfig without jitter and with an attempt timeout
// long enough that a healthy local answer never times out, even under the
// race detector on a loaded machine.
func testConfig() proto.Config {
	cfg := proto.DefaultConfig()
	cfg.Jitter = 0
	cfg.AttemptTimeout = 2 * time.Second
	cfg.Deadline = 5 * time.Second
	return cfg
}

func newClient(t *testing.T, addr string, cfg proto.Config) *proto.Client {
	t.Helper()
	c, err := proto.NewClient(addr, cfg)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// counter returns one of the server's counters.
func counter(t *testing.T, srv *proto.Server, name string) int64 {
	t.Helper()
	v, ok := srv.Counters()[name]
	if !ok {
		t.Fatalf("server has no counter %q", name)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("counter %s=%q: %v", name, v, err)
	}
	return n
}

// waitCounter waits until the named counter reaches at least want.
func waitCounter(t *testing.T, srv *proto.Server, name string, want int64) {
	t.Helper()
	waitFor(t, name+" >= "+strconv.FormatInt(want, 10), func() bool {
		return counter(t, srv, name) >= want
	})
}

// waitFor polls cond until it holds; it fails the test after waitLimit.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	limit := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(limit) {
			t.Fatalf("gave up after %v waiting for %s", waitLimit, what)
		}
		time.Sleep(time.Millisecond)
	}
}

// fields parses a response payload.
func fields(t *testing.T, payload []byte) proto.Fields {
	t.Helper()
	fs, err := proto.ParseFields(payload)
	if err != nil {
		t.Fatalf("response payload %q: %v", payload, err)
	}
	return fs
}

// rawConn speaks the wire format directly, so a test sees every frame the
// server sends whatever its timing, and can send bytes no Client would.
type rawConn struct {
	t   *testing.T
	nc  net.Conn
	dec proto.Decoder
	got []proto.Frame // decoded, not yet returned by recv
	buf []byte
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, buf: make([]byte, 4096)}
}

func (r *rawConn) send(f proto.Frame) {
	r.t.Helper()
	b, err := proto.AppendFrame(nil, &f)
	if err != nil {
		r.t.Fatalf("AppendFrame: %v", err)
	}
	r.sendBytes(b)
}

func (r *rawConn) sendBytes(b []byte) {
	r.t.Helper()
	if _, err := r.nc.Write(b); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

// recv returns the next frame from the server.
func (r *rawConn) recv() proto.Frame {
	r.t.Helper()
	for len(r.got) == 0 {
		r.nc.SetReadDeadline(time.Now().Add(waitLimit))
		n, err := r.nc.Read(r.buf)
		frames, derr := r.dec.Feed(r.buf[:n])
		r.got = append(r.got, frames...)
		if derr != nil {
			r.t.Fatalf("decoding server bytes: %v", derr)
		}
		if err != nil && len(r.got) == 0 {
			r.t.Fatalf("read: %v", err)
		}
	}
	f := r.got[0]
	r.got = r.got[1:]
	return f
}

// recvByID returns the responses to the given request IDs, whatever order
// they arrive in.
func (r *rawConn) recvByID(ids ...uint64) map[uint64]proto.Frame {
	r.t.Helper()
	out := make(map[uint64]proto.Frame, len(ids))
	for len(out) < len(ids) {
		f := r.recv()
		out[f.ID] = f
	}
	return out
}

// waitClosed reads until the server closes the connection and returns the
// read error together with any bytes that arrived first.
func (r *rawConn) waitClosed() ([]byte, error) {
	r.t.Helper()
	var extra []byte
	r.nc.SetReadDeadline(time.Now().Add(waitLimit))
	for {
		n, err := r.nc.Read(r.buf)
		extra = append(extra, r.buf[:n]...)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				r.t.Fatalf("connection still open after %v", waitLimit)
			}
			return extra, err
		}
	}
}

func request(id uint64, method, payload string) proto.Frame {
	return proto.Frame{Type: proto.TypeRequest, ID: id, BudgetMs: 5000, Method: method, Payload: []byte(payload)}
}
