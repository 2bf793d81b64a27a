package server

import (
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
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
	var (
		deadline time.Time // the read deadline set; zero for none
		// begun says the bytes buffered, if any, began a frame after
		// the last read's complete ones: its clock starts afresh.
		begun bool
	)
	for {
		if want := c.readDeadline(deadline, fr.Buffered(), begun); want != deadline {
			if err := c.nc.SetReadDeadline(want); err != nil {
				return // closed meanwhile
			}
			deadline = want
		}
		frames, err := fr.ReadBatch()
		begun = len(frames) > 0
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
		case errors.Is(err, os.ErrDeadlineExceeded):
			// Only a frame begun sets a read deadline.
			c.s.counters.readTimeouts.Add(1)
			c.s.log.Warn(serverapi.EventReadTimeout, serverapi.KeyRemote, remote, serverapi.KeyConn, c.id,
				serverapi.KeyBuffered, fr.Buffered(), serverapi.KeyTimeout, c.s.cfg.ReadTimeout.String())
			return
		case errors.As(err, &pe):
			c.s.counters.protocolErrors.Add(1)
			c.s.log.Warn(serverapi.EventProtocolError, serverapi.KeyRemote, remote, serverapi.KeyErr, err.Error())
		case errors.Is(err, syscall.ETIMEDOUT):
			// The kernel gave up on the peer (TCP_USER_TIMEOUT, see
			// transport.PlanTCP): answers left unacknowledged, or, idle,
			// keepalive probes unanswered. The same verdict as a write
			// that made no progress, reached where the write itself did
			// not block because the answers fitted the send buffer.
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

// readDeadline returns the read deadline for the reader's next read,
// given the one set (zero for none), the bytes of an unfinished frame
// buffered and whether that frame began in the last read. A frame's
// clock starts when the reader goes back to reading with its first bytes
// in hand, so that time spent executing the frames before it, or waiting
// for the peer to read their answers, is not counted against the peer.
// Between frames there is no deadline: idle connections are kept.
func (c *conn) readDeadline(set time.Time, buffered int, begun bool) time.Time {
	switch {
	case buffered == 0:
		return time.Time{}
	case set.IsZero() || begun:
		return time.Now().Add(c.s.cfg.ReadTimeout)
	}
	return set
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

// dispatch handles one decoded request on the reader: a business method
// is started (start), a control method answered at once, any other
// method refused INVALID_ARGUMENT, unexecuted. A business request is one
// take counted in work: dispatch marks it finished when start turns it
// away, and start when the reader ran it. i is f's index among the
// handler's methods, -1 for none.
func (c *conn) dispatch(f *proto.Frame, i int, arrival time.Time) {
	s := c.s
	st, refusal := proto.StatusUnavailable, ""
	switch {
	case i >= 0:
		c.reqs[i].Add(1)
		if refusal = c.start(f, arrival); refusal == "" {
			return
		}
	case serverapi.IsControl(f.Method):
		s.counters.requestsCtl.Add(1)
		c.send(s.control(c, f))
		if f.Method == serverapi.MethodDrain {
			go s.drainFor(s.cfg.DrainTimeout)
		}
		return
	default:
		s.counters.requestsOther.Add(1)
		st, refusal = proto.StatusInvalidArgument, "unknown method "+strconv.Quote(f.Method)
	}
	c.send(respond(f, st, refusal))
	if i >= 0 {
		c.finished()
	}
}

// start runs a business request on the reader itself when no fault rule
// is configured, the handler says it cannot block and a slot is free, so
// that the reader is back to reading at once; otherwise it queues the
// request for a worker. When it can do neither, because the connection's
// share of the queue or the queue is full, it returns why, for an
// UNAVAILABLE answer: the request is not executed. "" means started.
func (c *conn) start(f *proto.Frame, arrival time.Time) (refusal string) {
	s := c.s
	j := job{c: c, f: *f, arrival: arrival}
	if s.faults.Empty() {
		c.rd.req = request(&j, s.done)
		if !s.h.MayBlock(&c.rd.req) && c.runSlot() {
			rf, lent, ok := s.serve(&j, &c.rd.req, &c.rd.scratch)
			if ok {
				c.hold(&rf, lent, j.f.Payload)
			}
			c.finished()
			return ""
		}
	}
	// A connection may hold only its share of the queue, so that one
	// client that floods the server is turned away before the queue is
	// full for everyone else.
	if c.queued.Load() >= int32(s.cfg.MaxQueuedPerConn) {
		s.counters.connQueueFull.Add(1)
		s.counters.unavailable.Add(1)
		s.log.Warn(serverapi.EventQueueFull, serverapi.KeyConn, c.id, serverapi.KeyID, f.ID, serverapi.KeyMethod, f.Method, serverapi.KeyShare, true)
		return "connection's queue share full"
	}
	c.queued.Add(1)
	j.queued = true
	if !s.queue.push(j) {
		c.queued.Add(-1)
		s.counters.queueFull.Add(1)
		s.counters.unavailable.Add(1)
		s.log.Warn(serverapi.EventQueueFull, serverapi.KeyConn, c.id, serverapi.KeyID, f.ID, serverapi.KeyMethod, f.Method)
		return "queue full"
	}
	return ""
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
