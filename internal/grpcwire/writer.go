package grpcwire

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/rpcbench/rpcbench/internal/serverapi"
)

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
		if o.kind == opData {
			c.queueData(len(o.data))
		}
		c.ops = append(c.ops, o)
		if o.kind == opClose {
			c.closing = true
			break
		}
	}
	// The first queue past the cap closes the connection, once: later
	// ones see closing and drop their ops.
	c.closing = c.closing || flood
	c.mu.Unlock()
	c.wakeWriter()
	if flood {
		// The queue grew because the writer is blocked on a peer that
		// reads nothing: the GOAWAY gets closeGrace, then the connection
		// is reset.
		c.calm(fmt.Sprintf("grpcwire: more than %d control frames queued behind a blocked writer (ENHANCE_YOUR_CALM)", maxQueuedControl))
	}
}

func (c *conn) wakeWriter() {
	select {
	case c.wake <- struct{}{}:
	default:
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
	c := w.c
	c.mu.Lock()
	err := c.nc.SetWriteDeadline(time.Now().Add(c.batchTimeout()))
	c.mu.Unlock()
	if err != nil {
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
	if c.hurried() {
		// A connection error's or a flood verdict's GOAWAY could not be
		// written within closeGrace: not a WRITE_TIMEOUT, and reset.
		c.reset()
		return
	}
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

// done is called once the writer has performed or dropped o. It lets go
// of o's data, which a pending slice's array would otherwise keep.
func (w *writer) done(o *op) {
	if o.control {
		w.c.control.Add(-1)
	}
	if o.kind == opData {
		w.c.sent(len(o.data)) // what is left of it was dropped
	}
	o.data, o.st = nil, nil
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
		// The bytes written leave the connection's count in one go, after
		// the frames; on an error the close takes the rest out.
		written := 0
		for len(o.data) > 0 || o.end {
			n := min(int64(len(o.data)), int64(w.maxFrame), w.connWin, w.window(o.stream))
			if n <= 0 && len(o.data) > 0 {
				w.c.sent(written)
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
			written += int(n)
			if end {
				delete(w.win, o.stream)
				break
			}
		}
		w.c.sent(written)
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

// peerWindowDelta is how much a new INITIAL_WINDOW_SIZE moves the send
// windows of open streams.
func peerWindowDelta(old, now uint32) int64 { return int64(now) - int64(old) }
