package grpcwire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// HTTP/2's defaults (RFC 9113 §6.5.2), which hold on the send side until
// the client's SETTINGS say otherwise.
const (
	defaultWindow    = 65535
	defaultMaxFrame  = 16384
	maxWindow        = 1<<31 - 1
	prefixLen        = 5 // a gRPC message's compressed flag and length
	headerTableLimit = 4096
	// maxQueuedControl bounds the ops a connection queues that hold no
	// stream slot (PING and SETTINGS ACKs, window bookkeeping, refusals)
	// while its writer is blocked: past it, the peer is flooding and
	// its connection is reset. x/net's server's own bound.
	maxQueuedControl = 10000
)

// conn is one HTTP/2 connection: a reader goroutine that reads every
// frame, answers SETTINGS and PING itself and starts a goroutine per
// complete request; and a writer goroutine, the only one that writes to
// the socket and the only one that touches the HPACK encoder and the
// send windows.
type conn struct {
	s  *Server
	id uint64
	nc net.Conn
	fr *http2.Framer // read by the reader; written by the writer only
	bw *bufio.Writer // the Framer's output, flushed by the writer

	// rd is touched by the reader goroutine only.
	rd struct {
		maxID uint32 // the highest client stream id seen
	}
	// maxID is rd.maxID, for a connection error raised off the reader.
	maxID atomic.Uint32
	// control counts the queued ops that hold no stream slot and are
	// not yet done by the writer (op.control).
	control atomic.Int64

	mu sync.Mutex // guards streams, live, each stream's refs and wire, ops, closing, goaway
	// streams are the requests the reader is still reading: DATA for
	// them is theirs.
	streams map[uint32]*stream
	// live are the streams holding a MAX_CONCURRENT_STREAMS slot: from
	// their HEADERS until their goroutine (if any) has returned and the
	// writer has ended them on the wire (END_STREAM or RST_STREAM
	// written, or the client reset them). So both the goroutines and the
	// replies waiting for a send window are bounded by the slots.
	live map[uint32]*stream
	ops  []op // waiting for the writer
	// credit is the request bytes read and not yet credited with a
	// WINDOW_UPDATE on stream 0: one counter, however many DATA frames.
	credit int64
	// closing is set once a close is queued: later ops are dropped, and
	// no request starts executing.
	closing bool
	// silent is set by FaultSilent: later ops and credit are dropped,
	// so nothing more is written, while the reader goes on reading.
	silent bool
	// goaway, when set, is the last-stream-id of the GOAWAY sent:
	// HEADERS for a stream above it are ignored.
	goaway    uint32
	goawaySet bool

	wake      chan struct{} // capacity 1: the writer has ops
	closeOnce sync.Once
	done      chan struct{} // closed by close
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{
		s: s, id: s.connSeq.Add(1), nc: nc,
		streams: make(map[uint32]*stream),
		live:    make(map[uint32]*stream),
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	c.bw = bufio.NewWriterSize(nc, 32<<10)
	c.fr = http2.NewFramer(c.bw, nc)
	c.fr.SetMaxReadFrameSize(defaultMaxFrame)
	c.fr.MaxHeaderListSize = s.cfg.MaxHeaderListSize
	c.fr.ReadMetaHeaders = hpack.NewDecoder(headerTableLimit, nil)
	return c
}

// opKind is what the writer does with an op.
type opKind uint8

const (
	opSettings     opKind = iota + 1 // the server's SETTINGS
	opSettingsAck                    // ACK a client SETTINGS
	opPeerSettings                   // apply the client's SETTINGS to the send side
	opPingAck                        // answer a PING
	opWindow                         // the client's WINDOW_UPDATE: grow a send window
	opGoAway                         // send GOAWAY(last, code, debug)
	opHeaders                        // send a header block on a stream, END_STREAM when end
	opData                           // send a message on a stream, flow-controlled
	opRST                            // send RST_STREAM(code)
	opRaw                            // write raw bytes (a cut frame)
	opClose                          // close the connection: FIN or RST
	opForget                         // the stream is finished: drop its send window
)

// op is one thing for the writer to do. Ops on streams (opHeaders,
// opData, opRST, opRaw, opForget), opGoAway and opClose go out in the
// order they were queued; the others (SETTINGS and PING ACKs, window
// bookkeeping) are done at once, even while an opData waits
// for a send window.
type op struct {
	kind     opKind
	stream   uint32
	st       *stream // the stream's state, for ops on streams
	fields   []hpack.HeaderField
	end      bool
	data     []byte
	code     http2.ErrCode
	last     uint32
	ping     [8]byte
	settings []http2.Setting
	n        uint32
	rst      bool // opClose: with RST (SO_LINGER 0) instead of FIN
	// now, on a connection error's opGoAway (and the opClose queued
	// with it), drops the stream ops still waiting (for a send window,
	// maybe forever), so that the GOAWAY and the close go out at once.
	now bool
	// control is set by queue on an op that holds no stream slot: it
	// counts against maxQueuedControl until the writer is done with it.
	control bool
}

func (o *op) onStream() bool {
	switch o.kind {
	case opHeaders, opData, opRST, opRaw, opForget, opGoAway, opClose:
		return true
	}
	return false
}

// queue hands ops to the writer. Ops queued after a close are dropped.
// Past maxQueuedControl ops holding no stream slot, the connection is
// reset instead.
func (c *conn) queue(ops ...op) {
	c.mu.Lock()
	if c.closing || c.silent {
		c.mu.Unlock()
		return
	}
	flood := false
	for _, o := range ops {
		switch o.kind {
		case opGoAway, opClose, opSettings:
		default:
			if o.kind == opWindow || o.st == nil || !o.st.wire {
				o.control = true
				flood = c.control.Add(1) > maxQueuedControl || flood
			}
		}
		c.ops = append(c.ops, o)
		if o.kind == opClose {
			c.closing = true
			break
		}
	}
	c.mu.Unlock()
	c.wakeWriter()
	if flood {
		// The queue grew because the writer is blocked on a peer that
		// reads nothing: a GOAWAY(ENHANCE_YOUR_CALM) would wait behind
		// it for WriteTimeout. The connection is reset at once instead,
		// which also frees what the kernel holds for it.
		c.protocolError(fmt.Sprintf("grpcwire: more than %d control frames queued behind a blocked writer: connection reset (ENHANCE_YOUR_CALM)", maxQueuedControl))
		if tc := tcpConn(c.nc); tc != nil {
			tc.SetLinger(0)
		}
		c.close()
	}
}

// addCredit adds a DATA frame's length to the credit to send.
func (c *conn) addCredit(n uint32) {
	c.mu.Lock()
	if !c.silent {
		c.credit += int64(n)
	}
	c.mu.Unlock()
	c.wakeWriter()
}

func (c *conn) wakeWriter() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// silence has the connection write nothing more (FaultSilent): what is
// queued already still goes out, and later ops and credit are dropped.
func (c *conn) silence() {
	c.mu.Lock()
	c.silent = true
	c.mu.Unlock()
}

// closeWith queues ops, then a close of the connection with FIN or RST.
func (c *conn) closeWith(rst bool, ops ...op) {
	c.queue(append(ops, op{kind: opClose, rst: rst})...)
}

// close closes the socket once; the reader and the writer then end.
func (c *conn) close() {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closing = true
		c.ops = nil
		for _, st := range c.live {
			st.cancel()
		}
		c.mu.Unlock()
		close(c.done)
		c.nc.Close()
		c.s.forget(c)
		c.s.log.Info(serverapi.EventConnClosed, serverapi.KeyConn, c.id, serverapi.KeyRemote, c.nc.RemoteAddr().String(), serverapi.KeyWire, serverapi.WireGRPC)
	})
}

