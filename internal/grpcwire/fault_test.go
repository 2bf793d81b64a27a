package grpcwire

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// TestFaultFrames sends one keyless debit per fault rule and checks the
// frames the server sent and the executions its log shows.
func TestFaultFrames(t *testing.T) {
	code := func(c http2.ErrCode) *http2.ErrCode { return &c }
	tests := []struct {
		rule    string
		timeout string // grpc-timeout; empty sends none
		execs   int    // EXEC events
		// want checks the result.
		want func(t *testing.T, r *result)
		// untilClose waits for the connection to end too.
		untilClose bool
	}{
		{rule: "kind=unavailable", execs: 0, want: trailersOnly("14", "injected unavailable", "")},
		{rule: "kind=unavailable retry_after=200ms", execs: 0, want: trailersOnly("14", "injected unavailable", "200")},
		{rule: "kind=unavailable retry_after=never", execs: 0, want: trailersOnly("14", "injected unavailable", "-1")},
		{rule: "kind=unavailable pushback=1500x", execs: 0, want: trailersOnly("14", "injected unavailable", "1500x")},
		{rule: "kind=unavailable delay=150ms", execs: 0, want: trailersOnly("14", "injected unavailable", "")},
		{rule: "kind=unavailable_after_exec", execs: 1, want: trailersOnly("14", "injected unavailable after executing", "")},
		{rule: "kind=unavailable_after_headers", execs: 1, want: func(t *testing.T, r *result) {
			if r.trailersOnly || r.header(":status") != "200" || r.trailers == nil || r.status() != "14" || r.dataFrames != 0 {
				t.Errorf("got headers %v, %d DATA, trailers %v; want HEADERS, no DATA, trailers grpc-status 14", r.headers, r.dataFrames, r.trailers)
			}
		}},
		{rule: "kind=close", execs: 1, untilClose: true, want: closed("eof", false)},
		{rule: "kind=reset", execs: 1, untilClose: true, want: closed("reset", false)},
		{rule: "kind=cut_data", execs: 1, untilClose: true, want: func(t *testing.T, r *result) {
			if r.headers == nil || r.header(":status") != "200" || r.dataFrames != 0 || r.trailers != nil {
				t.Errorf("got headers %v, %d whole DATA frames, trailers %v; want HEADERS then no whole DATA frame", r.headers, r.dataFrames, r.trailers)
			}
			// The Framer reports the cut frame as an unexpected EOF; a
			// close at a frame boundary, with no cut frame, is a plain EOF.
			if !errors.Is(r.connErr, io.ErrUnexpectedEOF) {
				t.Errorf("connection ended by %v, want an unexpected EOF: a DATA frame cut mid-way, then FIN", r.connErr)
			}
		}},
		{rule: "kind=rst code=REFUSED_STREAM", execs: 0, want: rst(code(http2.ErrCodeRefusedStream), false)},
		{rule: "kind=rst code=CANCEL", execs: 1, want: rst(code(http2.ErrCodeCancel), false)},
		{rule: "kind=rst code=INTERNAL_ERROR headers=true", execs: 1, want: rst(code(http2.ErrCodeInternal), true)},
		{rule: "kind=rst code=PROTOCOL_ERROR", execs: 1, want: rst(code(http2.ErrCodeProtocol), false)},
		{rule: "kind=goaway_below", execs: 0, untilClose: true, want: goaway(func(id uint32) uint32 { return id - 2 })},
		{rule: "kind=goaway_cover", execs: 1, untilClose: true, want: goaway(func(id uint32) uint32 { return id })},
		{rule: "kind=late delay=100ms", timeout: "200m", execs: 1, want: func(t *testing.T, r *result) {
			if r.status() != "0" {
				t.Errorf("got trailers %v, want grpc-status 0, late", r.trailers)
			}
		}},
		{rule: "kind=sleep delay=50ms", execs: 1, want: func(t *testing.T, r *result) {
			if r.status() != "0" {
				t.Errorf("got trailers %v, want grpc-status 0", r.trailers)
			}
		}},
		{rule: "kind=noreply", execs: 1, want: func(t *testing.T, r *result) {
			if r.headers != nil || r.rst != nil || r.connErr != nil {
				t.Errorf("got headers %v rst %v conn %v, want nothing at all", r.headers, r.rst, r.connErr)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			t.Parallel()
			ts := startServer(t, tt.rule+" method=debit count=1")
			c := dial(t, ts.addr)
			// The stream id of the faulted call is 3: call 1 is a get the
			// rule does not match, so that goaway_below has a stream to
			// stay below.
			warm := c.send(pathGet, getMsg("a"), nil)
			if r := c.wait(warm, false, 2*time.Second); r.status() != "0" {
				t.Fatalf("warm-up get: %v %v", r.headers, r.trailers)
			}
			meta := md{{MetaCall, "c1"}}
			if tt.timeout != "" {
				meta = append(meta, [2]string{"grpc-timeout", tt.timeout})
			}
			start := time.Now()
			id := c.send(pathDebit, debitMsg("a", 10), meta)
			wait := 2 * time.Second
			if tt.rule == "kind=noreply" {
				wait = 300 * time.Millisecond
			}
			r := c.wait(id, tt.untilClose, wait)
			switch el := time.Since(start); tt.rule {
			case "kind=late delay=100ms":
				if el < 300*time.Millisecond {
					t.Errorf("late answer after %v, want at least the timeout plus delay, 300ms", el)
				}
			case "kind=sleep delay=50ms":
				if el < 50*time.Millisecond {
					t.Errorf("answer after %v, want at least the sleep, 50ms", el)
				}
			case "kind=unavailable delay=150ms":
				if el < 150*time.Millisecond {
					t.Errorf("refusal after %v, want at least its delay, 150ms", el)
				}
			}
			tt.want(t, &r)
			if got := len(ts.events(t, "EXEC")) - 1; got != tt.execs { // the warm-up get is one
				t.Errorf("%d EXEC events for the debit, want %d", got, tt.execs)
			}
			if f := ts.events(t, "FAULT"); len(f) != 1 {
				t.Errorf("%d FAULT events, want 1", len(f))
			}
		})
	}
}

func trailersOnly(status, msg, pushback string) func(*testing.T, *result) {
	return func(t *testing.T, r *result) {
		t.Helper()
		if !r.trailersOnly || r.header(":status") != "200" || r.header("content-type") != "application/grpc" {
			t.Errorf("got headers %v (trailers-only %v), want one HEADERS with :status 200, content-type and END_STREAM", r.headers, r.trailersOnly)
		}
		if r.status() != status || r.header("grpc-message") != percentEncode(msg) {
			t.Errorf("grpc-status %q grpc-message %q, want %q %q", r.status(), r.header("grpc-message"), status, percentEncode(msg))
		}
		if got := r.header("grpc-retry-pushback-ms"); got != pushback {
			t.Errorf("grpc-retry-pushback-ms %q, want %q", got, pushback)
		}
	}
}

func closed(by string, headers bool) func(*testing.T, *result) {
	return func(t *testing.T, r *result) {
		t.Helper()
		if (r.headers != nil) != headers || r.rst != nil || r.goaway != nil {
			t.Errorf("got headers %v rst %v goaway %v before the close, want none", r.headers, r.rst, r.goaway)
		}
		if got := r.closedBy(); got != by {
			t.Errorf("connection ended by %q, want %q", got, by)
		}
	}
}

func rst(code *http2.ErrCode, headers bool) func(*testing.T, *result) {
	return func(t *testing.T, r *result) {
		t.Helper()
		if r.rst == nil || *r.rst != *code {
			t.Errorf("RST_STREAM %v, want %v", r.rst, *code)
		}
		if (r.headers != nil) != headers || r.dataFrames != 0 || r.ended {
			t.Errorf("got headers %v, %d DATA, ended %v; want headers only if %v, no DATA, no END_STREAM", r.headers, r.dataFrames, r.ended, headers)
		}
	}
}

func goaway(last func(id uint32) uint32) func(*testing.T, *result) {
	return func(t *testing.T, r *result) {
		t.Helper()
		const id = 3
		if r.goaway == nil || r.goaway.LastStreamID != last(id) || r.goaway.ErrCode != http2.ErrCodeNo {
			t.Errorf("GOAWAY %+v, want last-stream-id %d NO_ERROR", r.goaway, last(id))
		}
		if r.headers != nil || r.rst != nil {
			t.Errorf("got headers %v rst %v, want none", r.headers, r.rst)
		}
		if got := r.closedBy(); got != "eof" {
			t.Errorf("connection ended by %q, want eof", got)
		}
	}
}

// TestCutDataLongReply: an echo whose reply is longer than one frame may
// be is cut in its first frame, which announces no more than 16384 bytes:
// announcing the whole reply would make it a frame too large, which a
// client reports as a protocol error rather than a cut answer.
func TestCutDataLongReply(t *testing.T) {
	ts := startServer(t, "kind=cut_data method=echo count=1")
	c := dial(t, ts.addr)
	id := c.send(pathEcho, echoMsg(16380), nil) // a 16383-byte message, a 16388-byte reply
	r := c.wait(id, true, 2*time.Second)
	if r.headers == nil || r.dataFrames != 0 || r.trailers != nil {
		t.Errorf("got headers %v, %d whole DATA frames, trailers %v; want HEADERS then no whole DATA frame", r.headers, r.dataFrames, r.trailers)
	}
	if !errors.Is(r.connErr, io.ErrUnexpectedEOF) {
		t.Errorf("connection ended by %v, want an unexpected EOF: a DATA frame cut mid-way, then FIN", r.connErr)
	}
}

// TestSilentConnection: after kind=silent executes a debit, its
// connection answers nothing, not a PING, not a later get, while it is
// still read; another connection is served, and the silent one ends
// when the client closes it.
func TestSilentConnection(t *testing.T) {
	ts := startServer(t, "kind=silent method=debit count=1")
	c := dial(t, ts.addr)
	c.send(pathDebit, debitMsg("a", 10), md{{MetaCall, "c1"}})
	ts.await(t, "FAULT", 2*time.Second)
	c.fr.WritePing(false, [8]byte{4, 2})
	later := c.send(pathGet, getMsg("a"), nil)
	// Nothing can be awaited for an answer that must not come: the other
	// connection's get, answered, bounds how long a PING ACK had.
	other := dial(t, ts.addr)
	if r := other.wait(other.send(pathGet, getMsg("a"), nil), false, 2*time.Second); r.status() != "0" {
		t.Fatalf("get on another connection: %v %v, want grpc-status 0", r.headers, r.trailers)
	}
	// The silent connection's get was read: its ATTEMPT is logged.
	for deadline := time.Now().Add(2 * time.Second); len(ts.events(t, "ATTEMPT")) < 3; {
		if time.Now().After(deadline) {
			t.Fatalf("%d ATTEMPT events, want 3: the debit and both gets", len(ts.events(t, "ATTEMPT")))
		}
		time.Sleep(5 * time.Millisecond) // polling the log: no event to wait on
	}
	timeout := time.After(300 * time.Millisecond)
	for done := false; !done; {
		select {
		case f, ok := <-c.frames:
			if !ok {
				t.Fatalf("the silent connection ended: %v", c.err)
			}
			switch f := f.(type) {
			case *http2.PingFrame:
				t.Errorf("PING ACK %v on the silent connection", f.Data)
			case *http2.MetaHeadersFrame:
				t.Errorf("HEADERS on stream %d of the silent connection", f.StreamID)
			case *dataCopy:
				t.Errorf("DATA on stream %d of the silent connection", f.StreamID)
			}
		case <-timeout:
			done = true
		}
	}
	if n := len(ts.events(t, "EXEC")); n != 2 { // the debit and the other connection's get
		t.Errorf("%d EXEC events, want 2: the silent connection's get (stream %d) must not run or be answered", n, later)
	}
	c.nc.Close()
	ts.await(t, "CONN_CLOSED", 2*time.Second)
}

// TestParseFaultPushback: pushback= sends any text, and only on an
// unavailable rule without retry_after; the canonical form keeps it.
func TestParseFaultPushback(t *testing.T) {
	for _, rule := range []string{"kind=unavailable pushback=abc", "kind=unavailable method=debit pushback=-5 count=1"} {
		f, err := ParseFault(rule)
		if err != nil {
			t.Fatalf("%s: %v", rule, err)
		}
		back, err := ParseFault(f.String())
		if err != nil || back != f {
			t.Errorf("%s: canonical form %q parses to %+v, %v; want %+v", rule, f.String(), back, err, f)
		}
	}
	for _, rule := range []string{"kind=unavailable pushback=", "kind=unavailable retry_after=1s pushback=abc", "kind=close pushback=abc"} {
		if _, err := ParseFault(rule); err == nil || !strings.Contains(err.Error(), "pushback") {
			t.Errorf("%s: got %v, want an error naming pushback", rule, err)
		}
	}
}
