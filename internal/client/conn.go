package client

import (
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// ConnLostError fails every attempt still pending on a connection that
// died: the peer closed it, a read or write failed, the peer sent a bad
// frame, or keepalive found it silent.
type ConnLostError struct {
	// Err is the cause; errors.As finds a *ProtocolError here when the peer
	// sent a bad frame, errors.Is finds ErrKeepaliveTimeout when keepalive
	// declared the connection dead.
	Err error
	// Partial is how many bytes of an incomplete frame were buffered when
	// the connection died. They were never delivered as a response.
	Partial int
}

func (e *ConnLostError) Error() string {
	cause := e.Err.Error()
	if errors.Is(e.Err, io.EOF) {
		cause = "eof"
	}
	if e.Partial > 0 {
		return fmt.Sprintf("client: connection lost: %s (buffered partial bytes=%d)", cause, e.Partial)
	}
	return "client: connection lost: " + cause
}

func (e *ConnLostError) Unwrap() error { return e.Err }

// errNotStarted marks a request none of whose bytes were written, so its
// attempt was not sent.
var errNotStarted = errors.New("client: write not started")

// ErrClosed is returned for calls on a closed Client.
var ErrClosed = errors.New("client: closed")

// ErrDrained is the cause of an attempt the server's drain frame named as
// not taken (its ID above the frame's): the server never executed it,
// and the client may send it elsewhere whatever its method.
var ErrDrained = errors.New("client: not taken by the draining server")

// reply is what the connection hands an attempt: a response, the error
// that ended the connection, or the news that its deadline passed.
// notSent is set when the attempt's request was still queued, unwritten,
// when the connection died; timedOut when the connection's deadline timer
// took the attempt out of pending.
// drained when the server's drain frame named the attempt as not taken.
type reply struct {
	f        proto.Frame
	err      error
	notSent  bool
	timedOut bool
	drained  bool
}

// conn is one TCP connection of a Client, with a reader goroutine
// that routes responses by ID, a writer goroutine that coalesces
// queued requests into as few writes as possible and, with
// Config.Keepalive, a keepalive goroutine that pings it when idle.
type conn struct {
	nc    net.Conn
	stats *clientStats
	// addr is the address it was dialed to, as the Client lists it; gen is
	// the ring gen it was dialed under.
	addr string
	gen  uint64
	// writeTimeout bounds one write; a write that blocks longer (a peer
	// that stopped reading) fails the connection.
	writeTimeout time.Duration
	// keepalive is Config.Keepalive, nil without keepalive; onLost is
	// Config.OnConnLost.
	keepalive *KeepaliveConfig
	onLost    func(addr string, err error)
	// onDrain, when set, is told once that the server drained c.
	onDrain func(c *conn)
	// lastRead is when the reader last returned from a read, in mono
	// time; kept only with keepalive.
	lastRead atomic.Int64

	wake chan struct{} // capacity 1: requests are queued for the writer

	// mu guards pending, dl, timer, armed, wq, queued,
	// pingQueued and err. One lock both registers a request and queues
	// it, so a caller pays for one lock per attempt.
	mu         sync.Mutex
	pending    map[uint64]*waiter // attempts waiting for a response, by ID
	dl         deadlines          // the same attempts, by deadline
	timer      *time.Timer        // runs expire; nil until first armed
	armed      int64              // mono time timer is armed for; 0 when not armed
	wq         []byte             // encoded requests the writer has not taken yet
	queued     []uint64           // IDs of the requests in wq, in order
	pingQueued bool               // wq holds a keepalive ping
	err        error              // why the connection died; nil while alive

	// pingEnd is how many bytes the connection had written, counting from
	// its first, when the write carrying the last ping returned; ackBase
	// is the peer's acknowledged bytes at the start (the SYN counts). Both
	// only with keepalive.
	pingEnd atomic.Uint64
	ackBase uint64
	// pingWritten (capacity 1) tells the keepalive goroutine that the
	// write carrying its ping returned.
	pingWritten chan struct{}

	// maxWritten is the highest attempt ID handed to a write, stored
	// before the write: a drain frame naming more is a protocol error.
	maxWritten atomic.Uint64
	// drained is set, and drainCh closed, once the server's drain frame
	// came (under mu): the connection takes no new attempt, sends
	// nothing more, and is kept until the server closes it.
	drained atomic.Bool
	drainCh chan struct{}

	dead      atomic.Bool
	done      chan struct{} // closed by fail
	readDone  chan struct{} // closed when the reader exits
	writeDone chan struct{} // closed when the writer exits
	kaDone    chan struct{} // closed when the keepalive goroutine exits; nil without keepalive
}

// newConn starts the goroutines of a connection dialed to addr under ring
// gen, configured by cfg, which it does not keep; onDrain, if not nil, is
// told once if the server drains it.
func newConn(nc net.Conn, stats *clientStats, cfg *Config, addr string, gen uint64, onDrain func(*conn)) *conn {
	c := &conn{
		nc:           nc,
		stats:        stats,
		addr:         addr,
		gen:          gen,
		writeTimeout: cfg.WriteTimeout,
		keepalive:    cfg.Keepalive,
		onLost:       cfg.OnConnLost,
		onDrain:      onDrain,
		wake:         make(chan struct{}, 1),
		pending:      make(map[uint64]*waiter),
		drainCh:      make(chan struct{}),
		done:         make(chan struct{}),
		readDone:     make(chan struct{}),
		writeDone:    make(chan struct{}),
	}
	go c.readLoop()
	go c.writeLoop()
	if c.keepalive != nil {
		c.lastRead.Store(mono())
		c.ackBase, _ = bytesAcked(nc)
		c.pingWritten = make(chan struct{}, 1)
		c.kaDone = make(chan struct{})
		go c.keepaliveLoop(*c.keepalive)
	}
	return c
}

// submit gives f the next ID from ids, registers w as its waiter, giving
// up at deadline (mono time), and queues f for the writer, all under one
// lock and before any byte of f can be written: requests are written in
// the order of their IDs, which a drain frame's last ID relies on. An
// error wrapping errNotStarted means the connection is dead or draining,
// or f could not be encoded: nothing of f will ever be written and
// nothing was registered. Once submit returns nil the request counts as
// written: the writer may put it on the wire at any moment, and w gets
// exactly one reply unless remove takes it out first.
func (c *conn) submit(f *proto.Frame, w *waiter, deadline int64, ids *atomic.Uint64) error {
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return fmt.Errorf("%w: connection already dead: %w", errNotStarted, err)
	}
	if c.drained.Load() {
		c.mu.Unlock()
		return fmt.Errorf("%w: %w", errNotStarted, ErrDrained)
	}
	f.ID = ids.Add(1)
	var err error
	if c.wq, err = proto.AppendFrame(c.wq, f); err != nil {
		c.mu.Unlock()
		return fmt.Errorf("%w: %w", errNotStarted, err)
	}
	w.id, w.deadline = f.ID, deadline
	c.pending[f.ID] = w
	c.dl.push(w)
	if c.dl[0] == w && (c.armed == 0 || deadline < c.armed) {
		c.arm(deadline)
	}
	c.queued = append(c.queued, f.ID)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return nil
}