// protocolError logs and counts a malformed frame or request.
func (c *conn) protocolError(text string) {
	c.s.counters.protocolErrors.Add(1)
	c.s.log.Warn(serverapi.EventProtocolError, serverapi.KeyRemote, c.nc.RemoteAddr().String(), serverapi.KeyErr, text,
		serverapi.KeyConn, c.id, serverapi.KeyWire, serverapi.WireGRPC)
}

// connError answers a connection error: GOAWAY with the last stream the
// server took, then a close with FIN, both ahead of the stream ops still
// waiting, which are dropped.
func (c *conn) connError(code http2.ErrCode, text string) {
	c.protocolError(text)
	g := c.goAway(c.maxID.Load(), code, text)
	g.now = true
	c.queue(g, op{kind: opClose, now: true})
}

// goAway returns the op that sends GOAWAY(last, code), and from now on
// has the reader ignore HEADERS for streams above last, which the GOAWAY
// says will not be processed.
func (c *conn) goAway(last uint32, code http2.ErrCode, debug string) op {
	c.mu.Lock()
	if !c.goawaySet || last < c.goaway {
		c.goaway, c.goawaySet = last, true
	}
	c.mu.Unlock()
	return op{kind: opGoAway, last: last, code: code, data: []byte(debug)}
}

