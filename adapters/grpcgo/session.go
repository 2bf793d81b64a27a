package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"runtime"
	"sync"
	"time"

	"google.golang.org/grpc"
)

// drainTimeout bounds how long shutdown waits for calls in flight.
const drainTimeout = 2 * time.Second

// session is one adapter process's protocol session.
type session struct {
	out *lineWriter
	log *log.Logger

	mu       sync.Mutex // guards seen and channels
	seen     map[int64]bool
	channels map[string]*channel

	calls sync.WaitGroup // calls in flight
}

// run reads the harness's lines from in until it ends, answering on out
// and logging to errw, and returns the exit status.
func run(in io.Reader, out io.Writer, errw io.Writer) int {
	s := &session{out: &lineWriter{w: out}, log: log.New(errw, "grpcgo: ", log.Lmicroseconds),
		seen: map[int64]bool{}, channels: map[string]*channel{}}
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
			s.out.send(wireInitOK{Type: "init_ok", Protocol: protocol, Stack: "grpc-go", Version: grpc.Version,
				Runtime: runtime.Version(), Capabilities: capabilities{
					RetryPolicy: true,
					// grpc-go parses hedgingPolicy into nothing: it is
					// accepted and ignored (gRFC A6 "Go except hedging").
					Hedging: false, Throttling: true, TransparentRetry: true,
					Keepalive: true, Pushback: true, WaitForReady: true,
					// grpc-go's retryPolicy has no perAttemptRecvTimeout.
					PerAttempt: false}})
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

// drain waits up to drainTimeout for the calls in flight, then closes
// every channel.
func (s *session) drain() {
	done := make(chan struct{})
	go func() { s.calls.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(drainTimeout):
		s.log.Printf("shutdown: calls still in flight after %v; closing their channels", drainTimeout)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, ch := range s.channels {
		ch.cc.Close()
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
