package server

import (
	"context"
	"fmt"
	"time"

	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// Drain stops the server gracefully (SPEC.md, "Drain") and closes it. It
// closes the listener, sends each connection a drain frame naming the
// last business request its reader took, finishes and answers those,
// drops everything read after the frame, and half-closes each connection
// once its requests are done; it ends when every connection has closed,
// or when ctx ends, closing the connections still open. It returns nil
// when every connection closed by itself, an error wrapping ctx's cause
// when ctx cut the drain short, and ErrClosed after Close. A drain while
// another is under way waits for it to end, or for ctx.
func (s *Server) Drain(ctx context.Context) error {
	s.mu.Lock()
	if s.drain != nil {
		done := s.drain
		s.mu.Unlock()
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("server: drain: %w", context.Cause(ctx))
		}
	}
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.drain = make(chan struct{})
	if s.ln != nil {
		s.ln.Close()
	}
	conns := s.connsLocked()
	s.mu.Unlock()
	// Logged once the deadline is fixed: what is left of it.
	timeout := "none"
	if d, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(d), 0).Round(time.Millisecond).String()
	}
	s.log.Info(serverapi.EventDrainStart, serverapi.KeyTimeout, timeout)
	for _, c := range conns {
		c.drain()
	}
	// A connection accepted before the listener closed was drained by
	// open; once the accept loops have stopped there are no more.
	s.accepting.Wait()
	cut := s.awaitConnsClosed(ctx)
	s.log.Info(serverapi.EventDrainDone, serverapi.KeyOpen, cut)
	s.Close()
	close(s.drain)
	if cut > 0 {
		return fmt.Errorf("server: drain: %d connections still open: %w", cut, context.Cause(ctx))
	}
	return nil
}

// drainFor drains the server within d, for ctl.drain and the drain fault,
// which start a drain and do not wait for it.
func (s *Server) drainFor(d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	s.Drain(ctx)
}

// awaitConnsClosed waits until no connection is open, or ctx ends; then
// it closes the connections still open, before anything else closes, so
// that an answer a closing server would give them (UNAVAILABLE "server
// closing") is dropped, and returns how many it closed.
func (s *Server) awaitConnsClosed(ctx context.Context) int {
	for {
		s.mu.Lock()
		n := len(s.conns)
		s.mu.Unlock()
		if n == 0 {
			return 0
		}
		select {
		case <-s.connsChanged:
		case <-ctx.Done():
			s.mu.Lock()
			conns := s.connsLocked()
			s.mu.Unlock()
			for _, c := range conns {
				c.close()
			}
			return len(conns)
		}
	}
}

// drain starts the connection's drain, once.
func (c *conn) drain() {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	c.beginDrain()
}

// beginDrain queues the drain frame, with the ID of the last request
// taken, and from now on the reader takes nothing; the caller holds rmu.
// It does nothing on a connection already draining.
func (c *conn) beginDrain() {
	if c.draining.Load() {
		return
	}
	c.draining.Store(true)
	c.sendFrame(&proto.Frame{Type: proto.TypeDrain, ID: c.lastTaken, Method: proto.DrainMethod}, false, nil)
	c.s.log.Info(serverapi.EventDrain, serverapi.KeyConn, c.id, serverapi.KeyID, c.lastTaken)
	c.maybeFIN()
}

// finished marks one taken request done with: answered, or dropped by a
// fault that never answers.
func (c *conn) finished() {
	if c.work.Add(-1) == 0 {
		c.maybeFIN()
	}
}

// maybeFIN asks the writer to half-close a draining connection once
// nothing it took is left: no request in work, no late answer pending.
// The answers already queued are written first.
func (c *conn) maybeFIN() {
	if !c.draining.Load() || c.work.Load() > 0 {
		return
	}
	c.mu.Lock()
	ready := !c.closed && !c.finQueued && len(c.timers) == 0
	c.finQueued = c.finQueued || ready
	c.mu.Unlock()
	if ready {
		c.signal()
	}
}

// closeWrite sends FIN, after the writer wrote every answer. The reader
// goes on reading, and dropping, until the client closes its side: a
// full close with unread bytes in the receive buffer would reset the
// connection, and a reset can discard answers the client has not read.
func (c *conn) closeWrite() {
	// Logged first: the client may close, and the drain end, the moment
	// the FIN arrives.
	c.s.log.Info(serverapi.EventDrained, serverapi.KeyConn, c.id)
	if tc, ok := c.nc.(interface{ CloseWrite() error }); ok {
		if err := tc.CloseWrite(); err != nil {
			c.s.log.Warn(serverapi.EventSockoptError, serverapi.KeyConn, c.id, serverapi.KeyErr, err.Error())
		}
	}
}
