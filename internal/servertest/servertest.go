// Package servertest is the shared harness for tests that drive an
// in-process rpcserver.
package servertest

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/server"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// WaitLimit bounds every wait for an event. It only guards against a hung
// test; nothing depends on its value.
const WaitLimit = 10 * time.Second

// New returns a server for cfg that serves a fresh in-memory bank, logging
// the bank's events to cfg.Log too. Fault texts are parsed with
// server.ParseFault and added to cfg.Faults. The caller serves and closes
// it; Start does both.
func New(t testing.TB, cfg server.Config, faults ...string) *server.Server {
	t.Helper()
	for _, s := range faults {
		f, err := server.ParseFault(s)
		if err != nil {
			t.Fatalf("ParseFault(%q): %v", s, err)
		}
		cfg.Faults = append(cfg.Faults, f)
	}
	srv, err := server.New(cfg, bank.New(bank.NewMemory(), cfg.Log))
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	return srv
}

// Start runs New's server on a free loopback port and returns it with its
// address. When the test ends it closes the server and checks that Serve
// returned server.ErrClosed.
func Start(t testing.TB, cfg server.Config, faults ...string) (*server.Server, string) {
	t.Helper()
	srv := New(t, cfg, faults...)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		t.Fatalf("listen: %v", err)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-errc; !errors.Is(err, server.ErrClosed) {
			t.Errorf("Serve returned %v, want %v", err, server.ErrClosed)
		}
	})
	return srv, ln.Addr().String()
}

// Counter returns the server's counter name; a name the server does not
// report fails the test.
func Counter(t testing.TB, srv *server.Server, name string) int64 {
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

// WaitCounter waits until the server's counter name reaches at least want.
func WaitCounter(t testing.TB, srv *server.Server, name string, want int64) {
	t.Helper()
	WaitFor(t, name+" >= "+strconv.FormatInt(want, 10), func() bool {
		return Counter(t, srv, name) >= want
	})
}

// WaitFor polls cond until it holds; it fails the test after WaitLimit.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	limit := time.Now().Add(WaitLimit)
	for !cond() {
		if time.Now().After(limit) {
			t.Fatalf("gave up after %v waiting for %s", WaitLimit, what)
		}
		time.Sleep(time.Millisecond)
	}
}

// Fields parses a response payload.
func Fields(t testing.TB, payload []byte) serverapi.Fields {
	t.Helper()
	fs, err := serverapi.ParseFields(payload)
	if err != nil {
		t.Fatalf("response payload %q: %v", payload, err)
	}
	return fs
}

// Request returns a request frame with a 5s budget and no key.
func Request(id uint64, method, payload string) proto.Frame {
	return proto.Frame{Type: proto.TypeRequest, ID: id, BudgetMs: 5000, Method: method, Payload: []byte(payload)}
}

// Encode returns the frames' encodings, back to back.
func Encode(t testing.TB, frames ...proto.Frame) []byte {
	t.Helper()
	var b []byte
	for i := range frames {
		var err error
		if b, err = proto.AppendFrame(b, &frames[i]); err != nil {
			t.Fatalf("AppendFrame(%+v): %v", frames[i], err)
		}
	}
	return b
}

// Conn speaks the wire format directly, so a test sees every frame the
// server sends whatever its timing, and can send bytes no Client would.
type Conn struct {
	t  testing.TB
	nc net.Conn
	fr *proto.FrameReader
}

// Dial connects to addr; the connection is closed when the test ends.
func Dial(t testing.TB, addr string) *Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	return NewConn(t, nc)
}

// NewConn wraps an open connection; it is closed when the test ends.
func NewConn(t testing.TB, nc net.Conn) *Conn {
	t.Cleanup(func() { nc.Close() })
	return &Conn{t: t, nc: nc, fr: proto.NewFrameReader(nc, proto.TypeResponse, 4096)}
}

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }

// Send encodes f and writes it.
func (c *Conn) Send(f proto.Frame) {
	c.t.Helper()
	c.SendBytes(Encode(c.t, f))
}

// SendBytes writes b as is.
func (c *Conn) SendBytes(b []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// Recv returns the next frame from the server. A read error, a bad frame
// or no frame within WaitLimit fails the test.
func (c *Conn) Recv() proto.Frame {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(WaitLimit))
	f, err := c.fr.ReadFrame()
	if err != nil {
		c.t.Fatalf("reading the server's frames: %v", err)
	}
	return f
}

// RecvByID returns the responses to the given request IDs, whatever order
// they arrive in.
func (c *Conn) RecvByID(ids ...uint64) map[uint64]proto.Frame {
	c.t.Helper()
	out := make(map[uint64]proto.Frame, len(ids))
	for len(out) < len(ids) {
		f := c.Recv()
		out[f.ID] = f
	}
	return out
}

// RecvUntilClosed returns every frame the server sends until it closes
// its side, with the error that ended the reading: io.EOF after a FIN.
// A bad frame, or no end within WaitLimit, fails the test.
func (c *Conn) RecvUntilClosed() ([]proto.Frame, error) {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(WaitLimit))
	var frames []proto.Frame
	for {
		f, err := c.fr.ReadFrame()
		if err == nil {
			frames = append(frames, f)
			continue
		}
		var ne net.Error
		var pe *proto.ProtocolError
		if errors.As(err, &ne) && ne.Timeout() || errors.As(err, &pe) {
			c.t.Fatalf("reading the server's frames until it closes: %v", err)
		}
		return frames, err
	}
}

// WaitClosed reads until the server closes the connection and returns the
// read error together with any bytes that arrived first. It reads the
// socket directly, so it must not follow a Recv that may have buffered
// bytes.
func (c *Conn) WaitClosed() ([]byte, error) {
	c.t.Helper()
	var extra []byte
	buf := make([]byte, 4096)
	c.nc.SetReadDeadline(time.Now().Add(WaitLimit))
	for {
		n, err := c.nc.Read(buf)
		extra = append(extra, buf[:n]...)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				c.t.Fatalf("connection still open after %v", WaitLimit)
			}
			return extra, err
		}
	}
}

// Log records a server's events as rpcserver writes them, one JSON line
// each, and decodes them with serverapi.ReadEvents, so a test reads the
// same contract a driving program does.
type Log struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

// Logger returns a logger that writes to l, for server.Config.Log.
func (l *Log) Logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// Write implements io.Writer. slog's handler writes each event in one
// call, so the buffer only ever holds whole lines.
func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// Events returns the events logged so far; a line ReadEvents rejects fails
// the test.
func (l *Log) Events(t testing.TB) []serverapi.Event {
	t.Helper()
	l.mu.Lock()
	text := bytes.Clone(l.buf.Bytes())
	l.mu.Unlock()
	evs, err := serverapi.ReadEvents(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("server log: %v", err)
	}
	return evs
}

// WaitEvent waits until an event named name for which match holds (nil
// matches any) has been logged, and returns it.
func (l *Log) WaitEvent(t testing.TB, name string, match func(serverapi.Event) bool) serverapi.Event {
	t.Helper()
	var found serverapi.Event
	WaitFor(t, "a "+name+" event", func() bool {
		for _, e := range l.Events(t) {
			if e.Name == name && (match == nil || match(e)) {
				found = e
				return true
			}
		}
		return false
	})
	return found
}