// streamError answers a stream error: RST_STREAM, the connection kept.
func (c *conn) streamError(id uint32, code http2.ErrCode, text string) {
	c.protocolError(text)
	c.mu.Lock()
	delete(c.streams, id)
	st := c.live[id]
	c.mu.Unlock()
	if st != nil {
		// Nothing more goes out on it, whatever its goroutine answers;
		// and its goroutine is told to stop.
		st.reset.Store(true)
		st.cancel()
	}
	c.queue(op{kind: opRST, stream: id, st: st, code: code})
}

func (c *conn) readLoop() {
	defer c.s.wg.Done()
	defer c.close()
	cfg := &c.s.cfg
	c.queue(op{kind: opSettings, settings: []http2.Setting{
		{ID: http2.SettingMaxConcurrentStreams, Val: cfg.MaxConcurrentStreams},
		{ID: http2.SettingMaxHeaderListSize, Val: cfg.MaxHeaderListSize},
	}})
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(c.nc, preface); err != nil {
		c.readError(err)
		return
	}
	if !bytes.Equal(preface, []byte(http2.ClientPreface)) {
		c.connError(http2.ErrCodeProtocol, "grpcwire: connection did not start with the HTTP/2 client preface")
		c.drain()
		return
	}
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			var se http2.StreamError
			var ce http2.ConnectionError
			switch {
			case errors.As(err, &se):
				c.streamError(se.StreamID, se.Code, "grpcwire: "+se.Error())
				continue
			case errors.As(err, &ce):
				c.connError(http2.ErrCode(ce), "grpcwire: "+c.errorText(err))
			case errors.Is(err, http2.ErrFrameTooLarge):
				c.connError(http2.ErrCodeFrameSize, "grpcwire: "+err.Error())
			default:
				c.readError(err)
				return
			}
			c.drain()
			return
		}
		if !c.handle(f) {
			c.drain()
			return
		}
	}
}

// errorText is a connection error's text, with the Framer's detail.
func (c *conn) errorText(err error) string {
	if d := c.fr.ErrorDetail(); d != nil {
		return err.Error() + ": " + d.Error()
	}
	return err.Error()
}

// readError logs a read that failed for another reason than a
// malformed frame: the peer went away, or the server closed the socket.
func (c *conn) readError(err error) {
	select {
	case <-c.done:
		return
	default:
	}
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		return
	}
	c.s.log.Warn(serverapi.EventConnReadError, serverapi.KeyRemote, c.nc.RemoteAddr().String(), serverapi.KeyErr, err.Error(),
		serverapi.KeyReset, errors.Is(err, syscall.ECONNRESET), serverapi.KeyConn, c.id, serverapi.KeyWire, serverapi.WireGRPC)
}

// drain keeps reading, discarding, until the connection is closed (the
// writer closes it Drain after a FIN) or the peer closes it.
func (c *conn) drain() {
	buf := make([]byte, 4096)
	for {
		if _, err := c.nc.Read(buf); err != nil {
			return
		}
	}
}

