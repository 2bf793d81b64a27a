package grpcwire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// syncBuffer is a log sink the server writes from many goroutines.
type syncBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

// testServer is a Server on a loopback listener with an in-memory bank,
// logging EXEC events, closed when the test ends.
type testServer struct {
	*Server
	addr string
	log  *syncBuffer
}

func startServer(t *testing.T, faults ...string) *testServer {
	t.Helper()
	return startConfig(t, nil, faults...)
}

// startConfig is startServer with mod applied to the Config first.
func startConfig(t *testing.T, mod func(*Config), faults ...string) *testServer {
	t.Helper()
	buf := &syncBuffer{}
	lg := slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg := DefaultConfig()
	cfg.Log = lg
	cfg.Drain = 50 * time.Millisecond
	for _, f := range faults {
		ft, err := ParseFault(f)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Faults = append(cfg.Faults, ft)
	}
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(cfg, bank.New(bank.NewMemory(), lg))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return &testServer{Server: s, addr: ln.Addr().String(), log: buf}
}

// events returns the server's log so far, decoded as the harness
// decodes it, named name.
func (ts *testServer) events(t *testing.T, name string) []serverapi.Event {
	t.Helper()
	evs, err := serverapi.ReadEvents(bytes.NewReader(ts.log.bytes()))
	if err != nil {
		t.Fatalf("ReadEvents: %v\n%s", err, ts.log.bytes())
	}
	var out []serverapi.Event
	for _, e := range evs {
		if e.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// await waits until the server has logged an event named name, and
// returns the events of that name so far.
func (ts *testServer) await(t *testing.T, name string, timeout time.Duration) []serverapi.Event {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if evs := ts.events(t, name); len(evs) > 0 {
			return evs
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s event within %v", name, timeout)
		}
		time.Sleep(5 * time.Millisecond) // polling the log: no event to wait on
	}
}

// counters returns the server's counters as numbers.
func (ts *testServer) counters(t *testing.T) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for k, v := range ts.Counters() {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("counter %s=%q: %v", k, v, err)
		}
		out[k] = n
	}
	return out
}

// counter returns one of the server's counters.
func (ts *testServer) counter(t *testing.T, name string) int64 {
	t.Helper()
	return ts.counters(t)[name]
}

// awaitCounter waits until ok holds of the server's counters.
func (ts *testServer) awaitCounter(t *testing.T, ok func(map[string]int64) bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for !ok(ts.counters(t)) {
		if time.Now().After(deadline) {
			t.Fatalf("counters %v: the awaited condition did not hold within 2s", ts.counters(t))
		}
		time.Sleep(time.Millisecond) // polling the counters: no event to wait on
	}
}

// h2client is a raw HTTP/2 client on a Framer: it sends what a gRPC
// client sends and reports every frame the server sends, so that a test
// sees each fault's frames exactly.
type h2client struct {
	t      *testing.T
	nc     net.Conn
	fr     *http2.Framer
	enc    *hpack.Encoder
	hbuf   bytes.Buffer
	nextID uint32
	frames chan http2.Frame
	// err is the read error that ended the connection, set before
	// frames is closed.
	err error
	// kept holds the frames wait read for other streams than the one
	// it waited for, for a later wait on theirs: the server writes
	// each stream's frames in order, but not the streams in any order.
	kept map[uint32][]http2.Frame
}

// streamOf returns the stream of a frame wait looks at, 0 for another
// kind. It reads the field itself: Header() would read the whole
// FrameHeader, which the reader's next ReadFrame invalidates.
func streamOf(f http2.Frame) uint32 {
	switch f := f.(type) {
	case *http2.MetaHeadersFrame:
		return f.StreamID
	case *dataCopy:
		return f.StreamID
	case *http2.RSTStreamFrame:
		return f.StreamID
	}
	return 0
}

// next returns the next frame for stream id, a kept one first, or one
// of the connection's; ok is false once the connection has ended.
func (c *h2client) next(id uint32, deadline <-chan time.Time) (f http2.Frame, ok, timedOut bool) {
	for {
		if q := c.kept[id]; len(q) > 0 {
			c.kept[id] = q[1:]
			return q[0], true, false
		}
		select {
		case f, ok := <-c.frames:
			if !ok {
				return nil, false, false
			}
			if sid := streamOf(f); sid != 0 && sid != id {
				if c.kept == nil {
					c.kept = make(map[uint32][]http2.Frame)
				}
				c.kept[sid] = append(c.kept[sid], f)
				continue
			}
			return f, true, false
		case <-deadline:
			return nil, false, true
		}
	}
}

func dial(t *testing.T, addr string) *h2client {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	c := &h2client{t: t, nc: nc, nextID: 1, frames: make(chan http2.Frame, 100)}
	c.fr = http2.NewFramer(nc, nc)
	// What a client that sent no SETTINGS_MAX_FRAME_SIZE accepts.
	c.fr.SetMaxReadFrameSize(defaultMaxFrame)
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.enc = hpack.NewEncoder(&c.hbuf)
	if _, err := io.WriteString(nc, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	if err := c.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(c.frames)
		for {
			f, err := c.fr.ReadFrame()
			if err != nil {
				c.err = err
				return
			}
			// The Framer reuses nothing unless asked; DATA is copied
			// all the same, as its doc says it may be reused.
			if d, ok := f.(*http2.DataFrame); ok {
				cp := *d
				f = &dataCopy{DataFrame: &cp, data: bytes.Clone(d.Data())}
			}
			c.frames <- f
		}
	}()
	return c
}

// dataCopy is a DataFrame whose bytes the test owns.
type dataCopy struct {
	*http2.DataFrame
	data []byte
}

