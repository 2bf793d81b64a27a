package server

import (
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/transport"
)

// conn is one accepted connection: a reader goroutine that decodes and
// dispatches requests, and a writer goroutine that writes queued answers.
// Writes are serialized by wmu: the writer goroutine makes them, and so
// does the reader when it flushes answers it executed itself while the
// writer is idle (flushHeld).
type conn struct {
	s  *Server
	id uint64 // the server's number for it, in the log
	// queued counts this connection's requests in the queue or being
	// executed by a worker.
	queued atomic.Int32
	// reqs counts the business requests this connection's reader
	// received, by index in the server's methods: a counter of its own,
	// so that readers on several cores do not share one (Counters sums
	// them).
	reqs []atomic.Int64
	nc   net.Conn

	wake    chan struct{} // capacity 1: the writer has work
	drained chan struct{} // capacity 1: the writer took the queued output

	// rd is touched by the reader goroutine only.
	rd readerState

	// rmu is held by the reader while it takes a request, and by a drain
	// while it fixes the drain ID, so that nothing is taken above it.
	// It guards lastTaken; draining is set under it.
	rmu       sync.Mutex
	lastTaken uint64      // the ID of the last business request taken, 0 if none
	draining  atomic.Bool // the drain frame is queued: take nothing more
	// work counts the business requests taken and not yet done with:
	// answered, or dropped by a fault that never answers.
	work atomic.Int32

	wmu       sync.Mutex // held while writing; guards spare, spareRefs, iov and rng
	spare     []byte     // the output buffer not in use, swapped with out
	spareRefs []outRef   // likewise for refs
	iov       net.Buffers
	rng       *rand.Rand // chunk mode's piece sizes; nil otherwise

	mu  sync.Mutex // guards out, refs, outBytes, outFrames, closing, closed, timers, finQueued, finSent
	out []byte     // encoded responses the writer has not taken yet
	// refs are the payloads written from where they lie, each after
	// out[:at] and before what follows it in out, in order of at.
	refs []outRef
	// outBytes is len(out) plus the refs' payloads: what MaxOutBytes
	// bounds.
	outBytes  int
	outFrames int  // frames (whole or partial) in out
	closing   bool // close the connection once out is written
	closed    bool
	timers    map[*time.Timer]struct{} // pending late responses
	// finQueued asks the writer, draining, to half-close the connection
	// once out is written; finSent says it did, and nothing more is
	// queued.
	finQueued, finSent bool

	timedOut  atomic.Bool // a write timeout was counted
	closeOnce sync.Once
	done      chan struct{} // closed by close
}

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

// readerState is what the reader goroutine keeps across requests it
// executes itself.
type readerState struct {
	// slot says the reader holds a worker slot (workQueue.claim) for
	// the requests of the current batch it runs itself: claimed at the
	// first, given back when the batch ends or a job waits, so that
	// readers on several cores do not trade the queue's counter back
	// and forth once per request.
	slot    bool
	scratch []byte            // payload buffer for the answers
	req     transport.Request // the request being executed, reused
	held    bool              // answers are queued that nobody was woken for
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{
		s:       s,
		id:      s.connSeq.Add(1),
		reqs:    make([]atomic.Int64, len(s.methods)),
		nc:      nc,
		wake:    make(chan struct{}, 1),
		drained: make(chan struct{}, 1),
		timers:  make(map[*time.Timer]struct{}),
		done:    make(chan struct{}),
	}
	if s.cfg.Chunk {
		c.rng = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return c
}

func (c *conn) readLoop() {
	defer c.s.wg.Done()
	defer c.close()
	defer c.s.retire(c) // no request is counted after this
	fr := proto.NewFrameReader(c.nc, proto.TypeRequest, 0)
	fr.SetAlloc(c.s.payloads.get)
	for {
		frames, err := fr.ReadBatch()
		if len(frames) > 0 {
			c.takeAll(frames, time.Now())
			if !c.flushHeld() || !c.awaitRoom() {
				return
			}
		}
		if err == nil {
			continue
		}
		remote := c.nc.RemoteAddr().String()
		var pe *proto.ProtocolError
		switch {
		case errors.As(err, &pe):
			c.s.counters.protocolErrors.Add(1)
			c.s.log.Warn(serverapi.EventProtocolError, serverapi.KeyRemote, remote, serverapi.KeyErr, err.Error())
		case errors.Is(err, syscall.ETIMEDOUT):
			// The kernel gave up on answers the peer left unacknowledged
			// for WriteTimeout (TCP_USER_TIMEOUT): the same verdict as a
			// write that made no progress, reached where the write itself
			// did not block because the answers fitted the send buffer.
			c.writeTimedOut(0, err)
		case !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed):
			c.s.log.Warn(serverapi.EventConnReadError, serverapi.KeyRemote, remote, serverapi.KeyErr, err.Error(),
				serverapi.KeyReset, errors.Is(err, syscall.ECONNRESET))
		}
		if p := fr.Buffered(); p > 0 {
			c.s.log.Warn(serverapi.EventConnClosedMidFrame, serverapi.KeyRemote, remote, serverapi.KeyBuffered, p)
		}
		return
	}
}