// handle acts on one frame; it returns false when the connection must
// close.
func (c *conn) handle(f http2.Frame) bool {
	switch f := f.(type) {
	case *http2.SettingsFrame:
		if f.IsAck() {
			return true
		}
		var settings []http2.Setting
		if err := f.ForeachSetting(func(s http2.Setting) error {
			if err := s.Valid(); err != nil {
				return err
			}
			settings = append(settings, s)
			return nil
		}); err != nil {
			var ce http2.ConnectionError
			code := http2.ErrCodeProtocol
			if errors.As(err, &ce) {
				code = http2.ErrCode(ce)
			}
			c.connError(code, "grpcwire: SETTINGS: "+err.Error())
			return false
		}
		c.queue(op{kind: opPeerSettings, settings: settings}, op{kind: opSettingsAck})
	case *http2.PingFrame:
		if !f.IsAck() {
			c.queue(op{kind: opPingAck, ping: f.Data})
		}
	case *http2.WindowUpdateFrame:
		id := f.StreamID
		if id == 0 {
			c.queue(op{kind: opWindow, n: f.Increment})
			return true
		}
		if id > c.rd.maxID {
			c.connError(http2.ErrCodeProtocol, "grpcwire: WINDOW_UPDATE on idle stream")
			return false
		}
		c.mu.Lock()
		st := c.live[id]
		c.mu.Unlock()
		if st != nil { // a closed stream's is ignored (RFC 9113 §6.9)
			c.queue(op{kind: opWindow, stream: id, st: st, n: f.Increment})
		}
	case *http2.MetaHeadersFrame:
		return c.headers(f)
	case *http2.DataFrame:
		return c.data(f)
	case *http2.RSTStreamFrame:
		c.mu.Lock()
		delete(c.streams, f.StreamID)
		st := c.live[f.StreamID]
		c.mu.Unlock()
		if f.StreamID > c.rd.maxID {
			c.connError(http2.ErrCodeProtocol, "grpcwire: RST_STREAM on idle stream")
			return false
		}
		if st != nil {
			st.reset.Store(true)
			st.cancel()
			if !st.answered.Load() {
				c.s.counters.canceled.Add(1)
			}
		}
		c.s.log.Info(serverapi.EventStreamReset, serverapi.KeyWire, serverapi.WireGRPC, serverapi.KeyConn, c.id,
			serverapi.KeyStream, f.StreamID, serverapi.KeyCode, f.ErrCode.String())
		c.queue(op{kind: opForget, stream: f.StreamID, st: st})
	case *http2.GoAwayFrame:
		c.s.log.Info(serverapi.EventGoAwayReceived, serverapi.KeyWire, serverapi.WireGRPC, serverapi.KeyConn, c.id,
			serverapi.KeyCode, f.ErrCode.String())
	case *http2.PushPromiseFrame:
		c.connError(http2.ErrCodeProtocol, "grpcwire: PUSH_PROMISE from a client")
		return false
	}
	// PRIORITY and unknown frame types are ignored (RFC 9113 §5.5).
	return true
}

// headers starts a stream for a request's HEADERS.
func (c *conn) headers(f *http2.MetaHeadersFrame) bool {
	id := f.StreamID
	c.mu.Lock()
	_, open := c.streams[id]
	// Above a GOAWAY sent, or once a close is queued, a request would
	// execute unanswered: it is not processed.
	above := c.goawaySet && id > c.goaway || c.closing
	c.mu.Unlock()
	switch {
	case open:
		// A unary client sends no trailers.
		c.streamError(id, http2.ErrCodeProtocol, "grpcwire: a second HEADERS on a request stream")
		return true
	case id%2 == 0:
		c.connError(http2.ErrCodeProtocol, "grpcwire: HEADERS on an even stream id")
		return false
	case id <= c.rd.maxID:
		c.connError(http2.ErrCodeStreamClosed, "grpcwire: HEADERS on a closed stream")
		return false
	}
	c.rd.maxID = id
	c.maxID.Store(id)
	if above {
		return true // the GOAWAY or the close says it will not be processed
	}
	if f.Truncated {
		c.streamError(id, http2.ErrCodeProtocol, "grpcwire: header list over MaxHeaderListSize")
		return true
	}
	st := c.newStream(f)
	if st == nil {
		return true
	}
	if f.StreamEnded() {
		st.finish()
	}
	return true
}

