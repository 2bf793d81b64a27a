package grpcwire

import (
	"fmt"

	"golang.org/x/net/http2"
)

// The reader's view of each stream's client half (RFC 9113 §5.1). A
// stream at or below rd.maxID whose client half is still open (no
// END_STREAM or RST_STREAM from the client yet) is in rd.remote,
// whatever the server did with it: reading its request, answered early
// (405, a message over the limit) or reset. Every other one is
// half-closed (remote) or closed, and a DATA or HEADERS frame on it is
// a STREAM_CLOSED error. So the server tells a client still sending
// after an early answer (its frames are ignored, its trailers accepted)
// from one sending after END_STREAM.

// half is what the reader keeps of a stream's open client half.
type half struct {
	// left is the request's content-length minus the DATA read so far,
	// or noLength when the request declared none.
	left int64
	// reset is set once the server reset the stream: the client's frames
	// sent before it saw the RST_STREAM are ignored, not answered with
	// another (RFC 9113 §5.1, closed).
	reset bool
}

// remoteLimit bounds rd.remote: streams whose client half stays open
// after the server ended its own, beyond the MAX_CONCURRENT_STREAMS
// ones still being read. Past it the lowest is forgotten, and a frame
// it still gets is answered as one on a closed stream.
func (c *conn) remoteLimit() int { return 2 * int(c.s.cfg.MaxConcurrentStreams) }

// openRemote records a new stream's client half, unless its HEADERS
// ended it.
func (c *conn) openRemote(f *http2.MetaHeadersFrame) {
	if !f.StreamEnded() {
		c.addRemote(f.StreamID, half{left: noLength})
	}
}

// addRemote records stream id's client half as h, forgetting the lowest
// past remoteLimit.
func (c *conn) addRemote(id uint32, h half) {
	if c.rd.remote == nil {
		c.rd.remote = make(map[uint32]half)
	}
	if len(c.rd.remote) >= c.remoteLimit() {
		lowest := id
		for other := range c.rd.remote {
			lowest = min(lowest, other)
		}
		delete(c.rd.remote, lowest)
	}
	c.rd.remote[id] = h
}

// framerError answers a stream error the Framer found. One on a client
// stream above rd.maxID came with the header block opening it (or with
// a WINDOW_UPDATE on an idle stream): the stream counts as opened, and
// reset, so that the DATA following a malformed HEADERS is ignored, not
// taken for DATA on an idle stream, a connection error.
func (c *conn) framerError(se http2.StreamError) {
	if id := se.StreamID; id > c.rd.maxID && id%2 == 1 {
		c.rd.maxID = id
		c.maxID.Store(id)
		c.addRemote(id, half{left: noLength})
	}
	c.resetStream(se.StreamID, se.Code, "grpcwire: "+se.Error())
}

// requestHeaders checks a new stream's header block; it reports false
// when the stream was reset for it.
func (c *conn) requestHeaders(f *http2.MetaHeadersFrame) bool {
	if f.Truncated {
		c.resetStream(f.StreamID, http2.ErrCodeProtocol, "grpcwire: header list over MaxHeaderListSize")
		return false
	}
	n, err := checkRequest(f)
	if err != nil {
		c.resetStream(f.StreamID, http2.ErrCodeProtocol, err.Error())
		return false
	}
	if h, ok := c.rd.remote[f.StreamID]; ok {
		h.left = n
		c.rd.remote[f.StreamID] = h
	}
	return true
}

// resetStream answers a stream error the reader finds, and has the
// frames the client sent before it sees the RST_STREAM ignored.
func (c *conn) resetStream(id uint32, code http2.ErrCode, text string) {
	if h, ok := c.rd.remote[id]; ok {
		h.reset = true
		c.rd.remote[id] = h
	}
	c.streamError(id, code, text)
}

// remoteData checks a DATA frame against its stream's client half,
// answering what is wrong; it reports whether the frame goes on to its
// stream (still being read, or answered early: ignored).
func (c *conn) remoteData(f *http2.DataFrame) bool {
	id := f.StreamID
	h, open := c.rd.remote[id]
	switch {
	case !open:
		c.streamError(id, http2.ErrCodeStreamClosed, "grpcwire: DATA on a stream the client ended")
		return false
	case h.reset:
		if f.StreamEnded() {
			delete(c.rd.remote, id)
		}
		return false
	}
	if h.left != noLength {
		h.left -= int64(len(f.Data()))
		if h.left < 0 || f.StreamEnded() && h.left > 0 {
			delete(c.rd.remote, id)
			c.streamError(id, http2.ErrCodeProtocol, "grpcwire: DATA does not add up to the request's content-length")
			return false
		}
		c.rd.remote[id] = h
	}
	if f.StreamEnded() {
		delete(c.rd.remote, id)
	}
	return true
}

// laterHeaders acts on a HEADERS frame on a stream the client opened
// before: its trailers, or an error. st is the stream, if the reader is
// still reading its request. It returns false when the connection must
// close.
func (c *conn) laterHeaders(f *http2.MetaHeadersFrame, st *stream) bool {
	id := f.StreamID
	h, open := c.rd.remote[id]
	switch {
	case !open && st != nil:
		// Half-closed (remote): the request is complete and executing.
		c.streamError(id, http2.ErrCodeStreamClosed, "grpcwire: HEADERS after END_STREAM")
		return true
	case !open:
		c.connError(http2.ErrCodeStreamClosed, "grpcwire: HEADERS on a closed stream")
		return false
	case h.reset:
		if f.StreamEnded() {
			delete(c.rd.remote, id)
		}
		return true
	}
	err := checkTrailers(f)
	if err == nil && h.left > 0 {
		err = fmt.Errorf("%w: trailers %d bytes short of the request's content-length", errMalformed, h.left)
	}
	if err != nil {
		c.resetStream(id, http2.ErrCodeProtocol, err.Error())
		return true
	}
	delete(c.rd.remote, id)
	if st != nil {
		// Trailers end the request; the server reads nothing in them.
		st.finish()
	}
	return true
}

// endRemote forgets a stream's client half: the client reset it.
func (c *conn) endRemote(id uint32) { delete(c.rd.remote, id) }