// cancelIDBit marks the request IDs of ctl.cancel requests: the
// attempt's own ID with the top bit set, so that it is unique on the
// connection, never collides with an attempt's ID (those count up from 1)
// and lets the reader drop its answer without counting it as late.
const cancelIDBit = 1 << 63

// cancel queues a ctl.cancel for the attempt with request ID id, sent
// earlier on c, and returns at once: nobody waits for its answer, which
// the reader drops. It does nothing on a dead connection, where nothing
// more can be sent. It reports whether the cancel was queued.
func (c *conn) cancel(id uint64) bool {
	return c.queueControl(&proto.Frame{
		Type: proto.TypeRequest, ID: cancelIDBit | id, Method: serverapi.MethodCancel,
		Payload: strconv.AppendUint([]byte("id="), id, 10),
	}, false)
}

// queueControl queues f, a control request nobody waits for, and wakes
// the writer; ping marks it as keepalive's ping, so that the writer
// signals pingWritten once the write carrying it returns. It reports
// false on a dead connection, where nothing more can be sent.
func (c *conn) queueControl(f *proto.Frame, ping bool) bool {
	c.mu.Lock()
	if c.err != nil || c.drained.Load() {
		c.mu.Unlock()
		return false
	}
	var err error
	// The frame is small and well formed: encoding cannot fail.
	if c.wq, err = proto.AppendFrame(c.wq, f); err != nil {
		c.mu.Unlock()
		return false
	}
	c.pingQueued = c.pingQueued || ping
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return true
}

