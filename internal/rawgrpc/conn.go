// Package rawgrpc is a gRPC client written on raw HTTP/2 frames, for
// judging gRPC servers: it sends what a well-behaved client never would
// (a deadline already past, a body after its deadline, a reset while the
// handler runs, a malformed frame, a message over any limit) and reports
// exactly what the server sent back.
package rawgrpc

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/rpcbench/rpcbench/internal/grpcwire"
)

// window is the flow-control window the client grants, per stream and
// for the connection: far more than any answer it waits for.
const window = 1 << 30

// ErrClosed is a Stream's error when its connection ended before the
// server ended the stream.
var ErrClosed = errors.New("rawgrpc: connection closed")

// Conn is one HTTP/2 connection to a server. Its methods may be called
// concurrently.
type Conn struct {
	nc net.Conn

	writeMu sync.Mutex // guards fr's writes, enc and encBuf, nextID
	fr      *http2.Framer
	enc     *hpack.Encoder
	encBuf  bytes.Buffer
	nextID  uint32

	mu      sync.Mutex // guards streams, goAway, err
	streams map[uint32]*Stream
	goAway  *GoAway
	err     error

	closed chan struct{} // closed when the reader has returned

	maxBody int // Options.MaxBody

	// settings is closed once the server's first SETTINGS came;
	// maxStreams is its SETTINGS_MAX_CONCURRENT_STREAMS then, and
	// hasMaxStreams whether it set one.
	settings      chan struct{}
	maxStreams    uint32
	hasMaxStreams bool
}

// MaxStreams waits for the server's first SETTINGS and returns its
// SETTINGS_MAX_CONCURRENT_STREAMS, and whether it set one (none: no
// limit).
func (c *Conn) MaxStreams(ctx context.Context) (n uint32, set bool, err error) {
	select {
	case <-c.settings:
		return c.maxStreams, c.hasMaxStreams, nil
	case <-c.closed:
		return 0, false, fmt.Errorf("rawgrpc: the connection closed before the server's SETTINGS")
	case <-ctx.Done():
		return 0, false, ctx.Err()
	}
}

// GoAway is a GOAWAY frame the server sent.
type GoAway struct {
	LastStreamID uint32
	Code         http2.ErrCode
	Debug        string
}

// Options tune Dial.
type Options struct {
	// ZeroWindow grants the server no flow-control window at all
	// (SETTINGS_INITIAL_WINDOW_SIZE 0, no WINDOW_UPDATE ever): its
	// answers' HEADERS come, their DATA never does. False grants a
	// window far larger than any answer.
	ZeroWindow bool
	// MaxBody, when above 0, bounds the DATA one stream may hold: a
	// stream whose server sends more ends at once, with BadBody saying
	// so, and is reset (CANCEL); what came past the bound is not kept.
	// 0 keeps all, for servers rpcbench runs itself.
	MaxBody int
}

// Dial connects to addr with prior knowledge of HTTP/2 (h2c), sends the
// preface and SETTINGS with a large window, and starts reading.
func Dial(ctx context.Context, addr string) (*Conn, error) {
	return DialOptions(ctx, addr, Options{})
}

// DialOptions is Dial with the window o says.
func DialOptions(ctx context.Context, addr string, o Options) (*Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("rawgrpc: %w", err)
	}
	c := &Conn{nc: nc, fr: http2.NewFramer(nc, nc), nextID: 1, streams: map[uint32]*Stream{}, closed: make(chan struct{}), maxBody: o.MaxBody,
		settings: make(chan struct{})}
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.fr.MaxHeaderListSize = 1 << 20
	c.enc = hpack.NewEncoder(&c.encBuf)
	if _, err := nc.Write([]byte(http2.ClientPreface)); err != nil {
		nc.Close()
		return nil, fmt.Errorf("rawgrpc: preface: %w", err)
	}
	if o.ZeroWindow {
		err = c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
	} else {
		err = c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: window - 1})
		if err == nil {
			err = c.fr.WriteWindowUpdate(0, window-65535)
		}
	}
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("rawgrpc: settings: %w", err)
	}
	go c.read()
	return c, nil
}

// Close closes the connection; every open stream ends with ErrClosed.
func (c *Conn) Close() error {
	err := c.nc.Close()
	<-c.closed
	return err
}

// LocalAddr is the connection's own address: the remote the server logs
// for it.
func (c *Conn) LocalAddr() string { return c.nc.LocalAddr().String() }

