package grpcwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"golang.org/x/net/http2"

	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// maxContinuations bounds the CONTINUATION frames of one header block.
// x/net's Framer bounds a block's bytes by MaxHeaderListSize, but an
// empty fragment adds nothing to them: without a bound on the frames, a
// block of empty CONTINUATIONs never ends (CVE-2024-27316), and the
// Framer loops over them inside ReadFrame. A client splits a block at
// the server's SETTINGS_MAX_FRAME_SIZE (16384), so the 16384 bytes of
// MaxHeaderListSize's default need two frames; 16 CONTINUATIONs leave
// room for fragments of 1 KiB. nghttp2 allows 8.
const maxContinuations = 16

// frameWatch is the reader the connection's preface and its Framer
// read from. It reads the socket into the Framer's buffer, as the
// Framer alone would, buffering nothing of its own, and follows the
// 9-byte frame headers as they arrive, before the Framer parses them, so
// that it can fail the read the Framer is in:
//
//   - with a *calmError, when a header block has more than
//     maxContinuations CONTINUATION frames, empty ones included;
//   - with a *readTimeoutError, when the preface, a frame once its first
//     byte arrived, or a header block does not finish within
//     Config.ReadTimeout. Between frames it sets no read deadline, so an
//     idle connection is kept.
//
// It is used by the reader goroutine only.
type frameWatch struct {
	nc      net.Conn
	timeout time.Duration
	err     error // a verdict: every later Read returns it

	// What has arrived, parsed as it arrives.
	start    time.Time // the connection's acceptance: the preface's clock
	preface  int       // preface bytes still to arrive
	hdr      [9]byte
	nh       int    // bytes of the current frame's header arrived; 9 while its payload arrives
	left     uint32 // payload bytes of the current frame still to arrive
	frameAt  time.Time
	inBlock  bool // a HEADERS without END_HEADERS arrived, and no END_HEADERS since
	blockAt  time.Time
	blockN   int   // CONTINUATION frames of the open block
	unfinish int64 // bytes of the unfinished preface, frame or header block
	armed    time.Time
}

func newFrameWatch(nc net.Conn, timeout time.Duration) *frameWatch {
	return &frameWatch{
		nc: nc, timeout: timeout,
		start: time.Now(), preface: len(http2.ClientPreface),
	}
}

// calmError is a flood the frame watch found: the connection is closed
// at once with GOAWAY(ENHANCE_YOUR_CALM).
type calmError struct{ text string }

func (e *calmError) Error() string { return e.text }

// readTimeoutError is a preface, frame or header block that did not
// finish within Config.ReadTimeout.
type readTimeoutError struct {
	what     string // "preface", "frame" or "header block"
	buffered int64  // its bytes that arrived
}

func (e *readTimeoutError) Error() string {
	return fmt.Sprintf("grpcwire: %s unfinished after the read timeout, %d bytes of it arrived", e.what, e.buffered)
}

// Read reads the socket under the deadline of what is unfinished, and
// follows what arrived.
func (w *frameWatch) Read(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if d := w.deadline(); !d.Equal(w.armed) {
		if err := w.nc.SetReadDeadline(d); err != nil {
			return 0, err
		}
		w.armed = d
	}
	n, err := w.nc.Read(p)
	if n == 0 {
		if errors.Is(err, os.ErrDeadlineExceeded) && !w.armed.IsZero() {
			w.err = &readTimeoutError{what: w.unfinished(), buffered: w.unfinish}
			return 0, w.err
		}
		return 0, err
	}
	if w.err = w.scan(p[:n], time.Now()); w.err != nil {
		return 0, w.err
	}
	return n, err
}

// deadline is the read deadline of what is unfinished; zero between
// frames.
func (w *frameWatch) deadline() time.Time {
	if w.preface > 0 {
		return w.start.Add(w.timeout)
	}
	switch {
	case w.inBlock: // the block began no later than its current frame
		return w.blockAt.Add(w.timeout)
	case w.nh > 0:
		return w.frameAt.Add(w.timeout)
	}
	return time.Time{}
}

