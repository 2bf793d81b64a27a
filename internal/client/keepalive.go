package client

import (
	"errors"
	"fmt"
	"time"

	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// ErrKeepaliveTimeout is the cause, inside a *ConnLostError, of the
// attempts on a connection that keepalive declared dead: nothing was
// read from it for Config.Keepalive.Timeout after a ping was written.
var ErrKeepaliveTimeout = errors.New("client: keepalive timeout")

// pingIDBit marks the request IDs of keepalive pings: the bit with the
// ping's number on its connection (1, 2, ...) below it. Attempts count up
// from 1 and would need 2^62 calls to reach it; ctl.cancel IDs have
// cancelIDBit set, which a ping never has. The reader drops a ping's
// answer without counting it as late.
const pingIDBit = 1 << 62

// keepaliveLoop is the connection's keepalive, as gRPC's with
// PermitWithoutStream: once nothing has been read for ka.Time, pending
// attempts or not, it sends a ctl.ping; if nothing at all is read within
// ka.Timeout of the ping being written, and (on Linux) the peer has not
// acknowledged any more of our bytes either, it fails the connection with
// ErrKeepaliveTimeout. A ping whose write blocks is left to
// Config.WriteTimeout. It runs until the connection dies or is drained:
// a draining server drops pings, and their silence would otherwise kill
// the connection before its answers come.
func (c *conn) keepaliveLoop(ka KeepaliveConfig) {
	defer close(c.kaDone)
	t := time.NewTimer(ka.Time)
	defer t.Stop()
	for seq := uint64(1); ; seq++ {
		last, alive := c.awaitIdle(t, ka.Time)
		if !alive || !c.ping(pingIDBit|seq) {
			return
		}
		select {
		case <-c.pingWritten:
		case <-c.done:
			return
		case <-c.drainCh:
			return
		}
		c.stats.pingsSent.Add(1)
		acked, canTell := bytesAcked(c.nc)
		for {
			// Any read after last counts, even one that came before the
			// goroutine heard the ping was written: the answer can beat
			// it.
			read, alive := c.awaitRead(t, last, ka)
			if !alive {
				return
			}
			if read {
				break
			}
			// Nothing read, but a peer whose host still acknowledges the
			// bytes before the ping is there: the ping is queued behind
			// them, a large request crossing a slow link, and its answer
			// cannot come before they have crossed. Wait another Timeout
			// for as long as they keep being acknowledged and the ping's
			// own bytes are not yet. Bytes written after the ping do not
			// count: a hung peer's kernel acknowledges new requests for
			// as long as its receive buffer has room.
			if now, ok := bytesAcked(c.nc); canTell && ok && now > acked && now-c.ackBase < c.pingEnd.Load() {
				acked = now
				continue
			}
			c.fail(&ConnLostError{Err: fmt.Errorf("%w: nothing read for %v after ping %d", ErrKeepaliveTimeout, ka.Timeout, seq)})
			return
		}
	}
}

// awaitIdle returns once nothing has been read for d, with the time of
// the last read (mono); alive is false once the connection died or was
// drained.
func (c *conn) awaitIdle(t *time.Timer, d time.Duration) (last int64, alive bool) {
	for {
		last = c.lastRead.Load()
		idle := time.Duration(mono() - last)
		if idle >= d {
			return last, true
		}
		t.Reset(d - idle)
		select {
		case <-t.C:
		case <-c.done:
			return 0, false
		case <-c.drainCh:
			return 0, false
		}
	}
}

// awaitRead waits up to ka.Timeout for a read that returned after
// since (mono time) and reports whether one did; alive is false once the
// connection died or was drained. It looks every ka.Time at most, as gRPC does, so that
// a ping answered at once lets the next idle period start from that
// answer, not from the end of ka.Timeout.
func (c *conn) awaitRead(t *time.Timer, since int64, ka KeepaliveConfig) (read, alive bool) {
	for left := ka.Timeout; left > 0; {
		step := min(ka.Time, left)
		t.Reset(step)
		select {
		case <-t.C:
		case <-c.done:
			return false, false
		case <-c.drainCh:
			return false, false
		}
		if c.lastRead.Load() > since {
			return true, true
		}
		left -= step
	}
	return false, true
}

// ping queues a ctl.ping with request ID id for the writer, which
// signals pingWritten once the write carrying it returns. Nobody waits
// for the answer. It reports false on a dead connection.
func (c *conn) ping(id uint64) bool {
	return c.queueControl(&proto.Frame{Type: proto.TypeRequest, ID: id, Method: serverapi.MethodPing}, true)
}
