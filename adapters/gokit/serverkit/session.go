// Package serverkit is the library-independent half of a Go server
// adapter for adapters/SERVER-PROTOCOL.md (rpcbench-server/1): the
// protocol session on stdin and stdout, the in-memory bank and the
// handlers' events. An adapter supplies its library's server through
// Stack and passes each call on to Handlers.
package serverkit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"runtime"
	"time"

	"github.com/rpcbench/rpcbench/adapters/gokit/internal/line"
)

const (
	// drainTimeout bounds the graceful stop on shutdown.
	drainTimeout = 2 * time.Second
	// abandonTimeout bounds the wait, after the forced stop, for the
	// handlers it ended to write their end lines: well inside the 3 s
	// the harness gives shutdown.
	abandonTimeout = 500 * time.Millisecond
)

// Exit statuses Run returns.
const (
	ExitOK       = 0 // stdin ended
	ExitNoServer = 1 // the library's server could not be started
	ExitProtocol = 2 // a harness line could not be parsed
)

// Stack is an adapter's library: its name and version for the serving
// line, and how to serve the Bank service with it.
type Stack struct {
	Name    string // lower-case, as SERVER-PROTOCOL.md names it: "grpc-go"
	Version string // as linked, never a typed-in constant
	// New builds the library's server with its default options, its
	// handlers calling h; Run serves it on a loopback port of its own.
	// log is for the server's own errors.
	New func(h *Handlers, log *log.Logger) (Server, error)
}

// Server is a library's server.
type Server interface {
	// Serve accepts calls on ln, which it then owns, until Shutdown or
	// Close; it returns nil then, and any other error says why it
	// stopped, for the log.
	Serve(ln net.Listener) error
	// Shutdown stops it gracefully: no new calls, and those in flight
	// run to their end. It returns ctx.Err() if ctx ends first.
	Shutdown(ctx context.Context) error
	// Close stops it at once, ending the calls in flight.
	Close()
}

// session is one adapter process's protocol session.
type session struct {
	stack Stack
	out   *line.Writer
	log   *log.Logger
	h     *Handlers
	srv   Server // nil before init and after the server stopped
}

// Run serves stack's library under the protocol, reading the harness's
// lines from in until it ends, writing protocol lines to out and logs to
// errw, and returns the exit status.
func Run(in io.Reader, out, errw io.Writer, stack Stack) int {
	s := &session{stack: stack, out: line.NewWriter(out), log: log.New(errw, stack.Name+" serve: ", log.Lmicroseconds)}
	s.h = newHandlers(s.out)
	lines := line.NewReader(in, maxLine)
	inited := false
	for {
		n, typ, f, err := lines.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return s.fatal(ExitProtocol, "%v", err)
		}
		if !inited && typ != "init" {
			return s.fatal(ExitProtocol, "line %d: %s before init", n, typ)
		}
		switch typ {
		case "init":
			var w wireInit
			if err := f.Decode(&w, []string{"protocol"}, []string{"scenario"}); err != nil {
				return s.fatal(ExitProtocol, "line %d: bad init: %v", n, err)
			}
			if inited {
				return s.fatal(ExitProtocol, "line %d: a second init", n)
			}
			inited = true
			// A harness asking for another version still gets the
			// one spoken here, and stops the adapter itself.
			s.log.Printf("init: protocol %s, scenario %q", w.Protocol, w.Scenario)
			addr, err := s.serve()
			if err != nil {
				return s.fatal(ExitNoServer, "serving: %v", err)
			}
			s.log.Printf("serving on %s", addr)
			s.out.Send(wireServing{Type: "serving", Protocol: Protocol, Stack: stack.Name, Version: stack.Version,
				Runtime: runtime.Version(), Addr: addr})
		case "shutdown":
			if err := f.Decode(&struct{}{}, nil, nil); err != nil {
				return s.fatal(ExitProtocol, "line %d: bad shutdown: %v", n, err)
			}
			s.stop()
			s.out.Send(map[string]string{"type": "shutdown_ok"})
		default:
			return s.fatal(ExitProtocol, "line %d: unknown type %q", n, typ)
		}
	}
	s.stop()
	return ExitOK
}

// fatal writes a fatal line, stops the server and returns status.
func (s *session) fatal(status int, format string, args ...any) int {
	text := fmt.Sprintf(format, args...)
	s.log.Print("fatal: ", text)
	s.out.Send(wireFatal{Type: "fatal", Text: text})
	if s.srv != nil {
		s.srv.Close()
	}
	return status
}

// stop stops the server gracefully within drainTimeout, else forcibly,
// and waits for the handlers still running to write their end lines. It
// does nothing once the server has stopped.
func (s *session) stop() {
	if s.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		s.log.Printf("shutdown: not stopped gracefully in %v (%v); stopping it", drainTimeout, err)
		s.srv.Close()
	}
	if !s.h.inflight.wait(abandonTimeout) {
		s.log.Printf("shutdown: handlers still running %v after the forced stop", abandonTimeout)
	}
	s.srv = nil
}

// serve builds the stack's server and serves it on a loopback port of
// its own, returning that address, 127.0.0.1:PORT.
func (s *session) serve() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv, err := s.stack.New(s.h, s.log)
	if err != nil {
		ln.Close()
		return "", err
	}
	go func() {
		if err := srv.Serve(ln); err != nil {
			s.log.Print(err)
		}
	}()
	s.srv = srv
	return ln.Addr().String(), nil
}