// remove deletes the pending entry for id and reports whether it was still
// there. An attempt that gives up calls it first; if it returns false a
// reply has already been, or is being, handed over.
func (c *conn) remove(id uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.pending[id]
	if ok {
		delete(c.pending, id)
		c.dl.remove(w.idx)
	}
	return ok
}

// arm sets the deadline timer to fire at at (mono time). Call it holding
// mu. The timer is armed for the earliest deadline or earlier: an attempt
// answered before its deadline leaves it armed, and expire, finding
// nothing due, arms it for the next.
func (c *conn) arm(at int64) {
	d := time.Duration(at - mono())
	if c.timer == nil {
		c.timer = time.AfterFunc(d, c.expire)
	} else {
		c.timer.Reset(d)
	}
	c.armed = at
}

// expire hands a timed-out reply to every attempt whose deadline has
// passed, taking it out of pending first so that its answer, should one
// come, is dropped as late; then it arms the timer for the next deadline.
func (c *conn) expire() {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	now := mono()
	var expired []*waiter // timeouts are rare: a fresh slice each time
	for len(c.dl) > 0 && c.dl[0].deadline <= now {
		w := c.dl[0]
		c.dl.remove(0)
		delete(c.pending, w.id)
		expired = append(expired, w)
	}
	c.armed = 0
	if len(c.dl) > 0 {
		c.arm(c.dl[0].deadline)
	}
	c.mu.Unlock()
	for _, w := range expired {
		w.ch <- reply{timedOut: true}
	}
}

// writeLoop writes whatever requests are queued in one write call, so
// concurrent callers share syscalls. It owns the socket's write side.
func (c *conn) writeLoop() {
	defer close(c.writeDone)
	var spare []byte
	var spareIDs []uint64
	var written uint64 // bytes written so far
	for {
		select {
		case <-c.wake:
		case <-c.done:
			return
		}
		// Let callers that are already runnable queue their requests too,
		// so that one write carries them all.
		runtime.Gosched()
		// Swap buffers: senders append to the spare while buf is written.
		c.mu.Lock()
		buf, ids, ping := c.wq, c.queued, c.pingQueued
		c.wq, c.queued, c.pingQueued = spare[:0], spareIDs[:0], false
		c.mu.Unlock()
		spare, spareIDs = buf, ids
		if len(buf) == 0 {
			continue
		}
		if len(ids) > 0 {
			c.maxWritten.Store(ids[len(ids)-1])
		}
		if err := c.nc.SetWriteDeadline(time.Now().Add(c.writeTimeout)); err != nil {
			c.fail(fmt.Errorf("write: %w", err))
			return
		}
		if _, err := c.nc.Write(buf); err != nil {
			c.fail(fmt.Errorf("write: %w", err))
			return
		}
		written += uint64(len(buf))
		if ping {
			c.pingEnd.Store(written)
			select {
			case c.pingWritten <- struct{}{}:
			default:
			}
		}
	}
}

// fail kills the connection once: it records err, closes the socket and
// hands every pending attempt the same error. Attempts whose requests were
// still queued are told they were not sent. Any err but ErrClosed counts
// the connection as lost, before any attempt hears of it.
func (c *conn) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	c.dead.Store(true)
	pending, unsent := c.pending, c.queued
	c.pending, c.wq, c.queued = nil, nil, nil
	for _, w := range c.dl {
		w.idx = -1
	}
	c.dl = nil
	if c.timer != nil {
		c.timer.Stop()
	}
	c.mu.Unlock()
	// The server closing a drained connection is the end the drain
	// promised, not a loss.
	if !errors.Is(err, ErrClosed) && !c.drained.Load() {
		c.stats.connsLost.Add(1)
		if errors.Is(err, ErrKeepaliveTimeout) {
			c.stats.keepaliveTimeouts.Add(1)
		}
	}
	close(c.done)
	c.nc.Close()
	for id, w := range pending {
		w.ch <- reply{err: err, notSent: slices.Contains(unsent, id)}
	}
}