// takeAll takes the frames one read brought, in order, under rmu held
// once for them all: a drain that starts meanwhile waits for the batch,
// and then names its last request.
func (c *conn) takeAll(frames []proto.Frame, arrival time.Time) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	for i := range frames {
		c.take(&frames[i], arrival)
	}
	c.dropSlot()
}

// runSlot reports whether the reader may run a request itself now,
// claiming a worker slot for the rest of the batch if it holds none. As
// claim, it never lets the reader overtake a queued request: with a job
// waiting it gives its slot back and says no.
func (c *conn) runSlot() bool {
	q := c.s.queue
	if c.rd.slot {
		if q.waiting.Load() == 0 {
			return true
		}
		c.dropSlot()
		return false
	}
	c.rd.slot = q.claim()
	return c.rd.slot
}

// dropSlot gives back the reader's worker slot, if it holds one.
func (c *conn) dropSlot() {
	if c.rd.slot {
		c.rd.slot = false
		c.s.queue.release()
	}
}

// take is the reader's first step with each request; the caller holds
// rmu. Once the connection drains it drops every frame; otherwise a drain
// fault may fire on a business request, which it then drops, or the
// request is taken (its ID becomes the drain ID should a drain start
// next) and dispatched.
func (c *conn) take(f *proto.Frame, arrival time.Time) {
	s := c.s
	if c.draining.Load() {
		c.dropDrained(f)
		return
	}
	m := s.method(f.Method)
	if m >= 0 {
		if _, ok := s.faults.Take(f.Method, isDrain); ok {
			s.counters.faultsFired.Add(1)
			s.log.Info(serverapi.EventFault, serverapi.KeyKind, FaultDrain.String(), serverapi.KeyID, f.ID, serverapi.KeyMethod, f.Method)
			c.beginDrain()
			go s.drainFor(s.cfg.DrainTimeout)
			c.dropDrained(f)
			return
		}
		c.lastTaken = f.ID
		c.work.Add(1)
	}
	c.dispatch(f, m, arrival)
}

// dropDrained drops a frame read after the connection's drain frame.
func (c *conn) dropDrained(f *proto.Frame) {
	c.s.counters.drainDropped.Add(1)
	c.s.log.Info(serverapi.EventDrainDropped, serverapi.KeyConn, c.id, serverapi.KeyID, f.ID, serverapi.KeyMethod, f.Method)
}

