// Package sut is the harness's side of the server-under-test protocol
// (adapters/SERVER-PROTOCOL.md, rpcbench-server/1): it starts a server
// adapter as its own process, completes the handshake, and keeps the
// events its handlers report, checked against the protocol's rules.
package sut

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rpcbench/rpcbench/internal/proc"
)

// Protocol is the version of the protocol the harness speaks.
const Protocol = "rpcbench-server/1"

// The protocol's bounds.
const (
	// ServingTimeout bounds the wait for serving after init.
	ServingTimeout = 10 * time.Second
	// ShutdownTimeout bounds the wait for shutdown_ok, and then for the
	// process's exit: the adapter's own graceful stop takes up to 2s,
	// and a loaded machine may take as long again to say so.
	ShutdownTimeout = 5 * time.Second
	// MaxLine is the longest line either side may write.
	MaxLine = 1 << 20
)

// The methods a server adapter serves.
var Methods = []string{"Get", "Debit", "Echo"}

// The states an end event may report of the handler's context.
const (
	CtxActive           = "active"
	CtxCancelled        = "cancelled"
	CtxDeadlineExceeded = "deadline_exceeded"
)

// Spec says how to start one server adapter.
type Spec struct {
	// Bin is the adapter; it is started with Args (default: "serve").
	Bin  string
	Args []string
	// Env, when not nil, is the adapter's whole environment.
	Env []string
	// Scenario is sent in init, for the adapter's logs.
	Scenario string
	// Stderr receives the adapter's stderr; nil discards it. Its last
	// lines are also kept, to quote in an *Error.
	Stderr io.Writer
	// Lines, when not nil, receives every line the adapter writes on
	// stdout, verbatim: the record the harness judged.
	Lines io.Writer
}

// Info is what the adapter's serving line says.
type Info struct {
	Stack, Version, Runtime, Addr string
}

// Event is one handler event: a start, an exec or an end.
type Event struct {
	Type   string // "start", "exec" or "end"
	Call   string
	Method string
	// DeadlineMs is a start's deadline left, nil without one.
	DeadlineMs *float64
	// Account, Amount and Balance are an exec's.
	Account         string
	Amount, Balance int64
	// Executed, Ctx and Code are an end's.
	Executed bool
	Ctx      string
	Code     string
	// At is when the harness read the line.
	At time.Time
}

// Error is an adapter that broke the protocol: an ERROR of the scenario,
// naming the adapter.
type Error struct {
	Adapter string
	Text    string
}

func (e *Error) Error() string { return fmt.Sprintf("sut: server adapter %s: %s", e.Adapter, e.Text) }

// Server is a running server adapter. Its methods may be called
// concurrently.
type Server struct {
	name  string
	child *proc.Proc
	stdin io.WriteCloser

	mu     sync.Mutex // guards the fields below
	info   Info
	events []Event
	open   map[[2]string]*handlers // handlers started and not ended, by call and method
	err    error                   // the first protocol violation
	phase  int                     // 0 before serving, 1 serving, 2 shutdown sent, 3 shutdown_ok
	change chan struct{}           // closed and replaced whenever the fields change

	exited chan struct{} // closed when the process has exited and its exit is judged
}

// Start starts the adapter and waits for its serving line. ctx bounds
// the start only; the process lives until Close. On failure the process
// is killed and the error is an *Error, or ctx's.
func Start(ctx context.Context, spec Spec) (*Server, error) {
	args := spec.Args
	if args == nil {
		args = []string{"serve"}
	}
	// A process group of its own, killed as a whole, which lives until
	// Close whatever becomes of ctx.
	child, err := proc.Start(context.Background(), proc.Spec{
		Bin: spec.Bin, Args: args, Env: spec.Env,
		StdinPipe: true, StdoutPipe: true, Stderr: spec.Stderr, Group: true,
	})
	if err != nil {
		return nil, fmt.Errorf("sut: start %s: %w", spec.Bin, err)
	}
	s := &Server{name: spec.Bin, child: child, stdin: child.Stdin, open: map[[2]string]*handlers{}, change: make(chan struct{}), exited: make(chan struct{})}
	readDone := make(chan struct{})
	go func() {
		defer child.Stdout.Close()
		s.read(child.Stdout, spec.Lines)
		close(readDone)
	}()
	go func() {
		<-readDone
		err := child.Err()
		s.mu.Lock()
		if s.phase < 3 {
			s.failLocked("exited before shutdown_ok (%v)", err)
		} else if err != nil {
			s.failLocked("exited with %v after shutdown", err)
		}
		s.mu.Unlock()
		close(s.exited)
	}()
	s.send(map[string]string{"type": "init", "protocol": Protocol, "scenario": spec.Scenario})
	t := time.NewTimer(ServingTimeout)
	defer t.Stop()
	for {
		s.mu.Lock()
		phase, perr, ch := s.phase, s.err, s.change
		s.mu.Unlock()
		if perr != nil {
			s.kill()
			return nil, perr
		}
		if phase >= 1 {
			return s, nil
		}
		select {
		case <-ch:
		case <-t.C:
			s.fail("no serving line within %v", ServingTimeout)
		case <-ctx.Done():
			s.kill()
			return nil, ctx.Err()
		}
	}
}

