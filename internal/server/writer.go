package server

import (
	"errors"
	"math/rand/v2"
	"net"
	"runtime"
	"time"

	"github.com/rpcbench/rpcbench/internal/serverapi"
)

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
