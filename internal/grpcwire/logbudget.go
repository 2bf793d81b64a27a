package grpcwire

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// The log budgets of a connection (SPEC.md, "Limits" and "Events").
//
// The oracle's events (ATTEMPT, EXEC, CLAIM, EXPIRED, CANCELED, FAULT)
// are never dropped. A client bounds how many of them it causes with
// its requests; the one pattern that makes them cost it nearly nothing,
// opening streams and resetting them at once (rapid reset,
// CVE-2023-44487), is bounded by a verdict on the resets instead: the
// connection is closed.
const (
	// LogBurst and LogRate are a connection's budget of diagnostic
	// events (STREAM_RESET, GOAWAY_RECEIVED, PROTOCOL_ERROR,
	// CONN_READ_ERROR), a token bucket: LogBurst events at once,
	// LogRate a second after. What it leaves out is counted
	// (log_suppressed) and summarised by one LOG_SUPPRESSED when the
	// budget allows an event again, or the connection closes. A client
	// cancelling a few calls a second logs each STREAM_RESET.
	LogBurst = 16
	LogRate  = 4

	// RapidResetBurst and RapidResetRate are a connection's budget of
	// resets, a token bucket in bytes: every RST_STREAM the client sends
	// on a stream it opened takes the bytes the stream's ATTEMPT logged
	// (an upper bound, attemptBytes), RapidResetBurst at once and
	// RapidResetRate a second after. A reset past it closes the
	// connection at once with GOAWAY(ENHANCE_YOUR_CALM) (calm_closes).
	// Bytes, not resets, so that long metadata buys no more log.
	//
	// The burst covers a deadline that passes for all the calls of a
	// full connection at once, MAX_CONCURRENT_STREAMS=256 resets of
	// ATTEMPT lines up to 320 bytes; the rate, ~35 resets a second of
	// ~230 bytes, is ten times what a client cancelling a few calls a
	// second needs. For comparison, nghttp2's default bucket is 1000
	// resets at once and 33 a second, counted, whatever they logged;
	// x/net's and grpc-go's servers count none, they bound the handlers
	// that run at once, which this server does with its slots.
	RapidResetBurst = 80 << 10
	RapidResetRate  = 8 << 10

	// RapidResetLogBound is what a rapid-reset connection logs, at
	// most, before it is closed: one that resets every stream it opens
	// right after its HEADERS, its resets taking r ≥ 5·RapidResetRate
	// (40 KiB) of ATTEMPT log a second, about 200 resets. Its ATTEMPT
	// lines take at most RapidResetBurst·r/(r−RapidResetRate) ≤ 100 KiB,
	// within RapidResetBurst/(r−RapidResetRate) ≤ 2.5 s; its diagnostic
	// events (LogBurst + 2.5·LogRate = 26 lines of at most diagLineMax
	// bytes) and their LOG_SUPPRESSED summaries (27 lines of at most 160
	// bytes) at most 20.5 KiB; CONN_OPEN, the verdict's PROTOCOL_ERROR
	// and CONN_CLOSED at most 1 KiB: 121.5 KiB, the rest of 128 left for
	// the ATTEMPT of the stream whose reset tips the bucket, logged
	// before its reset came (at most 6.5 KiB of metadata values, escaped).
	RapidResetLogBound = 128 << 10

	// errTextMax bounds the err text of a diagnostic event, in bytes:
	// a Framer's detail can quote a header name a client chose, up to
	// MaxHeaderListSize bytes of it.
	errTextMax = 160
	// diagLineMax bounds a diagnostic event's line: capText leaves only
	// printable ASCII, so the err text escaped is at most 2·errTextMax
	// bytes, and the rest of a line less than 320.
	diagLineMax = 640
	// costRing is how many streams' ATTEMPT sizes a connection keeps, for
	// a reset that crosses its stream's answer: a rapid-reset client's
	// reset follows its HEADERS at once. An older stream's reset is
	// charged the least an ATTEMPT line takes.
	costRing = 128
)

// guard is a connection's state against hostile peers' log and resets.
type guard struct {
	mu         sync.Mutex // guards tokens, last, suppressed
	tokens     float64    // diagnostic events the budget allows now
	last       time.Time  // when tokens was last refilled; zero before the first event
	suppressed int64      // events left out since the last LOG_SUPPRESSED

	// Touched by the reader goroutine only.
	resets bucket
	costs  [costRing]struct{ id, bytes uint32 }
}

// bucket is a token bucket: burst tokens at first, rate a second after,
// never above burst.
type bucket struct {
	tokens float64
	last   time.Time // zero before the first take
}

// take takes n tokens at now and reports whether the bucket held them;
// when it did not, it is left empty.
func (b *bucket) take(now time.Time, n, burst, rate float64) bool {
	if b.last.IsZero() {
		b.tokens = burst
	} else if d := now.Sub(b.last); d > 0 {
		b.tokens = min(burst, b.tokens+d.Seconds()*rate)
	}
	b.last = now
	if b.tokens < n {
		b.tokens = 0
		return false
	}
	b.tokens -= n
	return true
}

