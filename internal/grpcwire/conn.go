package grpcwire

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
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
	// closeGrace bounds how long the GOAWAY of a connection error or a
	// flood verdict may take to be written (and whatever write the
	// writer is blocked in meanwhile): a peer that reads nothing would
	// otherwise hold the connection for WriteTimeout. Past it the
	// connection is reset.
	closeGrace = 100 * time.Millisecond
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
	fw *frameWatch   // the Framer's input: nc, watched (framewatch.go)
	// guard holds the log and reset budgets (logbudget.go).
	guard guard

	// rd is touched by the reader goroutine only.
	rd struct {
		maxID  uint32          // the highest client stream id seen
		remote map[uint32]half // the streams whose client half is open (remote.go)
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
	// draining is set by Server.Drain: the connection closes (FIN) once
	// no stream is live and none is being taken (taking: HEADERS the
	// reader has taken and newStream has not yet made live).
	draining bool
	taking   int
	// outBytes is the DATA bytes of answers queued and not yet written
	// (Config.MaxOutBytes), also counted in Server.outTotal; outDone is
	// set once close has taken them out of outTotal.
	outBytes int64
	outDone  bool
	// hurry, once set (hasten), gives each later batch of the writer
	// closeGrace instead of WriteTimeout.
	hurry bool

	// stopRead tells the reader to stop parsing frames: a flood verdict
	// closes the connection.
	stopRead atomic.Bool

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
	c.fw = newFrameWatch(nc, s.cfg.ReadTimeout)
	c.fr = http2.NewFramer(c.bw, c.fw)
	c.fr.SetMaxReadFrameSize(defaultMaxFrame)
	c.fr.MaxHeaderListSize = s.cfg.MaxHeaderListSize
	c.fr.ReadMetaHeaders = hpack.NewDecoder(headerTableLimit, nil)
	return c
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
		c.outDone = true
		c.s.outTotal.Add(-c.outBytes)
		c.outBytes = 0
		for _, st := range c.live {
			st.cancel()
		}
		c.mu.Unlock()
		close(c.done)
		c.nc.Close()
		c.s.forget(c)
		c.suppressedAtClose()
		c.s.log.Info(serverapi.EventConnClosed, serverapi.KeyConn, c.id, serverapi.KeyRemote, c.nc.RemoteAddr().String(), serverapi.KeyWire, serverapi.WireGRPC)
	})
}

// protocolError logs and counts a malformed frame or request.
func (c *conn) protocolError(text string) {
	c.s.counters.protocolErrors.Add(1)
	c.diag(slog.LevelWarn, serverapi.EventProtocolError, serverapi.KeyRemote, c.nc.RemoteAddr().String(), serverapi.KeyErr, text,
		serverapi.KeyConn, c.id, serverapi.KeyWire, serverapi.WireGRPC)
}

// connError answers a connection error: GOAWAY with the last stream the
// server took, then a close with FIN, both ahead of the stream ops still
// waiting, which are dropped.
func (c *conn) connError(code http2.ErrCode, text string) {
	c.closingError(text)
	g := c.goAway(c.maxID.Load(), code, text)
	g.now = true
	c.queue(g, op{kind: opClose, now: true})
	c.hasten()
}

// calm answers a flood verdict (ENHANCE_YOUR_CALM): the reader stops
// parsing; GOAWAY(ENHANCE_YOUR_CALM) and a close go out ahead of
// whatever waits, even when a close was queued already; and if they
// cannot be written within closeGrace, because the peer reads nothing,
// the connection is reset. Counted calm_closes, once per connection.
func (c *conn) calm(text string) {
	if c.stopRead.Swap(true) {
		return // judged already
	}
	c.s.counters.calmCloses.Add(1)
	c.closingError(text)
	g := c.goAway(c.maxID.Load(), http2.ErrCodeEnhanceYourCalm, text)
	g.now = true
	c.mu.Lock()
	silent := c.silent
	if !silent {
		c.ops = append(c.ops, g, op{kind: opClose, now: true})
	}
	c.closing = true
	c.mu.Unlock()
	if silent { // nothing may be written: reset at once
		c.reset()
		return
	}
	c.hasten()
	c.wakeWriter()
}

