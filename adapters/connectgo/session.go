package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"
)

const (
	// drainTimeout bounds how long shutdown waits for calls in flight.
	drainTimeout = 2 * time.Second
	// abandonTimeout bounds how long shutdown waits, after drainTimeout,
	// for the calls it cancelled to be answered: well inside the 3 s the
	// harness gives shutdown.
	abandonTimeout = 500 * time.Millisecond
)

// connectModule is the module whose version init_ok reports.
const connectModule = "connectrpc.com/connect"

// caps are connect-go's capabilities over net/http's HTTP/2 transport.
// connect-go has no service config, so no retry policy, hedging,
// throttling or pushback, and no wait-for-ready: a call is one HTTP
// request. net/http's HTTP/2 transport re-sends a request on a fresh
// stream, by itself, after REFUSED_STREAM or a GOAWAY below the stream
// (http2shouldRetryRequest; connect-go sets Request.GetBody for unary
// calls, which allows it), and its ping health check (SendPingTimeout,
// PingTimeout) closes a connection whose peer went silent.
var caps = capabilities{TransparentRetry: true, Keepalive: true}

// session is one adapter process's protocol session.
type session struct {
	out *lineWriter
	log *log.Logger

	// ctx is every call's parent; abandon cancels it when shutdown has
	// waited drainTimeout, since net/http cannot close a connection with
	// requests in flight.
	ctx     context.Context
	abandon context.CancelFunc

	mu       sync.Mutex // guards seen and channels
	seen     map[int64]bool
	channels map[string]*channel

	calls sync.WaitGroup // calls in flight
}

// linkedVersion is connect-go's version as linked, from the binary's
// module build info, without the "v"; "unknown" if the binary has none.
func linkedVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == connectModule {
				if d.Replace != nil {
					d = d.Replace
				}
				return strings.TrimPrefix(d.Version, "v")
			}
		}
	}
	return "unknown"
}

// run reads the harness's lines from in until it ends, answering on out
// and logging to errw, and returns the exit status.
func run(in io.Reader, out io.Writer, errw io.Writer) int {
	ctx, abandon := context.WithCancel(context.Background())
	defer abandon()
	s := &session{out: &lineWriter{w: out}, log: log.New(errw, "connectgo: ", log.Lmicroseconds),
		ctx: ctx, abandon: abandon, seen: map[int64]bool{}, channels: map[string]*channel{}}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine+1)
	inited := false
	for n := 1; sc.Scan(); n++ {
		var f fields
		var typ string
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil || f == nil {
			return s.fatal("line %d: not a JSON object: %v", n, err)
		}
		if err := json.Unmarshal(f["type"], &typ); err != nil {
			return s.fatal("line %d: no string \"type\"", n)
		}
		if !inited && typ != "init" {
			return s.fatal("line %d: %s before init", n, typ)
		}
		switch typ {
		case "init":
			var w wireInit
			if err := f.decode(&w, []string{"protocol"}, []string{"scenario"}); err != nil || inited {
				return s.fatal("line %d: bad init: %v", n, err)
			}
			inited = true
			s.log.Printf("init: protocol %s, scenario %q", w.Protocol, w.Scenario)
			s.out.send(wireInitOK{Type: "init_ok", Protocol: protocol, Stack: "connect-go", Version: linkedVersion(),
				Runtime: runtime.Version(), Capabilities: caps})
		case "call":
			if code := s.startCall(n, f); code != 0 {
				return code
			}
		case "shutdown":
			if err := f.decode(&struct{}{}, nil, nil); err != nil {
				return s.fatal("line %d: bad shutdown: %v", n, err)
			}
			s.drain()
			s.out.send(map[string]string{"type": "shutdown_ok"})
		default:
			return s.fatal("line %d: unknown type %q", n, typ)
		}
	}
	if err := sc.Err(); err != nil {
		return s.fatal("reading stdin: %v", err)
	}
	s.drain()
	return 0
}

// fatal writes a fatal line and returns the exit status for it.
func (s *session) fatal(format string, args ...any) int {
	text := fmt.Sprintf(format, args...)
	s.log.Print("fatal: ", text)
	s.out.send(map[string]string{"type": "fatal", "text": text})
	return 2
}

// drain waits up to drainTimeout for the calls in flight, cancels those
// still running and waits up to abandonTimeout for their answers, then
// closes every channel's connections.
func (s *session) drain() {
	done := make(chan struct{})
	go func() { s.calls.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(drainTimeout):
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
		ch.close()
		delete(s.channels, id)
	}
}

// startCall checks a call line and starts the call; it returns a
// non-zero exit status only for a line without a usable id.
func (s *session) startCall(n int, f fields) int {
	var id int64
	if err := json.Unmarshal(f["id"], &id); err != nil || id < 1 {
		return s.fatal("line %d: call without a usable id", n)
	}
	s.mu.Lock()
	dup := s.seen[id]
	s.seen[id] = true
	s.mu.Unlock()
	if dup {
		s.callError(id, kindDuplicateID, "id %d was used before", id)
		return 0
	}
	var c wireCall
	if err := f.decode(&c, []string{"id", "channel", "method", "request", "deadline_ms", "metadata", "wait_for_ready"}, nil); err != nil {
		s.callError(id, kindProtocol, "%v", err)
		return 0
	}
	var ch fields
	json.Unmarshal(f["channel"], &ch)
	if err := ch.decode(&wireChannel{}, []string{"id", "target"}, []string{"service_config", "keepalive"}); err != nil {
		s.callError(id, kindProtocol, "channel: %v", err)
		return 0
	}
	if c.DeadlineMS < 1 {
		s.callError(id, kindProtocol, "deadline_ms %d < 1", c.DeadlineMS)
		return 0
	}
	s.calls.Add(1)
	go func() {
		defer s.calls.Done()
		s.call(c)
	}()
	return 0
}

func (s *session) callError(id int64, kind, format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	s.log.Printf("call %d: call_error %s: %s", id, kind, text)
	s.out.send(wireCallError{Type: "call_error", ID: id, Kind: kind, Text: text})
}

// compact is raw without insignificant space, nil for none, so that two
// spellings of one service config compare equal.
func compact(raw json.RawMessage) []byte {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}
