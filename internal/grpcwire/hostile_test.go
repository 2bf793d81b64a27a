package grpcwire

import (
	"bytes"
	"io"
	"log/slog"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// flood writes next's batches to nc, from a goroutine, until a write
// fails: the server closed the connection, or the test did. The returned
// function closes nc and waits for the goroutine.
func flood(nc net.Conn, next func() []byte) (stop func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if _, err := nc.Write(next()); err != nil {
				return
			}
		}
	}()
	return func() { nc.Close(); <-done }
}

// awaitCalm reads the client's frames until a GOAWAY, which must come
// within calmWithin and be ENHANCE_YOUR_CALM, then until the connection
// ends.
func (c *h2client) awaitCalm(calmWithin time.Duration) {
	c.t.Helper()
	deadline := time.After(calmWithin)
	for {
		select {
		case f, ok := <-c.frames:
			if !ok {
				c.t.Fatalf("connection ended (%v) without a GOAWAY", c.err)
			}
			g, ok := f.(*http2.GoAwayFrame)
			if !ok {
				continue
			}
			if g.ErrCode != http2.ErrCodeEnhanceYourCalm {
				c.t.Fatalf("GOAWAY %v %q, want ENHANCE_YOUR_CALM", g.ErrCode, g.DebugData())
			}
			if r := c.wait(0, true, 5*time.Second); r.connErr == nil {
				c.t.Fatal("the connection stayed open 5s after its GOAWAY(ENHANCE_YOUR_CALM)")
			}
			return
		case <-deadline:
			c.t.Fatalf("no GOAWAY within %v of the flood's start", calmWithin)
		}
	}
}

// TestEmptyContinuationFlood: a header block that never ends, sent as
// empty CONTINUATION frames (CVE-2024-27316's pattern), which no header
// list size counts, is stopped by the bound on a block's frames: GOAWAY
// (ENHANCE_YOUR_CALM) within a second, and the connection closed.
func TestEmptyContinuationFlood(t *testing.T) {
	ts := startServer(t)
	c := dial(t, ts.addr)
	c.hbuf.Reset()
	c.enc.WriteField(hpack.HeaderField{Name: ":method", Value: "POST"})
	if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: c.hbuf.Bytes()}); err != nil {
		t.Fatal(err)
	}
	var batch bytes.Buffer
	bf := http2.NewFramer(&batch, nil)
	for batch.Len() < 16<<10 {
		bf.WriteContinuation(1, false, nil)
	}
	stop := flood(c.nc, func() []byte { return batch.Bytes() })
	defer stop()
	c.awaitCalm(time.Second)
	if got := ts.counter(t, "calm_closes"); got != 1 {
		t.Errorf("calm_closes=%d, want 1", got)
	}
	evs := ts.events(t, "PROTOCOL_ERROR")
	if len(evs) != 1 || !strings.Contains(evs[0].Text("err"), "CONTINUATION") {
		t.Errorf("PROTOCOL_ERROR events %v, want one naming the CONTINUATION frames", evs)
	}
}

