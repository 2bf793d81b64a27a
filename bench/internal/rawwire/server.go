package rawwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
)

// ErrServerClosed is returned by Serve after Close.
var ErrServerClosed = errors.New("rawwire: server closed")

// Server echoes frames, or answers them with a handler. Each connection has
// one goroutine that reads into a 64 KiB buffer and writes back every
// complete frame it holds in one write; an incomplete tail waits for the
// next read.
type Server struct {
	// NewHandler, when set before Serve, is called once per connection
	// for the handler that answers its frames, called by that
	// connection's goroutine only: it appends the answer's payload to
	// dst and returns the extended slice. payload aliases the read
	// buffer and is valid only during the call. An answer longer than
	// MaxPayload closes the connection. Nil echoes every frame as it
	// came, without looking inside.
	NewHandler func() func(dst, payload []byte) []byte

	wg sync.WaitGroup // connection goroutines

	mu     sync.Mutex // guards ln, conns, closed
	ln     net.Listener
	conns  map[net.Conn]struct{}
	closed bool
}

// Serve accepts connections on ln until Close or an accept error. It
// always returns a non-nil error; after Close it is ErrServerClosed.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.ln = ln
	s.conns = make(map[net.Conn]struct{})
	s.mu.Unlock()
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return ErrServerClosed
			}
			return err
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			return ErrServerClosed
		}
		s.conns[nc] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serveConn(nc)
	}
}

// Close stops accepting, closes every connection and waits for their
// goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	if s.ln != nil {
		s.ln.Close()
	}
	for nc := range s.conns {
		nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

func (s *Server) serveConn(nc net.Conn) {
	defer s.wg.Done()
	defer func() {
		nc.Close()
		s.mu.Lock()
		delete(s.conns, nc)
		s.mu.Unlock()
	}()
	buf := make([]byte, bufSize)
	var handle func(dst, payload []byte) []byte
	if s.NewHandler != nil {
		handle = s.NewHandler()
	}
	var out []byte // handle's answers, reused from read to read
	n := 0
	for {
		m, rerr := nc.Read(buf[n:])
		n += m
		end, ferr := completeLen(buf[:n])
		if end > 0 {
			reply := buf[:end]
			if handle != nil {
				var err error
				if out, err = answer(handle, out[:0], buf[:end]); err != nil {
					return
				}
				reply = out
			}
			if _, err := nc.Write(reply); err != nil {
				return
			}
			n = copy(buf, buf[end:n])
		}
		if rerr != nil || ferr != nil {
			return
		}
	}
}

// answer appends to dst a frame answering each whole frame of b, with
// handle's payload and the request's id.
func answer(handle func(dst, payload []byte) []byte, dst, b []byte) ([]byte, error) {
	for len(b) > 0 {
		id, payload, rest, _, _ := NextFrame(b) // b holds whole frames only
		start := len(dst)
		dst = AppendFrame(dst, id, nil)
		dst = handle(dst, payload)
		n := len(dst) - start - HeaderLen
		if n > MaxPayload {
			return dst, fmt.Errorf("%w: answer of %d bytes", ErrFrameTooLong, n)
		}
		binary.BigEndian.PutUint32(dst[start:], uint32(n))
		b = rest
	}
	return dst, nil
}