// Info returns what the serving line said.
func (s *Server) Info() Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.info
}

// Err returns the first protocol violation so far, an *Error, or nil.
func (s *Server) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Events returns the events so far, in the order read.
func (s *Server) Events() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events)
}

// Await waits until an event matching match has been read, and returns
// it: an error when ctx ends first, or the adapter broke the protocol.
func (s *Server) Await(ctx context.Context, match func(Event) bool) (Event, error) {
	for i := 0; ; {
		s.mu.Lock()
		evs, perr, ch := s.events[i:], s.err, s.change
		i = len(s.events)
		s.mu.Unlock()
		for _, e := range evs {
			if match(e) {
				return e, nil
			}
		}
		if perr != nil {
			return Event{}, perr
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

// Close sends shutdown, waits for shutdown_ok and the process's exit,
// and returns the first protocol violation of the whole session, if
// any. The process is killed whatever happens.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.phase == 1 {
		s.phase = 2
	}
	s.mu.Unlock()
	s.send(map[string]string{"type": "shutdown"})
	t := time.NewTimer(ShutdownTimeout)
	defer t.Stop()
	for {
		s.mu.Lock()
		phase, ch := s.phase, s.change
		s.mu.Unlock()
		if phase == 3 {
			break
		}
		select {
		case <-ch:
			continue
		case <-s.exited:
		case <-t.C:
			s.fail("no shutdown_ok within %v", ShutdownTimeout)
		}
		break
	}
	s.stdin.Close()
	t.Reset(ShutdownTimeout)
	select {
	case <-s.exited:
	case <-t.C:
		s.fail("did not exit within %v of the end of its stdin", ShutdownTimeout)
		s.kill()
	}
	return s.Err()
}

// kill kills the process group and waits for the exit.
func (s *Server) kill() {
	s.child.SignalGroup(syscall.SIGKILL)
	s.stdin.Close()
	<-s.exited
}

func (s *Server) send(v any) {
	b, _ := json.Marshal(v)
	s.stdin.Write(append(b, '\n')) // an adapter that cannot take it is judged by what follows
}

func (s *Server) fail(format string, args ...any) {
	s.mu.Lock()
	s.failLocked(format, args...)
	s.mu.Unlock()
}

func (s *Server) failLocked(format string, args ...any) {
	if s.err == nil {
		text := fmt.Sprintf(format, args...)
		if tail := strings.TrimSpace(s.child.Stderr(stderrLines)); tail != "" {
			text += "; its stderr ends: " + tail
		}
		s.err = &Error{Adapter: s.nameLocked(), Text: text}
		s.changedLocked()
	}
}

func (s *Server) nameLocked() string {
	if s.info.Stack != "" {
		return fmt.Sprintf("%s (%s %s)", s.name, s.info.Stack, s.info.Version)
	}
	return s.name
}

func (s *Server) changedLocked() {
	close(s.change)
	s.change = make(chan struct{})
}

// read reads the adapter's lines until its stdout ends.
func (s *Server) read(r io.Reader, lines io.Writer) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLine+1)
	for n := 1; sc.Scan(); n++ {
		at := time.Now()
		if lines != nil {
			lines.Write(append(sc.Bytes(), '\n'))
		}
		s.mu.Lock()
		if err := s.lineLocked(sc.Bytes(), at); err != nil {
			s.failLocked("line %d %q: %v", n, sc.Bytes(), err)
		}
		s.mu.Unlock()
	}
	if err := sc.Err(); err != nil {
		s.fail("stdout: %v", err)
	}
	io.Copy(io.Discard, r)
}

// stderrLines is how many of its last stderr lines an error quotes.
const stderrLines = 5
