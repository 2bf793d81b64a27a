package proto

import (
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"sync"
	"time"
)

// serverConn is one accepted connection: a reader goroutine that decodes
// and dispatches requests, and a writer goroutine that owns every write.
type serverConn struct {
	s  *Server
	nc net.Conn

	wake    chan struct{} // capacity 1: the writer has work
	drained chan struct{} // capacity 1: the writer took the queued output

	// Used by the reader goroutine only: its payload buffer for requests
	// it executes, and whether it queued answers it has not flushed.
	scratch  []byte
	unsignal bool

	wmu   sync.Mutex // held while writing; guards spare and rng
	spare []byte     // the output buffer not in use, swapped with out
	rng   *rand.Rand // chunk mode's piece sizes; nil otherwise

	mu        sync.Mutex // guards out, outFrames, closing, closed, timers
	out       []byte     // encoded responses the writer has not taken yet
	outFrames int        // frames (whole or partial) in out
	closing   bool       // close the connection once out is written
	closed    bool
	timers    map[*time.Timer]struct{} // pending late responses

	closeOnce sync.Once
	done      chan struct{} // closed by close
}

func newServerConn(s *Server, nc net.Conn) *serverConn {
	c := &serverConn{
		s:       s,
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

func (c *serverConn) readLoop() {
	defer c.s.wg.Done()
	defer c.close()
	var dec Decoder
	buf := make([]byte, readBufSize)
	for {
		n, err := c.nc.Read(buf)
		if n > 0 {
			frames, derr := dec.Feed(buf[:n])
			now := time.Now()
			for _, f := range frames {
				if f.Type != TypeRequest {
					derr = protocolErrorf("%v frame from client", f.Type)
					break
				}
				c.s.dispatch(c, f, now)
			}
			if !c.flushHeld() || !c.awaitRoom() {
				return
			}
			if derr != nil {
				c.s.counters.protocolErrors.Add(1)
				c.s.log.Printf("PROTOCOL_ERROR remote=%v err=%q", c.nc.RemoteAddr(), derr)
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				c.s.log.Printf("CONN_READ_ERROR remote=%v err=%q", c.nc.RemoteAddr(), err)
			}
			if p := dec.Buffered(); p > 0 {
				c.s.log.Printf("CONN_CLOSED_MID_FRAME remote=%v buffered=%d", c.nc.RemoteAddr(), p)
			}
			return
		}
	}
}

// send queues the encoded frame b for writing.
func (c *serverConn) send(b []byte) { c.enqueue(b, false) }

// sendThenClose queues b (possibly nil or part of a frame) and then a
// close of the connection; anything queued later is dropped.
func (c *serverConn) sendThenClose(b []byte) { c.enqueue(b, true) }

// sendFrame encodes f straight into the output queue and wakes the
// writer.
func (c *serverConn) sendFrame(f *Frame) {
	if c.queueFrame(f) {
		c.signal()
	}
}

// queueFrame encodes f into the output queue without waking the writer;
// the caller flushes or signals. It reports whether f was queued.
func (c *serverConn) queueFrame(f *Frame) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.closing {
		return false
	}
	var err error
	if c.out, err = appendResponse(c.out, f); err != nil {
		return false
	}
	c.outFrames++
	return true
}

// sendAt queues b at time at, unless the connection is closed by then.
func (c *serverConn) sendAt(b []byte, at time.Time) {
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
	})
	c.timers[t] = struct{}{}
}

func (c *serverConn) enqueue(b []byte, closeAfter bool) {
	c.mu.Lock()
	if c.closed || c.closing {
		c.mu.Unlock()
		return
	}
	if len(b) > 0 {
		c.out = append(c.out, b...)
		c.outFrames++
	}
	c.closing = closeAfter
	c.mu.Unlock()
	c.signal()
}

func (c *serverConn) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *serverConn) writeLoop() {
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

// flush writes everything queued; the caller holds wmu. It returns false
// when the connection must close: the write failed, or a close was queued.
func (c *serverConn) flush() bool {
	// Swap buffers: others append to the spare while buf is written.
	c.mu.Lock()
	buf, frames, closeAfter := c.out, c.outFrames, c.closing
	c.out, c.outFrames = c.spare[:0], 0
	c.mu.Unlock()
	select {
	case c.drained <- struct{}{}:
	default:
	}
	c.spare = buf
	if err := c.write(buf, c.rng); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			c.s.counters.writeTimeouts.Add(1)
			c.s.log.Printf("WRITE_TIMEOUT remote=%v unwritten=%d timeout=%v", c.nc.RemoteAddr(), len(buf), c.s.cfg.WriteTimeout)
		}
		return false
	}
	c.s.counters.framesSent.Add(int64(frames))
	if closeAfter {
		c.s.log.Printf("CONN_CLOSE_INJECTED remote=%v", c.nc.RemoteAddr())
		return false
	}
	return true
}

// awaitRoom holds the reader back while the connection's unwritten
// answers are at MaxOutBytes, so that a client that does not read its
// answers stops being read instead of growing the server's memory. It
// returns false if the connection closed meanwhile.
func (c *serverConn) awaitRoom() bool {
	for {
		c.mu.Lock()
		full := len(c.out) >= c.s.cfg.MaxOutBytes
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
func (c *serverConn) flushHeld() bool {
	if !c.unsignal {
		return true
	}
	c.unsignal = false
	if !c.wmu.TryLock() {
		c.signal()
		return true
	}
	defer c.wmu.Unlock()
	return c.flush()
}

// write writes b in one call, or in random 1-13 byte pieces when rng is set.
func (c *serverConn) write(b []byte, rng *rand.Rand) error {
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

// close closes the socket once, stops pending late responses and drops
// anything not yet written.
func (c *serverConn) close() {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.out, c.outFrames = nil, 0
		for t := range c.timers {
			t.Stop()
		}
		c.timers = nil
		c.mu.Unlock()
		close(c.done)
		c.nc.Close()
		c.s.forget(c)
		c.s.log.Printf("CONN_CLOSED remote=%v", c.nc.RemoteAddr())
	})
}
