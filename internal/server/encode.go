package server

import (
	"errors"
	"time"
	"unsafe"

	"github.com/rpcbench/rpcbench/internal/proto"
)

// outRef is a lent answer payload, written from its own memory after
// the first at bytes of the output buffer. recycle, when not nil, is the
// request payload p lies in, whose memory goes back to the server's pool
// once p is written.
type outRef struct {
	at      int
	p       []byte
	recycle []byte
}

// writevMin is the smallest lent payload written from its own memory:
// a smaller one costs less to copy than an iovec and its bookkeeping.
const writevMin = 2048

// hold queues an answer the reader executed itself; flushHeld writes it
// after the batch. In chunk mode answers always go through the writer.
// lent and recycle are queueFrame's.
func (c *conn) hold(f *proto.Frame, lent bool, recycle []byte) {
	if c.rng != nil {
		c.sendFrame(f, lent, recycle)
		return
	}
	c.rd.held = c.queueFrame(f, lent, recycle) || c.rd.held
}

// send queues the encoded frame b for writing.
func (c *conn) send(b []byte) { c.enqueue(b, false) }

// sendThenClose queues b (possibly nil or part of a frame) and then a
// close of the connection; anything queued later is dropped.
func (c *conn) sendThenClose(b []byte) { c.enqueue(b, true) }

// sendFrame encodes f straight into the output queue and wakes the
// writer; lent and recycle are queueFrame's.
func (c *conn) sendFrame(f *proto.Frame, lent bool, recycle []byte) {
	if c.queueFrame(f, lent, recycle) {
		c.signal()
	}
}

// queueFrame encodes f into the output queue without waking the writer;
// the caller flushes or signals. It reports whether f was queued. lent
// says f.Payload stays unchanged until written (transport.Handler.Execute's
// contract): then, at writevMin bytes or more and outside chunk mode,
// only the frame's head is copied and the payload is written from where
// it lies. recycle, when not nil, is the payload of the request f
// answers, which the handler is done with: its memory goes back to the
// server's pool as soon as f no longer needs it, now or once written.
func (c *conn) queueFrame(f *proto.Frame, lent bool, recycle []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	queued, kept := false, false
	if !c.closed && !c.closing && !c.finSent {
		queued, kept = c.appendFrame(f, lent && len(f.Payload) >= writevMin && c.rng == nil, recycle)
	}
	if !kept {
		c.s.payloads.put(recycle) // copied, or not sent at all
	}
	return queued
}

// appendFrame appends f to the output queue, its payload left where it
// lies when ref is set and the frame is within the limit; the caller
// holds mu. kept says the queue now holds recycle too: an answer in the
// request's memory, which goes back once written, not before.
func (c *conn) appendFrame(f *proto.Frame, ref bool, recycle []byte) (queued, kept bool) {
	inRequest := ref && overlaps(f.Payload, recycle)
	n := len(c.out)
	out, head, err := appendAnswer(c.out, f, ref)
	if err != nil {
		return false, false
	}
	c.out = out
	c.outBytes += len(out) - n
	c.outFrames++
	if !head {
		return true, false
	}
	r := outRef{at: len(out), p: f.Payload}
	if inRequest {
		r.recycle = recycle
	}
	c.refs = append(c.refs, r)
	c.outBytes += len(f.Payload)
	return true, inRequest
}

// sendAt queues b at time at, unless the connection is closed by then.
func (c *conn) sendAt(b []byte, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	var t *time.Timer
	t = time.AfterFunc(time.Until(at), func() {
		c.mu.Lock()
		delete(c.timers, t)
		c.mu.Unlock()
		c.send(b)
		c.maybeFIN()
	})
	c.timers[t] = struct{}{}
}

func (c *conn) enqueue(b []byte, closeAfter bool) {
	c.mu.Lock()
	if c.closed || c.closing || c.finSent {
		c.mu.Unlock()
		return
	}
	if len(b) > 0 {
		c.out = append(c.out, b...)
		c.outBytes += len(b)
		c.outFrames++
	}
	c.closing = closeAfter
	c.mu.Unlock()
	c.signal()
}

func (c *conn) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// overlaps reports whether the memory of a and b, to their capacities,
// has a byte in common.
func overlaps(a, b []byte) bool {
	if cap(a) == 0 || cap(b) == 0 {
		return false
	}
	a0, b0 := uintptr(unsafe.Pointer(unsafe.SliceData(a))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return a0 < b0+uintptr(cap(b)) && b0 < a0+uintptr(cap(a))
}

// respond encodes a response to f whose payload is text.
func respond(f *proto.Frame, st proto.Status, text string) []byte {
	return encodeResponse(&proto.Frame{Type: proto.TypeResponse, ID: f.ID, Status: st, Method: f.Method, Payload: []byte(text)})
}

// encodeResponse encodes r into a new slice.
func encodeResponse(r *proto.Frame) []byte {
	// Method and ID come from a decoded request and the payload is cut
	// to size, so this cannot fail.
	b, _, _ := appendAnswer(nil, r, false)
	return b
}

// appendAnswer appends r to dst: with head set, only up to its payload
// (head reports whether it did), which the caller then writes from where
// it lies; otherwise, or for a frame over the limit, whole. A payload
// over the frame limit is replaced by an APP_ERROR saying so. On error
// dst is returned unchanged.
func appendAnswer(dst []byte, r *proto.Frame, head bool) (out []byte, headOnly bool, err error) {
	if head {
		if out, err := proto.AppendFrameHead(dst, r); err == nil {
			return out, true, nil
		}
		// Too large a frame: answered so, below.
	}
	out, err = proto.AppendFrame(dst, r)
	if err != nil && errors.Is(err, proto.ErrInvalidFrame) && len(r.Payload) > 0 {
		small := *r
		small.Payload, small.Status = []byte("response too large"), proto.StatusAppError
		out, err = proto.AppendFrame(dst, &small)
	}
	return out, false, err
}
