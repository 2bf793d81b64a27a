package rawwire

import (
	"errors"
	"net"
	"sync"
)

// ErrServerClosed is returned by Serve after Close.
var ErrServerClosed = errors.New("rawwire: server closed")

// Server echoes frames. Each connection has one goroutine that reads into
// a 64 KiB buffer and writes back every complete frame it holds in one
// write; an incomplete tail waits for the next read.
type Server struct {
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
		go s.echo(nc)
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

func (s *Server) echo(nc net.Conn) {
	defer s.wg.Done()
	defer func() {
		nc.Close()
		s.mu.Lock()
		delete(s.conns, nc)
		s.mu.Unlock()
	}()
	buf := make([]byte, bufSize)
	n := 0
	for {
		m, rerr := nc.Read(buf[n:])
		n += m
		end, ferr := completeLen(buf[:n])
		if end > 0 {
			if _, err := nc.Write(buf[:end]); err != nil {
				return
			}
			n = copy(buf, buf[end:n])
		}
		if rerr != nil || ferr != nil {
			return
		}
	}
}