// hasten gives the writer closeGrace, instead of WriteTimeout, for the
// write it may be blocked in (from now) and for each later batch (from
// its start, so that a writer slow to be scheduled is not reset): a
// failure to meet it resets the connection (writer.failed).
func (c *conn) hasten() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hurry {
		return
	}
	c.hurry = true
	c.nc.SetWriteDeadline(time.Now().Add(c.batchTimeout()))
}

// batchTimeout is the time a batch of the writer has; the caller holds
// c.mu.
func (c *conn) batchTimeout() time.Duration {
	if c.hurry {
		return min(closeGrace, c.s.cfg.WriteTimeout)
	}
	return c.s.cfg.WriteTimeout
}

// hurried reports whether hasten was called.
func (c *conn) hurried() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hurry
}

// reset closes the connection with RST (SO_LINGER 0), which also frees
// at once what the kernel holds for it.
func (c *conn) reset() {
	if tc := tcpConn(c.nc); tc != nil {
		tc.SetLinger(0)
	}
	c.close()
}

// queueData counts an answer's DATA bytes as queued; the caller holds
// c.mu and queues them.
func (c *conn) queueData(n int) {
	c.outBytes += int64(n)
	c.s.outTotal.Add(int64(n))
}

// sent uncounts n DATA bytes the writer has written or dropped.
func (c *conn) sent(n int) {
	if n == 0 {
		return
	}
	c.mu.Lock()
	if !c.outDone {
		c.outBytes -= int64(n)
		c.s.outTotal.Add(-int64(n))
	}
	c.mu.Unlock()
}

// outLimit returns the limit that refuses a new request on the
// connection now, by its LIMIT name, or "".
func (c *conn) outLimit() string {
	c.mu.Lock()
	out := c.outBytes
	c.mu.Unlock()
	switch {
	case out >= c.s.cfg.MaxOutBytes:
		return limitOutBytes
	case c.s.outTotal.Load() >= c.s.cfg.MaxOutTotal:
		return limitOutTotal
	}
	return ""
}

