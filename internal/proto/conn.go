package proto

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// readBufSize is the size of each connection's read buffer.
const readBufSize = 32 << 10

// ConnLostError fails every attempt still pending on a connection that
// died: the peer closed it, a read failed, or the peer sent a bad frame.
type ConnLostError struct {
	// Err is the cause; errors.As finds a *ProtocolError here when the peer
	// sent a bad frame.
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
		return fmt.Sprintf("proto: connection lost: %s (buffered partial bytes=%d)", cause, e.Partial)
	}
	return "proto: connection lost: " + cause
}

func (e *ConnLostError) Unwrap() error { return e.Err }

// errNotStarted marks a write that never began, so its attempt was not sent.
var errNotStarted = errors.New("proto: write not started")

// ErrClosed is returned for calls on a closed Client.
var ErrClosed = errors.New("proto: client closed")

type reply struct {
	f   Frame
	err error
}

// clientConn is one TCP connection of a Client, with its reader goroutine.
type clientConn struct {
	nc    net.Conn
	stats *clientStats

	// wsem is held (full) while a request is written; a channel, not a
	// mutex, so a waiting writer can give up when its attempt ends.
	wsem chan struct{}
	wbuf []byte // guarded by wsem

	mu      sync.Mutex            // guards pending, err
	pending map[uint64]chan reply // attempts waiting for a response, by ID
	err     error                 // why the connection died; nil while alive

	dead     atomic.Bool
	readDone chan struct{} // closed when the reader goroutine exits
}

func newClientConn(nc net.Conn, stats *clientStats) *clientConn {
	c := &clientConn{
		nc:       nc,
		stats:    stats,
		wsem:     make(chan struct{}, 1),
		pending:  make(map[uint64]chan reply),
		readDone: make(chan struct{}),
	}
	go c.readLoop()
	return c
}

// register adds a pending entry before the request is written. It fails if
// the connection is already dead: the attempt was then not sent.
func (c *clientConn) register(id uint64, ch chan reply) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	c.pending[id] = ch
	return nil
}

// remove deletes the pending entry for id and reports whether it was still
// there. An attempt that gives up calls it first; if it returns false a
// reply has already been handed over.
func (c *clientConn) remove(id uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pending[id]
	delete(c.pending, id)
	return ok
}

// write sends one encoded request. A returned error wrapping errNotStarted
// means no byte was written; any other error means the write started and
// the connection has been failed, since the stream may hold half a frame.
func (c *clientConn) write(ctx context.Context, f *Frame) error {
	select {
	case c.wsem <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", errNotStarted, ctx.Err())
	}
	defer func() { <-c.wsem }()
	if c.dead.Load() {
		return fmt.Errorf("%w: connection already dead", errNotStarted)
	}
	var err error
	c.wbuf, err = AppendFrame(c.wbuf[:0], f)
	if err != nil {
		return fmt.Errorf("%w: %w", errNotStarted, err)
	}
	dl, _ := ctx.Deadline()
	if err := c.nc.SetWriteDeadline(dl); err != nil {
		return fmt.Errorf("%w: %w", errNotStarted, err)
	}
	if _, err := c.nc.Write(c.wbuf); err != nil {
		c.fail(fmt.Errorf("write: %w", err))
		return err
	}
	return nil
}

// fail kills the connection once: it records err, closes the socket and
// hands every pending attempt the same error.
func (c *clientConn) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	c.dead.Store(true)
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	c.nc.Close()
	for _, ch := range pending {
		ch <- reply{err: err}
	}
}

// close fails the connection with ErrClosed and waits for its reader.
func (c *clientConn) close() {
	c.fail(ErrClosed)
	<-c.readDone
}

func (c *clientConn) readLoop() {
	defer close(c.readDone)
	var dec Decoder
	buf := make([]byte, readBufSize)
	for {
		n, err := c.nc.Read(buf)
		if n > 0 {
			frames, derr := dec.Feed(buf[:n])
			if dec.Buffered() > 0 {
				c.stats.readsMidFrame.Add(1)
			}
			if len(frames) > 1 {
				c.stats.readsMultiFrame.Add(1)
			}
			for i := range frames {
				if frames[i].Type != TypeResponse {
					derr = protocolErrorf("%v frame from server", frames[i].Type)
					break
				}
				c.deliver(&frames[i])
			}
			if derr != nil {
				c.stats.protocolErrors.Add(1)
				c.fail(&ConnLostError{Err: derr})
				return
			}
		}
		if err != nil {
			if p := dec.Buffered(); p > 0 {
				c.stats.partialBytes.Add(int64(p))
			}
			c.fail(&ConnLostError{Err: err, Partial: dec.Buffered()})
			return
		}
	}
}

// deliver hands f to the attempt that sent it, or drops and counts it when
// that attempt is gone. It never hands a response to anyone else.
func (c *clientConn) deliver(f *Frame) {
	c.mu.Lock()
	ch, ok := c.pending[f.ID]
	delete(c.pending, f.ID)
	c.mu.Unlock()
	if !ok {
		c.stats.lateDropped.Add(1)
		return
	}
	ch <- reply{f: *f}
}

func dialConn(ctx context.Context, addr string, stats *clientStats) (*clientConn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	stats.connsOpened.Add(1)
	return newClientConn(nc, stats), nil
}

// deadlineMs converts a budget to whole milliseconds for the wire, rounding
// down but never to zero.
func deadlineMs(d time.Duration) uint32 {
	ms := d.Milliseconds()
	if ms < 1 {
		return 1
	}
	if ms > int64(^uint32(0)) {
		return ^uint32(0)
	}
	return uint32(ms)
}
