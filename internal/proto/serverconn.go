package proto

import (
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// serverConn is one accepted connection: a reader goroutine that decodes
// and dispatches requests, and a writer goroutine that owns every write.
type serverConn struct {
	s  *Server
	nc net.Conn

	wake chan struct{} // capacity 1: the writer has work

	mu     sync.Mutex // guards out, closed, timers
	out    []outItem
	closed bool
	timers map[*time.Timer]struct{} // pending late responses

	closeOnce sync.Once
	done      chan struct{} // closed by close
}

// outItem is one thing for the writer to do, in order.
type outItem struct {
	b     []byte
	close bool // close the connection after writing b
}

func newServerConn(s *Server, nc net.Conn) *serverConn {
	return &serverConn{
		s:      s,
		nc:     nc,
		wake:   make(chan struct{}, 1),
		timers: make(map[*time.Timer]struct{}),
		done:   make(chan struct{}),
	}
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

// send queues b for writing.
func (c *serverConn) send(b []byte) { c.enqueue(outItem{b: b}) }

// sendThenClose queues b (possibly nil) and then a close of the connection.
func (c *serverConn) sendThenClose(b []byte) { c.enqueue(outItem{b: b, close: true}) }

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

func (c *serverConn) enqueue(it outItem) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.out = append(c.out, it)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *serverConn) writeLoop() {
	defer c.s.wg.Done()
	defer c.close()
	var rng *rand.Rand
	if c.s.cfg.Chunk {
		rng = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	var buf []byte
	for {
		select {
		case <-c.wake:
		case <-c.done:
			return
		}
		if rng != nil {
			// Chunk mode: let more responses pile up so that one write
			// sequence carries several frames.
			select {
			case <-time.After(c.s.cfg.ChunkWindow):
			case <-c.done:
				return
			}
		}
		c.mu.Lock()
		items := c.out
		c.out = nil
		c.mu.Unlock()
		buf = buf[:0]
		frames, closeAfter := 0, false
		for _, it := range items {
			if len(it.b) > 0 {
				buf = append(buf, it.b...)
				frames++
			}
			if it.close {
				closeAfter = true
				break
			}
		}
		if err := c.write(buf, rng); err != nil {
			return
		}
		c.s.counters.framesSent.Add(int64(frames))
		if closeAfter {
			c.s.log.Printf("CONN_CLOSE_INJECTED remote=%v", c.nc.RemoteAddr())
			return
		}
	}
}

// write writes b in one call, or in random 1-13 byte pieces when rng is set.
func (c *serverConn) write(b []byte, rng *rand.Rand) error {
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
		c.out = nil
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