// refuse answers a stream a limit refuses, unexecuted:
// RST_STREAM(REFUSED_STREAM), counted unavailable and streams_refused,
// and LIMIT. st is nil for a stream that holds no slot.
func (c *conn) refuse(id uint32, st *stream, limit string) {
	c.queue(op{kind: opRST, stream: id, st: st, code: http2.ErrCodeRefusedStream})
	c.s.counters.unavailable.Add(1)
	c.s.counters.streamsRefused.Add(1)
	c.s.limits.Note(limit)
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

// startDrain sends GOAWAY(NO_ERROR) naming the last stream the reader
// has taken, all of which are served and answered, and has the
// connection close once none of them is live.
func (c *conn) startDrain() {
	c.mu.Lock()
	last := c.maxID.Load()
	if !c.goawaySet || last < c.goaway {
		c.goaway, c.goawaySet = last, true
	}
	last = c.goaway
	c.mu.Unlock()
	c.queue(op{kind: opGoAway, last: last, code: http2.ErrCodeNo, data: []byte("grpcwire: draining")})
	c.mu.Lock()
	c.draining = true
	if len(c.live) == 0 {
		c.drainedLocked()
	}
	c.mu.Unlock()
}

// took ends the hold headers put on a stream it was taking: newStream
// has made it live, or answered it.
func (c *conn) took() {
	c.mu.Lock()
	c.taking--
	if c.draining && len(c.live) == 0 {
		c.drainedLocked()
	}
	c.mu.Unlock()
}

// drainedLocked queues the close of a draining connection with no live
// stream left and none being taken; the caller holds c.mu.
func (c *conn) drainedLocked() {
	if c.closing || c.silent || c.taking > 0 {
		return
	}
	c.ops = append(c.ops, op{kind: opClose})
	c.closing = true
	c.wakeWriter()
}

// streamError answers a stream error: RST_STREAM, the connection kept.
func (c *conn) streamError(id uint32, code http2.ErrCode, text string) {
	c.protocolError(text)
	c.mu.Lock()
	delete(c.streams, id)
	st := c.live[id]
	c.mu.Unlock()
	if st == nil {
		c.queue(op{kind: opRST, stream: id, code: code})
		return
	}
	// Nothing more goes out on it, whatever its goroutine answers; and
	// its goroutine is told to stop. The writer drops a reset stream's
	// ops, so the RST_STREAM goes without st, and opForget frees the
	// slot.
	st.reset.Store(true)
	st.cancel()
	c.queue(op{kind: opRST, stream: id, code: code}, op{kind: opForget, stream: id, st: st})
}

func (c *conn) readLoop() {
	defer c.s.wg.Done()
	defer c.close()
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(c.fw, preface); err != nil {
		if !c.watchError(err) {
			c.readError(err)
		}
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
			if c.watchError(err) {
				return
			}
			var se http2.StreamError
			var ce http2.ConnectionError
			switch {
			case errors.As(err, &se):
				c.framerError(se)
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
		if !c.handle(f) || c.stopRead.Load() {
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
	c.diag(slog.LevelWarn, serverapi.EventConnReadError, serverapi.KeyRemote, c.nc.RemoteAddr().String(), serverapi.KeyErr, err.Error(),
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
		c.endRemote(f.StreamID)
		// The reset is the client's whatever the budget says: its
		// stream is told so first, so that a handler it cuts logs
		// CANCELED even when this reset brings the calm verdict.
		if st != nil {
			st.reset.Store(true)
			st.cancel()
			if !st.answered.Load() {
				c.s.counters.canceled.Add(1)
			}
		}
		if !c.resetAllowed(f.StreamID, st) {
			return false
		}
		c.diag(slog.LevelInfo, serverapi.EventStreamReset, serverapi.KeyWire, serverapi.WireGRPC, serverapi.KeyConn, c.id,
			serverapi.KeyStream, f.StreamID, serverapi.KeyCode, f.ErrCode.String())
		c.queue(op{kind: opForget, stream: f.StreamID, st: st})
	case *http2.GoAwayFrame:
		c.diag(slog.LevelInfo, serverapi.EventGoAwayReceived, serverapi.KeyWire, serverapi.WireGRPC, serverapi.KeyConn, c.id,
			serverapi.KeyCode, f.ErrCode.String())
	case *http2.PriorityFrame:
		if selfDependent(f.StreamID, f.PriorityParam) {
			c.resetStream(f.StreamID, http2.ErrCodeProtocol, "grpcwire: PRIORITY makes a stream depend on itself")
		}
	case *http2.PushPromiseFrame:
		c.connError(http2.ErrCodeProtocol, "grpcwire: PUSH_PROMISE from a client")
		return false
	}
	// Other PRIORITY frames and unknown frame types are ignored (RFC
	// 9113 §5.3.2, §5.5).
	return true
}

// headers starts a stream for a request's HEADERS.
func (c *conn) headers(f *http2.MetaHeadersFrame) bool {
	id := f.StreamID
	c.mu.Lock()
	st := c.streams[id]
	// Above a GOAWAY sent, or once a close is queued, a request would
	// execute unanswered: it is not processed.
	above := c.goawaySet && id > c.goaway || c.closing
	taking := !above && id%2 == 1 && id > c.rd.maxID
	if taking {
		// Published under the lock that decided above, and held as
		// taken until newStream has made it live: a drain's GOAWAY,
		// which reads maxID under this lock too, names every stream that
		// will be processed and no other, and the drain does not close
		// the connection before it is answered (startDrain).
		c.maxID.Store(id)
		c.taking++
	}
	c.mu.Unlock()
	if taking {
		defer c.took()
	}
	switch {
	case id%2 == 0:
		c.connError(http2.ErrCodeProtocol, "grpcwire: HEADERS on an even stream id")
		return false
	case id <= c.rd.maxID:
		return c.laterHeaders(f, st)
	}
	c.rd.maxID = id
	c.maxID.Store(id)
	c.openRemote(f)
	if above {
		return true // the GOAWAY or the close says it will not be processed
	}
	if !c.requestHeaders(f) {
		return true
	}
	st = c.newStream(f)
	if st == nil || st.http != nil {
		// Ended by the server without executing (a request that is not
		// gRPC is answered once it ends): its ATTEMPT is charged as a
		// client's reset is, lest a flood of requests the server refuses
		// at once grow the log without a single reset.
		if !c.endedAllowed(id) {
			return false
		}
		if st == nil {
			return true
		}
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
	if !c.remoteData(f) {
		return true
	}
	c.mu.Lock()
	st := c.streams[id]
	c.mu.Unlock()
	if st == nil {
		// Answered, reset or refused already: the client may still be
		// sending.
		return true
	}
	st.add(f.Data())
	if f.StreamEnded() {
		st.finish()
	}
	return true
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