// Closed is closed once the connection has ended, by either side.
func (c *Conn) Closed() <-chan struct{} { return c.closed }

// GoAway returns the GOAWAY the server sent, or nil.
func (c *Conn) GoAway() *GoAway {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.goAway
}

// Request is one unary call as the client opens it.
type Request struct {
	// Method is the Bank method: "Get", "Debit" or "Echo".
	Method string
	// Path, when set, is the call's :path instead, for a method of any
	// service: "/pkg.Service/Method".
	Path string
	// Metadata are more header fields, sent as given after the ones
	// above (lower-case names, as HTTP/2 wants them).
	Metadata []hpack.HeaderField
	// Call is the x-rpcbench-call metadata; "" sends none.
	Call string
	// Timeout is the grpc-timeout header's value, verbatim; "" sends
	// none.
	Timeout string
	// Message is the request's protobuf encoding, sent as one
	// length-prefixed message with END_STREAM unless Hold is set.
	Message []byte
	// Hold sends only the HEADERS: the caller sends the body with
	// Stream.Send or Stream.SendRaw.
	Hold bool
}

// Open sends req's HEADERS (and, unless req.Hold, its message) on a new
// stream.
func (c *Conn) Open(req Request) (*Stream, error) {
	path := req.Path
	if path == "" {
		path = "/rpcbench.bank.v1.Bank/" + req.Method
	}
	fields := []hpack.HeaderField{
		{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: "http"},
		{Name: ":path", Value: path}, {Name: ":authority", Value: c.nc.RemoteAddr().String()},
		{Name: "content-type", Value: "application/grpc"}, {Name: "te", Value: "trailers"},
	}
	if req.Timeout != "" {
		fields = append(fields, hpack.HeaderField{Name: "grpc-timeout", Value: req.Timeout})
	}
	if req.Call != "" {
		fields = append(fields, hpack.HeaderField{Name: grpcwire.MetaCall, Value: req.Call})
	}
	fields = append(fields, req.Metadata...)
	c.writeMu.Lock()
	id := c.nextID
	c.nextID += 2
	st := &Stream{c: c, id: id, done: make(chan struct{}), hdrs: make(chan struct{})}
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		c.writeMu.Unlock()
		return nil, c.err
	}
	c.streams[id] = st
	c.mu.Unlock()
	c.encBuf.Reset()
	for _, f := range fields {
		c.enc.WriteField(f)
	}
	err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.encBuf.Bytes(), EndHeaders: true})
	c.writeMu.Unlock()
	if err != nil {
		return nil, c.writeErr("headers", err)
	}
	if !req.Hold {
		if err := st.Send(req.Message, true); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// writeErr is the error of a write of what that failed with err. A
// write to a connection already closed, by the peer (the reader closes
// it once the connection ends) or by Close, is the connection's own
// error, which wraps ErrClosed, once the reader has ended. The caller
// must not hold writeMu.
func (c *Conn) writeErr(what string, err error) error {
	if errors.Is(err, net.ErrClosed) {
		<-c.closed
		c.mu.Lock()
		defer c.mu.Unlock()
		return fmt.Errorf("rawgrpc: %s: %w", what, c.err)
	}
	return fmt.Errorf("rawgrpc: %s: %w", what, err)
}

// WriteFrame writes one frame of any type as given, valid or not.
func (c *Conn) WriteFrame(t http2.FrameType, flags http2.Flags, streamID uint32, payload []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	return c.fr.WriteRawFrame(t, flags, streamID, payload)
}

// read reads frames until the connection ends, then fails every open
// stream.
func (c *Conn) read() {
	defer close(c.closed)
	var err error
	for {
		var f http2.Frame
		if f, err = c.fr.ReadFrame(); err != nil {
			// A stream error (a malformed header field, say) ends that
			// stream alone, and the Framer reads on.
			var se http2.StreamError
			if errors.As(err, &se) {
				c.streamError(se)
				continue
			}
			break
		}
		c.frame(f)
	}
	c.nc.Close()
	c.mu.Lock()
	c.err = fmt.Errorf("%w: %v", ErrClosed, err)
	streams := c.streams
	c.streams = map[uint32]*Stream{}
	c.mu.Unlock()
	for _, st := range streams {
		st.end(func(r *Result) { r.ConnClosed = true })
	}
}

func (c *Conn) frame(f http2.Frame) {
	switch f := f.(type) {
	case *http2.SettingsFrame:
		if !f.IsAck() {
			select {
			case <-c.settings:
			default:
				// Only the reader writes these, before closing settings.
				c.maxStreams, c.hasMaxStreams = f.Value(http2.SettingMaxConcurrentStreams)
				close(c.settings)
			}
			c.writeMu.Lock()
			c.fr.WriteSettingsAck()
			c.writeMu.Unlock()
		}
	case *http2.PingFrame:
		if !f.IsAck() {
			c.writeMu.Lock()
			c.fr.WritePing(true, f.Data)
			c.writeMu.Unlock()
		}
	case *http2.GoAwayFrame:
		c.mu.Lock()
		c.goAway = &GoAway{LastStreamID: f.LastStreamID, Code: f.ErrCode, Debug: string(f.DebugData())}
		c.mu.Unlock()
	case *http2.MetaHeadersFrame:
		if st := c.stream(f.StreamID); st != nil {
			st.headers(f)
		}
	case *http2.DataFrame:
		if st := c.stream(f.StreamID); st != nil {
			st.data(f.Data(), f.StreamEnded())
		}
	case *http2.RSTStreamFrame:
		if st := c.stream(f.StreamID); st != nil {
			c.forget(st.id)
			st.end(func(r *Result) { r.Reset, r.WasReset = f.ErrCode, true })
		}
	}
}

// streamError ends the stream the server sent something malformed on,
// resetting it as the client must.
func (c *Conn) streamError(se http2.StreamError) {
	st := c.stream(se.StreamID)
	if st == nil {
		return
	}
	c.writeMu.Lock()
	c.fr.WriteRSTStream(se.StreamID, se.Code)
	c.writeMu.Unlock()
	c.forget(st.id)
	st.end(func(r *Result) { r.BadBody = "stream error: " + se.Error() })
}

func (c *Conn) stream(id uint32) *Stream {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.streams[id]
}

func (c *Conn) forget(id uint32) {
	c.mu.Lock()
	delete(c.streams, id)
	c.mu.Unlock()
}

// Stream is one call's stream.
type Stream struct {
	c  *Conn
	id uint32

	mu         sync.Mutex // guards res, body, ended and sawHeaders
	res        Result
	body       []byte // the DATA received, prefixes included
	ended      bool
	sawHeaders bool

	done chan struct{} // closed when the stream has ended
	hdrs chan struct{} // closed when the server's first HEADERS came
}

// Result is what the server sent on a stream, as it ended.
type Result struct {
	// HTTPStatus is the :status of the first HEADERS; 0 without one.
	HTTPStatus int
	// HasCode is set when grpc-status came (in trailers, or in a
	// trailers-only answer); Code and Message are then its values.
	HasCode bool
	Code    grpcwire.Code
	Message string
	// Messages are the length-prefixed messages the DATA frames held.
	Messages [][]byte
	// BadBody says why the DATA was not a sequence of whole messages.
	BadBody string
	// WasReset: the server reset the stream with Reset's code.
	WasReset bool
	Reset    http2.ErrCode
	// ConnClosed: the connection ended before the stream did.
	ConnClosed bool
	// At is when the stream ended.
	At time.Time
	// overBody is Options.MaxBody when the server sent more.
	overBody int
}

// Outcome is the result in one word for evidence: the grpc-status's
// name, RST_<code> or CONN_CLOSED.
func (r Result) Outcome() string {
	switch {
	case r.HasCode:
		return r.Code.String()
	case r.WasReset:
		return "RST_" + r.Reset.String()
	case r.ConnClosed:
		return "CONN_CLOSED"
	case r.HTTPStatus != 0 && r.HTTPStatus != 200:
		return "HTTP_" + strconv.Itoa(r.HTTPStatus)
	}
	return "NO_STATUS"
}

// ID is the stream's id.
func (st *Stream) ID() uint32 { return st.id }

// Send sends msg as one length-prefixed message, ending the stream's
// half when end is set.
func (st *Stream) Send(msg []byte, end bool) error {
	b := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	return st.SendRaw(append(b, msg...), end)
}

// SendRaw sends b as the stream's DATA, as given, in frames of at most
// 16384 bytes.
func (st *Stream) SendRaw(b []byte, end bool) error {
	c := st.c
	c.writeMu.Lock()
	var err error
	for {
		n := min(len(b), 16384)
		last := n == len(b)
		if err = c.fr.WriteData(st.id, end && last, b[:n]); err != nil {
			break
		}
		if b = b[n:]; last {
			break
		}
	}
	// Unlocked first: writeErr may wait for the reader, which writes
	// (SETTINGS and PING acknowledgements) under writeMu.
	c.writeMu.Unlock()
	if err != nil {
		return c.writeErr("data", err)
	}
	return nil
}

// Reset sends RST_STREAM with code; the stream then ends as reset by
// the client, with whatever the server had sent.
func (st *Stream) Reset(code http2.ErrCode) error {
	c := st.c
	c.writeMu.Lock()
	err := c.fr.WriteRSTStream(st.id, code)
	c.writeMu.Unlock()
	c.forget(st.id)
	st.end(func(*Result) {})
	return err
}

// Headers is closed once the server's first HEADERS on the stream has
// come: HEADERS are not flow-controlled, so they come even when the
// answer's DATA waits for a window the client never grants. When those
// HEADERS ended the stream (a trailers-only answer), Done is closed
// before Headers is.
func (st *Stream) Headers() <-chan struct{} { return st.hdrs }

// Done is closed once the stream has ended.
func (st *Stream) Done() <-chan struct{} { return st.done }

// Wait waits until the stream ends, or ctx does.
func (st *Stream) Wait(ctx context.Context) (Result, error) {
	select {
	case <-st.done:
	case <-ctx.Done():
		return Result{}, fmt.Errorf("rawgrpc: stream %d: %w", st.id, ctx.Err())
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.res, nil
}

func (st *Stream) headers(f *http2.MetaHeadersFrame) {
	st.mu.Lock()
	first := !st.sawHeaders
	st.sawHeaders = true
	if st.res.HTTPStatus == 0 {
		if s, err := strconv.Atoi(f.PseudoValue("status")); err == nil {
			st.res.HTTPStatus = s
		}
	}
	for _, hf := range f.RegularFields() {
		switch hf.Name {
		case "grpc-status":
			if n, err := strconv.ParseUint(hf.Value, 10, 32); err == nil {
				st.res.HasCode, st.res.Code = true, grpcwire.Code(n)
			}
		case "grpc-message":
			st.res.Message = hf.Value
		}
	}
	st.mu.Unlock()
	if f.StreamEnded() {
		st.c.forget(st.id)
		st.end(func(*Result) {})
	}
	if first {
		close(st.hdrs) // after end: a trailers-only answer is Done by then
	}
}

func (st *Stream) data(b []byte, end bool) {
	st.mu.Lock()
	if max := st.c.maxBody; max > 0 && len(st.body)+len(b) > max {
		st.mu.Unlock()
		st.c.forget(st.id)
		st.end(func(r *Result) { r.overBody = max })
		// Reset from a goroutine of its own: the reader must not wait
		// on a write to a peer that may not read.
		go st.Reset(http2.ErrCodeCancel)
		return
	}
	st.body = append(st.body, b...)
	st.mu.Unlock()
	if end {
		st.c.forget(st.id)
		st.end(func(*Result) {})
	}
}

// end ends the stream once, with set applied to its result.
func (st *Stream) end(set func(*Result)) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.ended {
		return
	}
	st.ended = true
	set(&st.res)
	st.res.At = time.Now()
	st.res.Messages, st.res.BadBody = splitMessages(st.body)
	if st.res.overBody > 0 {
		st.res.BadBody = fmt.Sprintf("the server sent over %d bytes of DATA on the stream, the bound", st.res.overBody)
	}
	close(st.done)
}

// splitMessages splits a stream's DATA into its length-prefixed
// messages.
func splitMessages(b []byte) (msgs [][]byte, bad string) {
	for len(b) > 0 {
		if len(b) < 5 {
			return msgs, fmt.Sprintf("%d bytes left, shorter than a message prefix", len(b))
		}
		n := binary.BigEndian.Uint32(b[1:5])
		if b[0] != 0 {
			return msgs, fmt.Sprintf("compressed flag %d", b[0])
		}
		if uint64(len(b)-5) < uint64(n) {
			return msgs, fmt.Sprintf("a message of %d bytes with %d left", n, len(b)-5)
		}
		msgs = append(msgs, b[5:5+n])
		b = b[5+n:]
	}
	return msgs, ""
}