// TestReadTimeout: a preface, a frame or a header block that does not
// finish within ReadTimeout closes the connection, logged READ_TIMEOUT
// with the bytes of it that arrived; a connection idle between frames
// is kept however long.
func TestReadTimeout(t *testing.T) {
	const timeout = 200 * time.Millisecond
	headers := func(c *h2client) []byte { // a HEADERS frame without END_HEADERS
		var b bytes.Buffer
		c.hbuf.Reset()
		c.enc.WriteField(hpack.HeaderField{Name: ":method", Value: "POST"})
		http2.NewFramer(&b, nil).WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: c.hbuf.Bytes()})
		return b.Bytes()
	}
	for _, tc := range []struct {
		name string
		// send writes what the client sends after the preface and its
		// SETTINGS; preface is nil to send part of the preface instead.
		send     func(c *h2client) []byte
		preface  []byte
		buffered int64 // READ_TIMEOUT's buffered
	}{
		{name: "preface", preface: []byte(http2.ClientPreface[:10]), buffered: 10},
		{name: "partial_frame", send: func(*h2client) []byte { return []byte{0, 0, 8, byte(http2.FramePing), 0} }, buffered: 5},
		{name: "partial_payload", send: func(*h2client) []byte { return []byte{0, 0, 8, byte(http2.FramePing), 0, 0, 0, 0, 0, 1, 2} }, buffered: 11},
		{name: "header_block", send: headers, buffered: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ts := startConfig(t, func(c *Config) { c.ReadTimeout = timeout })
			var c *h2client
			if tc.preface != nil {
				nc, err := net.Dial("tcp", ts.addr)
				if err != nil {
					t.Fatal(err)
				}
				defer nc.Close()
				nc.Write(tc.preface)
				start := time.Now()
				nc.SetReadDeadline(time.Now().Add(5 * time.Second))
				if _, err := io.Copy(io.Discard, nc); err != nil {
					t.Fatalf("the connection stayed open: %v", err)
				}
				if waited := time.Since(start); waited < timeout/2 {
					t.Errorf("closed after %v, before ReadTimeout %v", waited, timeout)
				}
			} else {
				c = dial(t, ts.addr)
				b := tc.send(c)
				if tc.buffered < 0 {
					tc.buffered = int64(len(b))
				}
				c.nc.Write(b)
				start := time.Now()
				if r := c.wait(0, true, 5*time.Second); r.connErr == nil {
					t.Fatal("the connection stayed open 5s")
				}
				if waited := time.Since(start); waited < timeout/2 {
					t.Errorf("closed after %v, before ReadTimeout %v", waited, timeout)
				}
			}
			evs := ts.await(t, "READ_TIMEOUT", 2*time.Second)
			if n, _ := evs[0].Int("buffered"); len(evs) != 1 || n != tc.buffered || evs[0].Text("timeout") != timeout.String() || evs[0].Text("wire") != "grpc" {
				t.Errorf("READ_TIMEOUT events %v, want one with buffered=%d timeout=%v wire=grpc", evs, tc.buffered, timeout)
			}
			if got := ts.counter(t, "read_timeouts"); got != 1 {
				t.Errorf("read_timeouts=%d, want 1", got)
			}
		})
	}
	t.Run("idle", func(t *testing.T) {
		t.Parallel()
		ts := startConfig(t, func(c *Config) { c.ReadTimeout = timeout })
		c := dial(t, ts.addr)
		c.ping([8]byte{1})
		time.Sleep(3 * timeout) // the idleness under test
		c.ping([8]byte{2})
		if r := c.wait(c.send(pathGet, getMsg("a"), nil), false, 2*time.Second); r.status() != "0" {
			t.Errorf("get after idling: status %q, connection error %v; want 0", r.status(), r.connErr)
		}
		if n := len(ts.events(t, "READ_TIMEOUT")); n != 0 {
			t.Errorf("%d READ_TIMEOUT events for an idle connection, want 0", n)
		}
	})
}

// rapidResetBatch returns n pairs of HEADERS and RST_STREAM(CANCEL), on
// the client's next streams: with END_STREAM (a request the server
// answers at once) or without (one it waits for).
func (c *h2client) rapidResetBatch(n int, endStream bool) []byte {
	return c.floodBatch(n, pathDebit, endStream, true)
}

// floodBatch is n requests for path, each HEADERS (with END_STREAM when
// endStream) and, when reset, RST_STREAM(CANCEL) right after it.
func (c *h2client) floodBatch(n int, path string, endStream, reset bool) []byte {
	var b bytes.Buffer
	fr := http2.NewFramer(&b, nil)
	for range n {
		id := c.nextID
		c.nextID += 2
		c.hbuf.Reset()
		for _, f := range (md{{":method", "POST"}, {":scheme", "http"}, {":path", path}, {":authority", "test"},
			{"content-type", "application/grpc"}, {"te", "trailers"}, {MetaCall, "rapid-reset"}}) {
			c.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.hbuf.Bytes(), EndHeaders: true, EndStream: endStream})
		if reset {
			fr.WriteRSTStream(id, http2.ErrCodeCancel)
		}
	}
	return b.Bytes()
}

// TestRapidReset: a client that opens streams and resets them at once,
// again and again, is closed with GOAWAY(ENHANCE_YOUR_CALM) before its
// connection has logged RapidResetLogBound bytes, whether the server
// had answered its streams or not; the diagnostic events it caused past
// their budget are counted and summarised, never the oracle's.
func TestRapidReset(t *testing.T) {
	for _, tc := range []struct {
		name             string
		path             string
		endStream, reset bool
	}{
		{"answered", pathDebit, true, true},
		{"unanswered", pathDebit, false, true},
		// No reset at all: requests the server ends at once, unexecuted
		// (an unknown method), each logging its ATTEMPT.
		{"server_ended", "/" + Service + "/Nope", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t)
			c := dial(t, ts.addr)
			// The flood's goroutine alone encodes headers from now on.
			stop := flood(c.nc, func() []byte { return c.floodBatch(64, tc.path, tc.endStream, tc.reset) })
			defer stop()
			c.awaitCalm(5 * time.Second)
			ts.await(t, "CONN_CLOSED", 2*time.Second)
			f := ts.counters(t)
			n := len(ts.log.bytes())
			t.Logf("closed after %d ATTEMPTs, %d bytes logged, %d events suppressed", len(ts.events(t, "ATTEMPT")), n, f["log_suppressed"])
			if n > RapidResetLogBound {
				t.Errorf("the flooding connection logged %d bytes, want at most RapidResetLogBound, %d", n, RapidResetLogBound)
			}
			if f["calm_closes"] != 1 {
				t.Errorf("calm_closes=%d, want 1", f["calm_closes"])
			}
			var summarised int64
			for _, e := range ts.events(t, "LOG_SUPPRESSED") {
				n, _ := e.Int("count")
				summarised += n
			}
			if tc.reset && f["log_suppressed"] == 0 || summarised != f["log_suppressed"] {
				t.Errorf("log_suppressed=%d, LOG_SUPPRESSED counts sum to %d; want equal (and above 0 for resets)", f["log_suppressed"], summarised)
			}
			if got, want := int64(len(ts.events(t, "ATTEMPT"))), f["requests.debit"]+f["requests.other"]+f["unavailable"]; got != want {
				t.Errorf("%d ATTEMPT events, want one per request counted, %d", got, want)
			}
		})
	}
}