func (w *frameWatch) unfinished() string {
	switch {
	case w.preface > 0:
		return "preface"
	case w.inBlock:
		return "header block"
	}
	return "frame"
}

// scan follows b, bytes that arrived at now, through the preface and
// the frames' headers.
func (w *frameWatch) scan(b []byte, now time.Time) error {
	for len(b) > 0 {
		switch {
		case w.preface > 0:
			n := min(len(b), w.preface)
			w.preface -= n
			w.unfinish += int64(n)
			b = b[n:]
			if w.preface == 0 {
				w.unfinish = 0
			}
		case w.nh < len(w.hdr):
			if w.nh == 0 {
				w.frameAt = now
			}
			n := copy(w.hdr[w.nh:], b)
			w.nh += n
			w.unfinish += int64(n)
			b = b[n:]
			if w.nh < len(w.hdr) {
				return nil
			}
			w.left = uint32(w.hdr[0])<<16 | uint32(w.hdr[1])<<8 | uint32(w.hdr[2])
			if err := w.frame(http2.FrameType(w.hdr[3]), http2.Flags(w.hdr[4]), binary.BigEndian.Uint32(w.hdr[5:])&(1<<31-1)); err != nil {
				return err
			}
			w.frameDone()
		default:
			n := min(uint32(len(b)), w.left)
			w.left -= n
			w.unfinish += int64(n)
			b = b[n:]
			w.frameDone()
		}
	}
	return nil
}

// frameDone ends the current frame once its payload has arrived.
func (w *frameWatch) frameDone() {
	if w.left > 0 {
		return
	}
	w.nh = 0
	if !w.inBlock {
		w.unfinish = 0
	}
}

// frame follows a frame whose header arrived: the header blocks.
func (w *frameWatch) frame(t http2.FrameType, flags http2.Flags, stream uint32) error {
	end := flags.Has(http2.FlagHeadersEndHeaders)
	switch {
	case t == http2.FrameHeaders && !w.inBlock:
		w.inBlock, w.blockAt, w.blockN = !end, w.frameAt, 0
	case t == http2.FrameContinuation && w.inBlock:
		w.blockN++
		if w.blockN > maxContinuations {
			return &calmError{fmt.Sprintf("grpcwire: header block on stream %d goes on past %d CONTINUATION frames (ENHANCE_YOUR_CALM)", stream, maxContinuations)}
		}
		w.inBlock = !end
	default:
		// Anything else inside a block is the Framer's connection error.
		w.inBlock = false
	}
	return nil
}

// watchError acts on a read error that is a frame watch verdict, and
// reports whether it was one; the reader then returns.
func (c *conn) watchError(err error) bool {
	var te *readTimeoutError
	var ce *calmError
	switch {
	case errors.As(err, &te):
		c.s.counters.readTimeouts.Add(1)
		c.s.log.Warn(serverapi.EventReadTimeout, serverapi.KeyRemote, c.nc.RemoteAddr().String(), serverapi.KeyConn, c.id,
			serverapi.KeyBuffered, te.buffered, serverapi.KeyTimeout, c.s.cfg.ReadTimeout.String(), serverapi.KeyWire, serverapi.WireGRPC)
		return true
	case errors.As(err, &ce):
		c.calmVerdict(ce.text)
		c.drain()
		return true
	}
	return false
}

// calmVerdict is calm for a verdict the frame watch or the reset budget
// reaches on the reader, which then reads nothing more but through
// drain: that drain stops Config.Drain later at the latest, even if a
// peer that reads nothing keeps the writer from closing sooner.
func (c *conn) calmVerdict(text string) {
	c.calm(text)
	c.nc.SetReadDeadline(time.Now().Add(c.s.cfg.Drain))
}

// closingError logs and counts the protocol error that closes the
// connection, outside the log budget: it comes once.
func (c *conn) closingError(text string) {
	c.s.counters.protocolErrors.Add(1)
	c.s.log.Warn(serverapi.EventProtocolError, serverapi.KeyRemote, c.nc.RemoteAddr().String(), serverapi.KeyErr, capText(text),
		serverapi.KeyConn, c.id, serverapi.KeyWire, serverapi.WireGRPC)
}