// dispatch handles one decoded request on the reader: control methods at
// once; a business method on the reader itself when no fault rule is
// configured, the handler says it cannot block and a slot is free, so
// that the reader is back to reading at once; otherwise through the queue.
// A business request is one take counted in work: dispatch marks it
// finished unless a worker now holds it. i is f's index among the
// handler's methods, -1 for none.
func (c *conn) dispatch(f *proto.Frame, i int, arrival time.Time) {
	s := c.s
	switch {
	case i >= 0:
		c.reqs[i].Add(1)
	case serverapi.IsControl(f.Method):
		s.counters.requestsCtl.Add(1)
		c.send(s.control(c, f))
		if f.Method == serverapi.MethodDrain {
			go s.drainFor(s.cfg.DrainTimeout)
		}
		return
	default:
		s.counters.requestsOther.Add(1)
		c.send(respond(f, proto.StatusInvalidArgument, "unknown method "+strconv.Quote(f.Method)))
		return
	}
	j := job{c: c, f: *f, arrival: arrival}
	if s.faults.Empty() {
		c.rd.req = request(&j, s.done)
		if !s.h.MayBlock(&c.rd.req) && c.runSlot() {
			rf, lent, ok := s.serve(&j, &c.rd.req, &c.rd.scratch)
			if ok {
				c.hold(&rf, lent, j.f.Payload)
			}
			c.finished()
			return
		}
	}
	// A connection may hold only its share of the queue, so that one
	// client that floods the server is turned away before the queue is
	// full for everyone else.
	if c.queued.Load() >= int32(s.cfg.MaxQueuedPerConn) {
		s.counters.connQueueFull.Add(1)
		s.counters.unavailable.Add(1)
		s.log.Warn(serverapi.EventQueueFull, serverapi.KeyConn, c.id, serverapi.KeyID, f.ID, serverapi.KeyMethod, f.Method, serverapi.KeyShare, true)
		c.send(respond(f, proto.StatusUnavailable, "connection's queue share full"))
		c.finished()
		return
	}
	c.queued.Add(1)
	j.queued = true
	if !s.queue.push(j) {
		c.queued.Add(-1)
		s.counters.queueFull.Add(1)
		s.counters.unavailable.Add(1)
		s.log.Warn(serverapi.EventQueueFull, serverapi.KeyConn, c.id, serverapi.KeyID, f.ID, serverapi.KeyMethod, f.Method)
		c.send(respond(f, proto.StatusUnavailable, "queue full"))
		c.finished()
	}
}

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
	if c.closed || c.closing || c.finSent {
		c.s.payloads.put(recycle)
		return false
	}
	n := len(c.out)
	if lent && len(f.Payload) >= writevMin && c.rng == nil {
		if out, err := proto.AppendFrameHead(c.out, f); err == nil {
			ref := outRef{at: len(out), p: f.Payload}
			if overlaps(f.Payload, recycle) {
				// An answer in the request's memory: that memory goes
				// back once written, not before.
				ref.recycle = recycle
			} else {
				c.s.payloads.put(recycle)
			}
			c.out = out
			c.refs = append(c.refs, ref)
			c.outBytes += len(out) - n + len(f.Payload)
			c.outFrames++
			return true
		}
		// Too large a frame: appendResponse answers so.
	}
	var err error
	c.out, err = appendResponse(c.out, f)
	c.s.payloads.put(recycle) // copied, or not sent at all
	if err != nil {
		return false
	}
	c.outBytes += len(c.out) - n
	c.outFrames++
	return true
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

func (c *conn) writeLoop() {
	defer c.s.wg.Done()
	defer c.close()
	for {
		select {
		case <-c.wake:
		case <-c.done:
			return
		}
		if c.rng != nil {
			// Chunk mode: let more responses pile up so that one write
			// sequence carries several frames.
			select {
			case <-time.After(c.s.cfg.ChunkWindow):
			case <-c.done:
				return
			}
		} else {
			// Let workers that are already runnable queue their answers
			// too, so that one write carries them all.
			runtime.Gosched()
		}
		c.wmu.Lock()
		ok := c.flush()
		c.wmu.Unlock()
		if !ok {
			return
		}
	}
}

// writeTimedOut counts and logs, once per connection, that the peer
// accepted nothing for WriteTimeout; unwritten is what the server still
// held.
func (c *conn) writeTimedOut(unwritten int, err error) {
	if c.timedOut.Swap(true) {
		return
	}
	c.s.counters.writeTimeouts.Add(1)
	c.s.log.Warn(serverapi.EventWriteTimeout, serverapi.KeyRemote, c.nc.RemoteAddr().String(),
		serverapi.KeyUnwritten, unwritten, serverapi.KeyTimeout, c.s.cfg.WriteTimeout.String(), serverapi.KeyErr, err.Error())
}