// data adds a DATA frame to its stream's message.
func (c *conn) data(f *http2.DataFrame) bool {
	if n := f.Header().Length; n > 0 {
		// Credit the connection window at once, padding included, so
		// that the client never stalls on it; the stream windows are
		// never drained by a unary request within MaxMessageLen.
		c.addCredit(n)
	}
	id := f.StreamID
	if id > c.rd.maxID {
		c.connError(http2.ErrCodeProtocol, "grpcwire: DATA on idle stream")
		return false
	}
	c.mu.Lock()
	st := c.streams[id]
	c.mu.Unlock()
	if st == nil {
		// Answered, reset or refused already: the client may still be
		// sending.
		return true
	}
	if st.ended {
		c.streamError(id, http2.ErrCodeStreamClosed, "grpcwire: DATA after END_STREAM")
		return true
	}
	st.add(f.Data())
	if f.StreamEnded() {
		st.finish()
	}
	return true
}

// peerWindowDelta is how much a new INITIAL_WINDOW_SIZE moves the send
// windows of open streams.
func peerWindowDelta(old, now uint32) int64 { return int64(now) - int64(old) }

// writeLoop is the writer goroutine.
func (c *conn) writeLoop() {
	defer c.s.wg.Done()
	defer c.close()
	w := writer{
		c: c, connWin: defaultWindow, initWin: defaultWindow, maxFrame: defaultMaxFrame,
		win: make(map[uint32]int64),
	}
	w.enc = hpack.NewEncoder(&w.hbuf)
	for {
		select {
		case <-c.wake:
		case <-c.done:
			return
		}
		c.mu.Lock()
		ops, credit := c.ops, c.credit
		c.ops, c.credit = nil, 0
		c.mu.Unlock()
		if err := w.batch(ops, credit); err != nil {
			w.failed(err)
			return
		}
		if w.closeNow != nil {
			w.closeNow()
			return
		}
	}
}

// batch performs ops, sends credit for the request bytes read, and
// flushes. Any Write to bw may reach the socket
// (bufio writes through once a batch outgrows its buffer), so the write
// deadline is set before the first one: each batch has WriteTimeout,
// however long the connection was idle before it.
func (w *writer) batch(ops []op, credit int64) error {
	if err := w.c.nc.SetWriteDeadline(time.Now().Add(w.c.s.cfg.WriteTimeout)); err != nil {
		return err
	}
	for i := range ops {
		if w.closeNow != nil {
			break // nothing is written after a close
		}
		if ops[i].now && ops[i].kind == opGoAway {
			w.pending = w.pending[:0] // the close follows it
		}
		if ops[i].onStream() {
			w.pending = append(w.pending, ops[i])
			continue
		}
		if err := w.do(&ops[i]); err != nil {
			return err
		}
		w.done(&ops[i])
	}
	// The credit goes after the ops: the connection's first batch holds
	// the server's SETTINGS, which must be its first frame (RFC 9113
	// 3.4), and a client's DATA may already be credited by then.
	for credit > 0 && w.closeNow == nil {
		n := min(credit, maxWindow)
		if err := w.c.fr.WriteWindowUpdate(0, uint32(n)); err != nil {
			return err
		}
		w.frames++
		credit -= n
	}
	if err := w.drainPending(); err != nil {
		return err
	}
	return w.flush()
}

// failed logs a write that failed because the peer accepted nothing for
// WriteTimeout. Other failures (the peer reset the connection, the
// server closed it) are the reader's to see.
func (w *writer) failed(err error) {
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return
	}
	select {
	case <-w.c.done:
		return
	default:
	}
	c := w.c
	c.s.counters.writeTimeouts.Add(1)
	c.s.log.Warn(serverapi.EventWriteTimeout, serverapi.KeyRemote, c.nc.RemoteAddr().String(),
		serverapi.KeyUnwritten, c.bw.Buffered(), serverapi.KeyTimeout, c.s.cfg.WriteTimeout.String(), serverapi.KeyErr, err.Error(),
		serverapi.KeyConn, c.id, serverapi.KeyWire, serverapi.WireGRPC)
}

// flowError answers a connection FLOW_CONTROL_ERROR the writer finds: it
// drops the stream ops waiting, writes GOAWAY and has the connection
// closed after the flush.
func (w *writer) flowError(text string) error {
	c := w.c
	c.protocolError(text)
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	g := c.goAway(c.maxID.Load(), http2.ErrCodeFlowControl, text)
	w.pending = w.pending[:0]
	if err := c.fr.WriteGoAway(g.last, g.code, g.data); err != nil {
		return err
	}
	w.frames++
	w.closeNow = func() { c.shut(false) }
	return nil
}