// TestPoliteCancellerKept: a client that cancels calls it is waiting
// for, now and then, all its streams' answers pending, is never taken
// for a rapid-reset client.
func TestPoliteCancellerKept(t *testing.T) {
	ts := startServer(t)
	c := dial(t, ts.addr)
	// Every slot's stream reset, as a deadline that passes for all the
	// calls of a full connection at once does; the rate a few cancels a
	// second make is TestResetBudget's.
	for range 256 {
		id := c.send(pathDebit, debitSleepMsg("a", 1, 3600_000), nil)
		c.fr.WriteRSTStream(id, http2.ErrCodeCancel)
	}
	c.ping([8]byte{3})
	if r := c.wait(c.send(pathGet, getMsg("a"), nil), false, 2*time.Second); r.status() != "0" || r.goaway != nil {
		t.Errorf("get after the cancels: status %q GOAWAY %+v, want 0 and none", r.status(), r.goaway)
	}
	if got := ts.counter(t, "calm_closes"); got != 0 {
		t.Errorf("calm_closes=%d, want 0", got)
	}
}

// TestResetBudget: the reset budget's decision, on a clock of its own.
// Resets of 230-byte ATTEMPT lines: a few a second never run it out, nor
// does a deadline that passes for a full connection's 256 calls at once;
// a flood does within the burst, and one just above the rate in time.
func TestResetBudget(t *testing.T) {
	const line = 230
	for _, tc := range []struct {
		name     string
		every    time.Duration // between resets
		burst    int           // resets at once, before the paced ones
		n        int           // paced resets
		verdict  bool
		maxTaken int // when verdict: the resets taken, at most
	}{
		{name: "polite", every: 200 * time.Millisecond, n: 10 * 60 * 5},
		{name: "polite_storm", every: 200 * time.Millisecond, burst: 256, n: 3000},
		{name: "storm_then_busy", every: 30 * time.Millisecond, burst: 256, n: 10000},
		{name: "flood", every: 10 * time.Microsecond, n: 100000, verdict: true, maxTaken: RapidResetBurst/line + 1},
		{name: "above_rate", every: 20 * time.Millisecond, n: 100000, verdict: true, maxTaken: 10000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bucket
			now := time.Unix(1e9, 0)
			taken := 0
			for i := range tc.burst + tc.n {
				if i >= tc.burst {
					now = now.Add(tc.every)
				}
				if !b.take(now, line, RapidResetBurst, RapidResetRate) {
					if !tc.verdict {
						t.Fatalf("verdict after %d resets, want none", taken)
					}
					if taken > tc.maxTaken {
						t.Errorf("verdict after %d resets, want at most %d", taken, tc.maxTaken)
					}
					return
				}
				taken++
			}
			if tc.verdict {
				t.Errorf("no verdict after %d resets", taken)
			}
		})
	}
}