// md is a request's metadata, in order.
type md [][2]string

// send writes a request for path with message msg (nil sends a bodyless
// request) and metadata, and returns its stream id.
func (c *h2client) send(path string, msg []byte, meta md) uint32 {
	c.t.Helper()
	id := c.nextID
	c.nextID += 2
	c.hbuf.Reset()
	fields := md{{":method", "POST"}, {":scheme", "http"}, {":path", path}, {":authority", "test"},
		{"content-type", "application/grpc"}, {"te", "trailers"}}
	for _, f := range append(fields, meta...) {
		c.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.hbuf.Bytes(), EndHeaders: true, EndStream: msg == nil}); err != nil {
		c.t.Fatal(err)
	}
	// The message in DATA frames of at most the default SETTINGS_MAX_FRAME_SIZE.
	for data := frameMessage(msg); msg != nil; {
		n := min(len(data), defaultMaxFrame)
		if err := c.fr.WriteData(id, n == len(data), data[:n]); err != nil {
			c.t.Fatal(err)
		}
		if data = data[n:]; len(data) == 0 {
			break
		}
	}
	return id
}

// frameMessage puts the gRPC length prefix before msg.
func frameMessage(msg []byte) []byte {
	out := make([]byte, prefixLen, prefixLen+len(msg))
	binary.BigEndian.PutUint32(out[1:], uint32(len(msg)))
	return append(out, msg...)
}

// result is what the server sent on one stream, and to the connection.
type result struct {
	headers  []hpack.HeaderField // the first header block
	trailers []hpack.HeaderField // the second, or nil
	// trailersOnly: the one header block ended the stream.
	trailersOnly bool
	data         []byte
	dataFrames   int
	rst          *http2.ErrCode
	goaway       *http2.GoAwayFrame
	ended        bool  // END_STREAM seen
	connErr      error // the read error, when the connection ended
}

func (r *result) header(name string) string {
	for _, hs := range [][]hpack.HeaderField{r.headers, r.trailers} {
		for _, f := range hs {
			if f.Name == name {
				return f.Value
			}
		}
	}
	return ""
}

func (r *result) status() string { return r.header("grpc-status") }

// closedBy says how the connection ended: "eof", "reset" or "" (open).
func (r *result) closedBy() string {
	switch {
	case r.connErr == nil:
		return ""
	case errors.Is(r.connErr, io.EOF), errors.Is(r.connErr, io.ErrUnexpectedEOF):
		return "eof"
	case errors.Is(r.connErr, syscall.ECONNRESET):
		return "reset"
	}
	return r.connErr.Error()
}

// wait collects the frames for stream id until it ends (END_STREAM or
// RST_STREAM) and, when untilClose, until the connection ends; or until
// timeout.
func (c *h2client) wait(id uint32, untilClose bool, timeout time.Duration) result {
	c.t.Helper()
	var r result
	deadline := time.After(timeout)
	for {
		if (r.ended || r.rst != nil) && !untilClose {
			return r
		}
		f, ok, timedOut := c.next(id, deadline)
		if timedOut {
			return r
		}
		if !ok {
			r.connErr = c.err
			return r
		}
		{
			switch f := f.(type) {
			case *http2.MetaHeadersFrame:
				if f.StreamID != id {
					continue
				}
				if r.headers == nil {
					r.headers = f.Fields
					r.trailersOnly = f.StreamEnded()
				} else {
					r.trailers = f.Fields
				}
				r.ended = r.ended || f.StreamEnded()
			case *dataCopy:
				if f.StreamID != id {
					continue
				}
				r.data = append(r.data, f.data...)
				r.dataFrames++
				r.ended = r.ended || f.StreamEnded()
			case *http2.RSTStreamFrame:
				if f.StreamID == id {
					code := f.ErrCode
					r.rst = &code
				}
			case *http2.GoAwayFrame:
				r.goaway = f
			}
		}
	}
}

// Messages for the tests, encoded by hand as a generated client would.
func debitMsg(account string, amount int64) []byte {
	b := protowire.AppendTag(nil, fieldDebitAccount, protowire.BytesType)
	b = protowire.AppendString(b, account)
	b = protowire.AppendTag(b, fieldDebitAmount, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(amount))
}

func getMsg(account string) []byte {
	b := protowire.AppendTag(nil, fieldGetAccount, protowire.BytesType)
	return protowire.AppendString(b, account)
}

const (
	pathGet   = "/" + Service + "/Get"
	pathDebit = "/" + Service + "/Debit"
	pathEcho  = "/" + Service + "/Echo"
)

// replyFields decodes an AccountReply message (after its prefix) into
// "account=A balance=N ..." for comparison.
func replyText(t *testing.T, data []byte) string {
	t.Helper()
	if len(data) < prefixLen {
		t.Fatalf("reply %q shorter than its prefix", data)
	}
	b := data[prefixLen:]
	if n := binary.BigEndian.Uint32(data[1:]); int(n) != len(b) {
		t.Fatalf("reply prefix says %d bytes, %d follow", n, len(b))
	}
	var parts []string
	names := map[protowire.Number]string{1: "account", 2: "balance", 3: "exec", 4: "replayed", 5: "budget_ms"}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("reply: bad tag")
		}
		b = b[n:]
		switch typ {
		case protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			parts = append(parts, names[num]+"="+string(v))
			b = b[n:]
		case protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			parts = append(parts, names[num]+"="+strconv.FormatInt(int64(v), 10))
			b = b[n:]
		default:
			t.Fatalf("reply: wire type %d", typ)
		}
	}
	return strings.Join(parts, " ")
}