// done is called once the writer has performed or dropped o.
func (w *writer) done(o *op) {
	if o.control {
		w.c.control.Add(-1)
	}
}

// writer is the writer goroutine's state.
type writer struct {
	c        *conn
	enc      *hpack.Encoder
	hbuf     bytes.Buffer
	connWin  int64            // the client's connection receive window
	win      map[uint32]int64 // each stream's, once known
	initWin  uint32           // the client's SETTINGS_INITIAL_WINDOW_SIZE
	maxFrame uint32           // the client's SETTINGS_MAX_FRAME_SIZE
	pending  []op             // stream ops in order, the first maybe waiting for a window
	frames   int64            // frames written since the last flush
	closeNow func()           // set by opClose: what closes the socket after the flush
}

// do performs a connection-level op; an error means the connection
// must close now.
func (w *writer) do(o *op) error {
	fr := w.c.fr
	var err error
	switch o.kind {
	case opSettings:
		err = fr.WriteSettings(o.settings...)
	case opSettingsAck:
		err = fr.WriteSettingsAck()
	case opPeerSettings:
		for _, s := range o.settings {
			switch s.ID {
			case http2.SettingInitialWindowSize:
				d := peerWindowDelta(w.initWin, s.Val)
				for id := range w.win {
					if w.win[id]+d > maxWindow {
						return w.flowError(fmt.Sprintf("grpcwire: SETTINGS_INITIAL_WINDOW_SIZE %d takes stream %d's send window past 2^31-1", s.Val, id))
					}
				}
				for id := range w.win {
					w.win[id] += d
				}
				w.initWin = s.Val
			case http2.SettingMaxFrameSize:
				w.maxFrame = s.Val
			case http2.SettingHeaderTableSize:
				w.enc.SetMaxDynamicTableSizeLimit(min(s.Val, headerTableLimit))
			}
		}
		return nil
	case opPingAck:
		err = fr.WritePing(true, o.ping)
	case opWindow:
		if o.stream == 0 {
			if w.connWin+int64(o.n) > maxWindow {
				return w.flowError("grpcwire: WINDOW_UPDATE takes the connection's send window past 2^31-1")
			}
			w.connWin += int64(o.n)
			return nil
		}
		if o.st.wEnded {
			return nil // closed meanwhile: ignored
		}
		v := w.window(o.stream) + int64(o.n)
		if v <= maxWindow {
			w.win[o.stream] = v
			return nil
		}
		// A stream error: nothing more goes out on the stream, and its
		// goroutine is told to stop.
		w.c.protocolError(fmt.Sprintf("grpcwire: WINDOW_UPDATE takes stream %d's send window past 2^31-1", o.stream))
		o.st.reset.Store(true)
		o.st.cancel()
		delete(w.win, o.stream)
		o.st.wEnded = true
		o.st.wireDone()
		err = fr.WriteRSTStream(o.stream, http2.ErrCodeFlowControl)
	}
	if err != nil {
		return err
	}
	w.frames++
	return nil
}

// window returns a stream's send window, creating it at the client's
// initial size.
func (w *writer) window(id uint32) int64 {
	v, ok := w.win[id]
	if !ok {
		v = int64(w.initWin)
		w.win[id] = v
	}
	return v
}

// drainPending writes the pending stream ops in order until one waits
// for a send window; an error means the connection must close.
func (w *writer) drainPending() error {
	for len(w.pending) > 0 && w.closeNow == nil {
		o := &w.pending[0]
		if o.st != nil && o.st.reset.Load() && o.kind != opForget {
			// The client reset the stream: it wants nothing more on it.
			w.done(o)
			w.pending = w.pending[1:]
			continue
		}
		done, err := w.doStream(o)
		if err != nil {
			return err
		}
		if !done {
			return nil
		}
		if o.st != nil && (o.end && (o.kind == opHeaders || o.kind == opData) || o.kind == opRST || o.kind == opForget) {
			o.st.wEnded = true
			o.st.wireDone()
		}
		w.done(o)
		w.pending = w.pending[1:]
	}
	return nil
}