// diag logs a diagnostic event of the connection within its log budget:
// past it the event is counted and left out, and the next one logged is
// preceded by LOG_SUPPRESSED with how many were. An err text is cut to
// errTextMax bytes.
func (c *conn) diag(level slog.Level, event string, args ...any) {
	g := &c.guard
	g.mu.Lock()
	b := bucket{tokens: g.tokens, last: g.last}
	ok := b.take(time.Now(), 1, LogBurst, LogRate)
	g.tokens, g.last = b.tokens, b.last
	left := g.suppressed
	if ok {
		g.suppressed = 0
	} else {
		g.suppressed++
	}
	g.mu.Unlock()
	if !ok {
		c.s.counters.logSuppressed.Add(1)
		return
	}
	if left > 0 {
		c.logSuppressed(left)
	}
	for i := 0; i+1 < len(args); i += 2 {
		if args[i] == serverapi.KeyErr {
			if s, ok := args[i+1].(string); ok {
				args[i+1] = capText(s)
			}
		}
	}
	c.s.log.Log(context.Background(), level, event, args...)
}

// suppressedAtClose logs LOG_SUPPRESSED for the events left out since
// the last one, if any; close calls it.
func (c *conn) suppressedAtClose() {
	g := &c.guard
	g.mu.Lock()
	left := g.suppressed
	g.suppressed = 0
	g.mu.Unlock()
	if left > 0 {
		c.logSuppressed(left)
	}
}

func (c *conn) logSuppressed(n int64) {
	c.s.log.Warn(serverapi.EventLogSuppressed, serverapi.KeyConn, c.id, serverapi.KeyCount, n, serverapi.KeyWire, serverapi.WireGRPC)
}

// capText cuts s to errTextMax bytes, and replaces each byte that is not
// printable ASCII by '?', so that no byte a client sent escapes to the 6
// bytes JSON would take for it.
func capText(s string) string {
	b := []byte(s[:min(len(s), errTextMax)])
	for i, ch := range b {
		if ch < 0x20 || ch >= 0x7f {
			b[i] = '?'
		}
	}
	if len(s) > errTextMax {
		return string(b) + "..."
	}
	return string(b)
}

// noteAttempt records the bytes of stream id's ATTEMPT line, for its
// reset. The reader calls it.
func (c *conn) noteAttempt(id uint32, bytes int) {
	e := &c.guard.costs[(id>>1)%costRing]
	e.id, e.bytes = id, uint32(min(bytes, 1<<31))
}

// resetAllowed charges the client's reset of stream id (st, when it is
// still live) to the reset budget; past it the connection gets the calm
// verdict and false is returned. The reader calls it, for a stream the
// client opened. A live stream is charged its own ATTEMPT's bytes;
// another, those the ring still holds, else the least an ATTEMPT takes.
func (c *conn) resetAllowed(id uint32, st *stream) bool {
	cost := attemptMinBytes
	if e := &c.guard.costs[(id>>1)%costRing]; e.id == id {
		cost = int(e.bytes)
		e.bytes = 0 // charged: a second reset or end costs nothing more
	} else if st != nil {
		cost = st.logCost
	}
	return c.charge(cost, "streams reset")
}

// endedAllowed charges stream id, which the server ended at its HEADERS
// without executing it (a refusal, a request that is not gRPC, an
// unknown method, a malformed timeout, metadata over MaxMetaLen), to
// the reset budget, as a client's reset of it would be: past it the
// connection gets the calm verdict and false is returned.
func (c *conn) endedAllowed(id uint32) bool {
	cost := attemptMinBytes
	if e := &c.guard.costs[(id>>1)%costRing]; e.id == id {
		cost = int(e.bytes)
		e.bytes = 0
	}
	return c.charge(cost, "requests ended unexecuted")
}

// charge takes cost bytes from the reset budget, or gives the calm
// verdict for what (streams reset, requests ended unexecuted).
func (c *conn) charge(cost int, what string) bool {
	if c.guard.resets.take(time.Now(), float64(cost), RapidResetBurst, RapidResetRate) {
		return true
	}
	c.calmVerdict(fmt.Sprintf("grpcwire: %s faster than the budget of %d bytes of ATTEMPT log at once and %d a second (rapid reset, ENHANCE_YOUR_CALM)", what, RapidResetBurst, RapidResetRate))
	return false
}

// attemptFixed is an ATTEMPT line's bytes but for its values' (the time
// at most 35 bytes, RFC 3339 with milliseconds and a zone offset).
const attemptFixed = len(`{"time":"","level":"INFO","msg":"ATTEMPT","wire":"grpc","conn":,"stream":,"id":,"method":"","call":"","attempt":,"prev":"","grpc_timeout":"","budget":}`) + 1 + 35

// attemptMinBytes is the least an ATTEMPT line takes.
const attemptMinBytes = attemptFixed - 35 + len("2006-01-02T15:04:05.000Z") + 5 + 4

// attemptBytes is an upper bound of the bytes of the ATTEMPT line
// newStream logs with these values.
func attemptBytes(conn uint64, stream uint32, id uint64, method, call string, attempt int, prev, timeout string, budget int64) int {
	n := attemptFixed
	var b [24]byte
	for _, v := range []uint64{conn, uint64(stream), id} {
		n += len(strconv.AppendUint(b[:0], v, 10))
	}
	n += len(strconv.AppendInt(b[:0], int64(attempt), 10)) + len(strconv.AppendInt(b[:0], budget, 10))
	for _, s := range []string{method, call, prev, timeout} {
		n += jsonBytes(s)
	}
	return n
}

// jsonBytes is an upper bound of s's bytes as a JSON string's contents:
// a printable ASCII byte but '"' and '\' is itself, any other byte at
// most 6 (\u00XX, or its share of a \uXXXX for a rune).
func jsonBytes(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if ch := s[i]; ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\' {
			n++
		} else {
			n += 6
		}
	}
	return n
}
