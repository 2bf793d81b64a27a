// Package clientkit is the library-independent half of a Go client
// adapter for adapters/PROTOCOL.md (rpcbench-adapter/1): the protocol
// session on stdin and stdout, which decodes each call's request into
// its Bank message. An adapter supplies its library through Stack and
// makes each call through Conn.
package clientkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"runtime"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/rpcbench/rpcbench/adapters/gokit/internal/line"
)

const (
	// drainTimeout bounds how long shutdown waits for calls in flight.
	drainTimeout = 2 * time.Second
	// abandonTimeout bounds how long shutdown waits, after drainTimeout,
	// for the calls it cancelled to be answered (Stack.CancelOnShutdown):
	// well inside the 3 s the harness gives shutdown.
	abandonTimeout = 500 * time.Millisecond
)

// Exit statuses Run returns.
const (
	ExitOK       = 0 // stdin ended
	ExitProtocol = 2 // a harness line could not be parsed; a fatal line said why
)

// Stack is an adapter's client library: its name, version and
// capabilities for init_ok, and how to build a channel with it.
type Stack struct {
	// Name is lower-case, as PROTOCOL.md names it: "grpc-go". The
	// adapter's logs are prefixed by it without its hyphens, "grpcgo: ".
	Name         string
	Version      string // as linked, never a typed-in constant
	Capabilities Capabilities
	// NoWaitForReady is the text of the unsupported call_error a call
	// with wait_for_ready gets when Capabilities.WaitForReady is false;
	// "" for "NAME has no wait-for-ready".
	NoWaitForReady string
	// Dial builds the channel w configures, the first time a call names
	// its id, logging what it built to log. An error is the call's
	// call_error: a *CallError as it says, any other of kind config.
	// A channel that could not be built is not kept: a later call on
	// its id tries again.
	Dial func(w Channel, log *log.Logger) (Conn, error)
	// CancelOnShutdown, when shutdown has waited drainTimeout for the
	// calls in flight, cancels their contexts and waits abandonTimeout
	// more for their answers before closing the channels: for a library
	// that cannot close a connection with calls in flight. Without it
	// the channels are closed at once, which ends their calls.
	CancelOnShutdown bool
}

// Conn is a channel built by a library.
type Conn interface {
	// Invoke makes c once with its library, with req as its request,
	// under ctx, which carries c's deadline, and returns what the
	// library returned. It is called from many goroutines at once.
	Invoke(ctx context.Context, c Call, req proto.Message) Outcome
	// Close closes the channel's connections, at shutdown.
	Close()
}

// Outcome is what a library returned for one call.
type Outcome struct {
	Response proto.Message // nil unless the call ended OK
	Code     uint32        // the status code, 0 to 16; 0 for OK
	Message  string        // the status message
	// Headers and Trailers are metadata as the protocol carries it:
	// names in lower case, -bin values in base64, standard and padded.
	Headers, Trailers map[string][]string
	Elapsed           time.Duration // from just before the library's call to its return
}

// channel is a built channel and the configuration it was built with.
type channel struct {
	config Channel
	conn   Conn
}

// same reports whether w configures ch as it was built.
func (ch *channel) same(w Channel) bool {
	ka, kb := ch.config.Keepalive, w.Keepalive
	return ch.config.Target == w.Target && bytes.Equal(ch.config.CompactConfig(), w.CompactConfig()) &&
		(ka == nil) == (kb == nil) && (ka == nil || *ka == *kb)
}

// session is one adapter process's protocol session.
type session struct {
	stack Stack
	out   *line.Writer
	log   *log.Logger

	// ctx is every call's parent; abandon cancels it under
	// Stack.CancelOnShutdown.
	ctx     context.Context
	abandon context.CancelFunc

	mu       sync.Mutex // guards seen and channels
	seen     map[int64]bool
	channels map[string]*channel

	calls sync.WaitGroup // calls in flight
}