// doStream performs a stream op, or as much of an opData as the windows
// allow; it reports whether the op is done.
func (w *writer) doStream(o *op) (bool, error) {
	fr := w.c.fr
	switch o.kind {
	case opHeaders:
		w.hbuf.Reset()
		for _, f := range o.fields {
			if err := w.enc.WriteField(f); err != nil {
				return false, err
			}
		}
		block := w.hbuf.Bytes()
		first := true
		for first || len(block) > 0 {
			chunk := block[:min(len(block), int(w.maxFrame))]
			block = block[len(chunk):]
			var err error
			if first {
				err = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: o.stream, BlockFragment: chunk, EndStream: o.end, EndHeaders: len(block) == 0})
			} else {
				err = fr.WriteContinuation(o.stream, len(block) == 0, chunk)
			}
			if err != nil {
				return false, err
			}
			w.frames++
			first = false
		}
		if o.end {
			delete(w.win, o.stream)
		}
		return true, nil
	case opData:
		for len(o.data) > 0 || o.end {
			n := min(int64(len(o.data)), int64(w.maxFrame), w.connWin, w.window(o.stream))
			if n <= 0 && len(o.data) > 0 {
				return false, nil
			}
			end := o.end && int(n) == len(o.data)
			if err := fr.WriteData(o.stream, end, o.data[:n]); err != nil {
				return false, err
			}
			w.frames++
			w.connWin -= n
			w.win[o.stream] -= n
			o.data = o.data[n:]
			if end {
				delete(w.win, o.stream)
				break
			}
		}
		return true, nil
	case opRST:
		delete(w.win, o.stream)
		if err := fr.WriteRSTStream(o.stream, o.code); err != nil {
			return false, err
		}
		w.frames++
		return true, nil
	case opRaw:
		_, err := w.c.bw.Write(o.data)
		return true, err
	case opForget:
		delete(w.win, o.stream)
		return true, nil
	case opGoAway:
		if err := fr.WriteGoAway(o.last, o.code, o.data); err != nil {
			return false, err
		}
		w.frames++
		return true, nil
	case opClose:
		rst := o.rst
		w.closeNow = func() { w.c.shut(rst) }
		// Nothing is written after a close: ops behind it are dropped.
		w.pending = w.pending[:1]
		return true, nil
	}
	return true, nil
}

func (w *writer) flush() error {
	if w.c.bw.Buffered() == 0 {
		return nil
	}
	if err := w.c.bw.Flush(); err != nil {
		return err
	}
	w.c.s.counters.framesSent.Add(w.frames)
	w.frames = 0
	return nil
}

// shut closes the socket as an injected close: with RST (SO_LINGER 0),
// or with FIN (CloseWrite, then Drain of reading, then Close), so that
// unread bytes do not turn the FIN into a RST.
func (c *conn) shut(rst bool) {
	c.s.log.Info(serverapi.EventConnCloseInjected, serverapi.KeyRemote, c.nc.RemoteAddr().String(), serverapi.KeyConn, c.id,
		serverapi.KeyWire, serverapi.WireGRPC, serverapi.KeyReset, rst)
	tc := tcpConn(c.nc)
	if rst {
		if tc != nil {
			tc.SetLinger(0)
		}
		c.close()
		return
	}
	if tc == nil {
		c.close()
		return
	}
	tc.CloseWrite()
	t := time.NewTimer(c.s.cfg.Drain)
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.done:
	}
	c.close()
}

// tcpConn returns nc as a *net.TCPConn, or nil.
func tcpConn(nc net.Conn) *net.TCPConn {
	tc, _ := nc.(*net.TCPConn)
	return tc
}

// percentEncode encodes a grpc-message value (PROTOCOL-HTTP2.md): bytes
// outside 0x20-0x7E, and '%', become %XX.
func percentEncode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch < 0x20 || ch > 0x7e || ch == '%' {
			const hex = "0123456789ABCDEF"
			b.WriteByte('%')
			b.WriteByte(hex[ch>>4])
			b.WriteByte(hex[ch&0xf])
			continue
		}
		b.WriteByte(ch)
	}
	return b.String()
}