// lost reports whether the connection died of a failure (a read or write
// error, the peer closing it, a bad frame) rather than being closed by
// the client or, drained, by the server.
func (c *conn) lost() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err != nil && !errors.Is(c.err, ErrClosed) && !c.drained.Load()
}

// close fails the connection with ErrClosed and waits for its goroutines.
func (c *conn) close() {
	c.fail(ErrClosed)
	<-c.readDone
	<-c.writeDone
	if c.kaDone != nil {
		<-c.kaDone
	}
}

// readLoop owns the socket's read side. It exits only after the
// connection failed, and then calls Config.OnConnLost if the connection
// was lost rather than closed: every failure, whoever detected it, closes
// the socket and so ends the reader, which makes it the one goroutine
// that sees each death exactly once.
func (c *conn) readLoop() {
	defer close(c.readDone)
	if c.onLost != nil {
		defer func() {
			c.mu.Lock()
			err := c.err
			c.mu.Unlock()
			if !errors.Is(err, ErrClosed) && !c.drained.Load() {
				c.onLost(c.addr, err)
			}
		}()
	}
	fr := proto.NewFrameReader(c.nc, proto.TypeResponse, 0)
	for {
		frames, err := fr.ReadBatch()
		if c.keepalive != nil {
			c.lastRead.Store(mono())
		}
		if fr.Buffered() > 0 && err == nil {
			c.stats.readsMidFrame.Add(1)
		}
		if len(frames) > 1 {
			c.stats.readsMultiFrame.Add(1)
		}
		for i := range frames {
			c.deliver(&frames[i])
		}
		if err == nil {
			continue
		}
		var pe *proto.ProtocolError
		if errors.As(err, &pe) {
			c.stats.protocolErrors.Add(1)
		}
		p := fr.Buffered()
		c.stats.partialBytes.Add(int64(p))
		c.fail(&ConnLostError{Err: err, Partial: p})
		return
	}
}

// deliver hands f to the attempt that sent it, or drops and counts it when
// that attempt is gone. It never hands a response to anyone else.
func (c *conn) deliver(f *proto.Frame) {
	if f.Type == proto.TypeDrain {
		c.drainTo(f.ID)
		return
	}
	c.mu.Lock()
	w, ok := c.pending[f.ID]
	if ok {
		delete(c.pending, f.ID)
		c.dl.remove(w.idx)
	}
	c.mu.Unlock()
	if !ok {
		// The answers to ctl.cancel and ctl.ping are expected and nobody
		// waits for them.
		if f.ID&(cancelIDBit|pingIDBit) == 0 {
			c.stats.lateDropped.Add(1)
		}
		return
	}
	w.ch <- reply{f: *f}
}

// drainTo handles the server's drain frame naming last: every attempt
// pending above it was not taken, and is handed a drained reply; those at
// or below it go on waiting for their answers. Nothing more is written:
// the server would drop it. A drain frame naming an ID above any written
// is a protocol error that kills the connection; a second drain frame
// changes nothing.
func (c *conn) drainTo(last uint64) {
	c.mu.Lock()
	if c.err != nil || c.drained.Load() {
		c.mu.Unlock()
		return
	}
	if written := c.maxWritten.Load(); last > written {
		c.mu.Unlock()
		c.stats.protocolErrors.Add(1)
		c.fail(&ConnLostError{Err: &proto.ProtocolError{
			Reason: fmt.Sprintf("DRAIN names id %d, above any written on the connection (%d)", last, written)}})
		return
	}
	c.drained.Store(true)
	var above []*waiter
	for id, w := range c.pending {
		if id > last {
			above = append(above, w)
			delete(c.pending, id)
			c.dl.remove(w.idx)
		}
	}
	c.wq, c.queued, c.pingQueued = nil, nil, false
	c.mu.Unlock()
	close(c.drainCh)
	c.stats.drains.Add(1)
	if c.onDrain != nil {
		c.onDrain(c)
	}
	for _, w := range above {
		w.ch <- reply{err: ErrDrained, drained: true}
	}
}