// Run makes calls with stack's library under the protocol, reading the
// harness's lines from in until it ends, writing protocol lines to out
// and logs to errw, and returns the exit status.
func Run(in io.Reader, out, errw io.Writer, stack Stack) int {
	ctx, abandon := context.WithCancel(context.Background())
	if stack.CancelOnShutdown {
		defer abandon()
	}
	s := &session{stack: stack, out: line.NewWriter(out),
		log: log.New(errw, strings.ReplaceAll(stack.Name, "-", "")+": ", log.Lmicroseconds),
		ctx: ctx, abandon: abandon, seen: map[int64]bool{}, channels: map[string]*channel{}}
	lines := line.NewReader(in, MaxLine)
	inited := false
	for {
		n, typ, f, err := lines.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return s.fatal("%v", err)
		}
		if !inited && typ != "init" {
			return s.fatal("line %d: %s before init", n, typ)
		}
		switch typ {
		case "init":
			var w wireInit
			if err := f.Decode(&w, []string{"protocol"}, []string{"scenario"}); err != nil || inited {
				return s.fatal("line %d: bad init: %v", n, err)
			}
			inited = true
			s.log.Printf("init: protocol %s, scenario %q", w.Protocol, w.Scenario)
			s.out.Send(wireInitOK{Type: "init_ok", Protocol: Protocol, Stack: stack.Name, Version: stack.Version,
				Runtime: runtime.Version(), Capabilities: stack.Capabilities})
		case "call":
			if code := s.startCall(n, f); code != ExitOK {
				return code
			}
		case "shutdown":
			if err := f.Decode(&struct{}{}, nil, nil); err != nil {
				return s.fatal("line %d: bad shutdown: %v", n, err)
			}
			s.drain()
			s.out.Send(map[string]string{"type": "shutdown_ok"})
		default:
			return s.fatal("line %d: unknown type %q", n, typ)
		}
	}
	s.drain()
	return ExitOK
}

// fatal writes a fatal line and returns the exit status for it.
func (s *session) fatal(format string, args ...any) int {
	text := fmt.Sprintf(format, args...)
	s.log.Print("fatal: ", text)
	s.out.Send(map[string]string{"type": "fatal", "text": text})
	return ExitProtocol
}

// drain waits up to drainTimeout for the calls in flight (then, under
// Stack.CancelOnShutdown, cancels them and waits up to abandonTimeout
// for their answers), then closes every channel.
func (s *session) drain() {
	done := make(chan struct{})
	go func() { s.calls.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(drainTimeout):
		if !s.stack.CancelOnShutdown {
			s.log.Printf("shutdown: calls still in flight after %v; closing their channels", drainTimeout)
			break
		}
		s.log.Printf("shutdown: calls still in flight after %v; cancelling them", drainTimeout)
		s.abandon()
		select {
		case <-done:
		case <-time.After(abandonTimeout):
			s.log.Printf("shutdown: calls still in flight %v after cancelling them", abandonTimeout)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, ch := range s.channels {
		ch.conn.Close()
		delete(s.channels, id)
	}
}

// startCall checks a call line and starts the call; it returns a
// non-zero exit status only for a line without a usable id.
func (s *session) startCall(n int, f line.Fields) int {
	var id int64
	if err := json.Unmarshal(f["id"], &id); err != nil || id < 1 {
		return s.fatal("line %d: call without a usable id", n)
	}
	s.mu.Lock()
	dup := s.seen[id]
	s.seen[id] = true
	s.mu.Unlock()
	if dup {
		s.callError(id, KindDuplicateID, "id %d was used before", id)
		return ExitOK
	}
	var c Call
	if err := f.Decode(&c, []string{"id", "channel", "method", "request", "deadline_ms", "metadata", "wait_for_ready"}, nil); err != nil {
		s.callError(id, KindProtocol, "%v", err)
		return ExitOK
	}
	var ch line.Fields
	json.Unmarshal(f["channel"], &ch)
	if err := ch.Decode(&Channel{}, []string{"id", "target"}, []string{"service_config", "keepalive"}); err != nil {
		s.callError(id, KindProtocol, "channel: %v", err)
		return ExitOK
	}
	if c.DeadlineMS < 1 {
		s.callError(id, KindProtocol, "deadline_ms %d < 1", c.DeadlineMS)
		return ExitOK
	}
	s.calls.Add(1)
	go func() {
		defer s.calls.Done()
		s.call(c)
	}()
	return ExitOK
}

func (s *session) callError(id int64, kind, format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	s.log.Printf("call %d: call_error %s: %s", id, kind, text)
	s.out.Send(wireCallError{Type: "call_error", ID: id, Kind: kind, Text: text})
}

// channelFor returns the channel w names, building it the first time.
func (s *session) channelFor(w Channel) (Conn, *CallError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch, ok := s.channels[w.ID]; ok {
		if !ch.same(w) {
			return nil, &CallError{Kind: KindProtocol, Text: "channel " + w.ID + " was first configured otherwise"}
		}
		return ch.conn, nil
	}
	conn, err := s.stack.Dial(w, s.log)
	if err != nil {
		if ce, ok := errors.AsType[*CallError](err); ok {
			return nil, ce
		}
		return nil, &CallError{Kind: KindConfig, Text: err.Error()}
	}
	s.channels[w.ID] = &channel{config: w, conn: conn}
	return conn, nil
}