// flush writes everything queued; the caller holds wmu. It returns false
// when the connection must close: the write failed, or a close was queued.
func (c *conn) flush() bool {
	// Swap buffers: others append to the spare while buf is written.
	c.mu.Lock()
	buf, refs, size, frames, closeAfter := c.out, c.refs, c.outBytes, c.outFrames, c.closing
	c.out, c.refs, c.outBytes, c.outFrames = c.spare[:0], c.spareRefs[:0], 0, 0
	fin := c.finQueued && !c.finSent
	c.finSent = c.finSent || fin
	c.mu.Unlock()
	select {
	case c.drained <- struct{}{}:
	default:
	}
	var err error
	if len(refs) == 0 {
		err = c.write(buf, c.rng)
	} else {
		err = c.writev(buf, refs)
	}
	for _, r := range refs {
		c.s.payloads.put(r.recycle)
	}
	// Dropped, so that a spare does not keep lent payloads alive.
	clear(refs)
	c.spare, c.spareRefs = buf, refs
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			c.writeTimedOut(size, err)
		}
		return false
	}
	c.s.counters.framesSent.Add(int64(frames))
	if fin {
		c.closeWrite()
	}
	if closeAfter {
		c.s.log.Info(serverapi.EventConnCloseInjected, serverapi.KeyRemote, c.nc.RemoteAddr().String())
		return false
	}
	return true
}

// awaitRoom holds the reader back while the connection's unwritten
// answers are at MaxOutBytes, so that a client that does not read its
// answers stops being read instead of growing the server's memory. It
// returns false if the connection closed meanwhile.
func (c *conn) awaitRoom() bool {
	for {
		c.mu.Lock()
		full := c.outBytes >= c.s.cfg.MaxOutBytes
		c.mu.Unlock()
		if !full {
			return true
		}
		c.s.counters.outLimitWaits.Add(1)
		select {
		case <-c.drained:
		case <-c.done:
			return false
		}
	}
}

// flushHeld writes the answers the reader queued itself, on the reader
// goroutine, which saves waking the writer; if the writer is busy it is
// left to the writer. It returns false when the connection must close.
func (c *conn) flushHeld() bool {
	if !c.rd.held {
		return true
	}
	c.rd.held = false
	if !c.wmu.TryLock() {
		c.signal()
		return true
	}
	defer c.wmu.Unlock()
	return c.flush()
}

// write writes b in one call, or in random 1-13 byte pieces when rng is set.
func (c *conn) write(b []byte, rng *rand.Rand) error {
	if len(b) == 0 {
		return nil
	}
	if err := c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.WriteTimeout)); err != nil {
		return err
	}
	for len(b) > 0 {
		n := len(b)
		if rng != nil {
			n = min(n, 1+rng.IntN(13))
		}
		if _, err := c.nc.Write(b[:n]); err != nil {
			return err
		}
		c.s.counters.writeChunks.Add(1)
		b = b[n:]
	}
	return nil
}

// writev writes buf with each ref's payload after its first at bytes,
// in one writev where the kernel takes it all. Never in chunk mode,
// whose answers are not lent (queueFrame).
func (c *conn) writev(buf []byte, refs []outRef) error {
	if err := c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.WriteTimeout)); err != nil {
		return err
	}
	iov, prev := c.iov[:0], 0
	for _, r := range refs {
		if r.at > prev {
			iov = append(iov, buf[prev:r.at])
		}
		iov = append(iov, r.p)
		prev = r.at
	}
	if prev < len(buf) {
		iov = append(iov, buf[prev:])
	}
	c.iov = iov
	// WriteTo consumes its receiver: a copy of the slice, so that c.iov
	// keeps its backing array.
	w := iov
	_, err := w.WriteTo(c.nc)
	clear(iov)
	c.s.counters.writeChunks.Add(1)
	return err
}

// close closes the socket once, stops pending late responses and drops
// anything not yet written.
func (c *conn) close() {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.out, c.refs, c.outBytes, c.outFrames = nil, nil, 0, 0
		for t := range c.timers {
			t.Stop()
		}
		c.timers = nil
		c.mu.Unlock()
		close(c.done)
		c.nc.Close()
		c.s.forget(c)
		c.s.log.Info(serverapi.EventConnClosed, serverapi.KeyConn, c.id, serverapi.KeyRemote, c.nc.RemoteAddr().String())
	})
}