// TestAttemptBytesBound: attemptBytes is never below the bytes slog's
// JSON handler writes for the ATTEMPT line, whatever a client put in
// its metadata.
func TestAttemptBytesBound(t *testing.T) {
	for _, tc := range []struct{ method, call, prev, timeout string }{
		{"debit", "c1", "-", "-"},
		{"/x/" + strings.Repeat(`"\`, 10), strings.Repeat("\x01\\\"\x7f", 100), "\x00\x01\xff", "\u2028\\\""},
		{"get", "caf\u00e9 \xc3\x28 <&>", "12345678901234567890", "99999999H"},
	} {
		var buf bytes.Buffer
		lg := slog.New(slog.NewJSONHandler(&buf, nil))
		args := []any{serverapi.KeyWire, serverapi.WireGRPC, serverapi.KeyConn, uint64(math.MaxUint64), serverapi.KeyStream, uint32(math.MaxUint32),
			serverapi.KeyID, uint64(math.MaxUint64), serverapi.KeyMethod, tc.method, serverapi.KeyCall, tc.call, serverapi.KeyAttempt, math.MaxInt,
			serverapi.KeyPrev, tc.prev, serverapi.KeyGRPCTimeout, tc.timeout, serverapi.KeyBudget, int64(math.MinInt64)}
		lg.Info(serverapi.EventAttempt, args...)
		got := attemptBytes(math.MaxUint64, math.MaxUint32, math.MaxUint64, tc.method, tc.call, math.MaxInt, tc.prev, tc.timeout, math.MinInt64)
		if got < buf.Len() {
			t.Errorf("attemptBytes=%d, the line takes %d: %s", got, buf.Len(), buf.Bytes())
		}
		if tc.call == "c1" && buf.Len() < attemptMinBytes {
			t.Errorf("a short line takes %d bytes, below attemptMinBytes %d: %s", buf.Len(), attemptMinBytes, buf.Bytes())
		}
	}
}

// TestDiagLineBound: a diagnostic event's line stays within diagLineMax
// whatever the client made its err text hold, and the budget leaves
// out what exceeds LogBurst, summarised at the close.
func TestDiagLineBound(t *testing.T) {
	ts := startServer(t)
	a, b := net.Pipe()
	defer b.Close()
	c := newConn(ts.Server, a)
	hostile := strings.Repeat("\x00\"\\\u2028", 5000)
	for range LogBurst + 3 {
		c.diag(slog.LevelWarn, serverapi.EventProtocolError, serverapi.KeyRemote, "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535",
			serverapi.KeyErr, "grpcwire: "+hostile, serverapi.KeyConn, uint64(math.MaxUint64), serverapi.KeyWire, serverapi.WireGRPC)
	}
	c.suppressedAtClose()
	lines := bytes.Split(bytes.TrimSpace(ts.log.bytes()), []byte("\n"))
	if len(lines) != LogBurst+1 {
		t.Fatalf("%d lines, want LogBurst=%d events and one LOG_SUPPRESSED", len(lines), LogBurst)
	}
	for _, l := range lines {
		if len(l)+1 > diagLineMax {
			t.Errorf("a line of %d bytes, want at most diagLineMax=%d: %s", len(l)+1, diagLineMax, l)
		}
	}
	evs := ts.events(t, "LOG_SUPPRESSED")
	var n int64
	if len(evs) == 1 {
		n, _ = evs[0].Int("count")
	}
	if len(evs) != 1 || n != 3 {
		t.Errorf("LOG_SUPPRESSED events %v, want one with count=3", evs)
	}
}

// TestLongMetadataBounded: what a request's headers cost the log is
// bounded, whatever they hold. A call name or idempotency key over
// MaxMetaLen is answered INVALID_ARGUMENT, unexecuted and not counted
// as an attempt; its ATTEMPT, and that of an unknown path of 8 KiB,
// log the values cut.
func TestLongMetadataBounded(t *testing.T) {
	ts := startServer(t)
	c := dial(t, ts.addr)
	long := strings.Repeat("c", 4000)
	for _, meta := range []md{{{MetaCall, long}}, {{MetaKey, long}}} {
		r := c.wait(c.send(pathDebit, debitMsg("acct", 1), meta), false, 2*time.Second)
		if r.status() != "3" {
			t.Errorf("%s of %d bytes: grpc-status %q RST %v, want 3 (INVALID_ARGUMENT)", meta[0][0], len(long), r.status(), r.rst)
		}
	}
	if r := c.wait(c.send("/"+strings.Repeat("p", 8000), getMsg("acct"), nil), false, 2*time.Second); r.status() != "12" {
		t.Errorf("an unknown path of 8 KiB: grpc-status %q RST %v, want 12 (UNIMPLEMENTED)", r.status(), r.rst)
	}
	if n := ts.counter(t, "exec.debit"); n != 0 {
		t.Errorf("exec.debit=%d, want 0", n)
	}
	attempts := ts.events(t, serverapi.EventAttempt)
	if len(attempts) != 3 {
		t.Fatalf("%d ATTEMPT events, want 3", len(attempts))
	}
	for _, e := range attempts {
		for _, k := range []string{serverapi.KeyCall, serverapi.KeyMethod} {
			if v := e.Text(k); len(v) > MaxMetaLen+20 {
				t.Errorf("ATTEMPT %s of %d bytes, want at most %d", k, len(v), MaxMetaLen+20)
			}
		}
		if n, _ := e.Int(serverapi.KeyAttempt); n != 0 {
			t.Errorf("ATTEMPT attempt=%d for a refused name, want 0 (not counted)", n)
		}
	}
	for _, line := range bytes.Split(ts.log.bytes(), []byte("\n")) {
		if len(line) > 1024 {
			t.Errorf("a log line of %d bytes, want at most 1024: %.200s...", len(line), line)
		}
	}
}
