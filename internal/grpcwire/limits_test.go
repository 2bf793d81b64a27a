package grpcwire

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/net/http2"
	"google.golang.org/protobuf/encoding/protowire"
)

// echoMsg is an EchoRequest holding n bytes.
func echoMsg(n int) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, fieldEchoPayload, protowire.BytesType), bytes.Repeat([]byte("x"), n))
}

// ping sends a PING and reads frames until its ACK, discarding others.
func (c *h2client) ping(data [8]byte) {
	c.t.Helper()
	if err := c.fr.WritePing(false, data); err != nil {
		c.t.Fatal(err)
	}
	deadline := time.After(2 * time.Second)
	for {
		select {
		case f, ok := <-c.frames:
			if !ok {
				c.t.Fatalf("connection ended before the PING ACK: %v", c.err)
			}
			if p, ok := f.(*http2.PingFrame); ok && p.IsAck() && p.Data == data {
				return
			}
		case <-deadline:
			c.t.Fatal("no PING ACK within 2s")
		}
	}
}

// tally is what a client read on every stream of its connection.
type tally struct {
	data  int               // DATA bytes
	ended map[uint32]string // streams ended by END_STREAM: their grpc-status
	acks  int               // PING ACKs
}

// readUntil reads frames into t until done(t) holds or the connection
// ends or timeout passes, and reports whether done(t) held.
func (c *h2client) readUntil(t *tally, done func(*tally) bool, timeout time.Duration) bool {
	c.t.Helper()
	if t.ended == nil {
		t.ended = map[uint32]string{}
	}
	deadline := time.After(timeout)
	for !done(t) {
		select {
		case f, ok := <-c.frames:
			if !ok {
				return false
			}
			switch f := f.(type) {
			case *dataCopy:
				t.data += len(f.data)
			case *http2.PingFrame:
				if f.IsAck() {
					t.acks++
				}
			case *http2.MetaHeadersFrame:
				if f.StreamEnded() {
					r := result{headers: f.Fields}
					t.ended[f.StreamID] = r.status()
				}
			}
		case <-deadline:
			return false
		}
	}
	return true
}

// TestWriteDeadlinePerBatch: a connection idle for longer than
// WriteTimeout, its replies waiting for the client's window, then
// credited, writes more than bufio's 32 KiB in one batch: each write
// gets a fresh deadline, not the one of the last flush.
func TestWriteDeadlinePerBatch(t *testing.T) {
	const timeout = 200 * time.Millisecond
	ts := startConfig(t, func(c *Config) { c.WriteTimeout = timeout })
	c := dial(t, ts.addr)
	var ids []uint32
	for range 8 { // 120 KB of replies, the window 64 KiB
		ids = append(ids, c.send(pathEcho, echoMsg(15000), nil))
	}
	var got tally
	if !c.readUntil(&got, func(t *tally) bool { return t.data >= defaultWindow }, 2*time.Second) || got.data != defaultWindow {
		t.Fatalf("got %d DATA bytes before the credit, want the window, %d", got.data, defaultWindow)
	}
	time.Sleep(2 * timeout) // the idleness under test
	c.fr.WriteWindowUpdate(0, 1<<20)
	for _, id := range ids {
		c.fr.WriteWindowUpdate(id, 1<<20)
	}
	all := func(t *tally) bool { return len(t.ended) == len(ids) }
	if !c.readUntil(&got, all, 2*time.Second) {
		t.Errorf("after the credit: %d of %d echoes ended, %d DATA bytes, connection error %v; want all", len(got.ended), len(ids), got.data, c.err)
	}
	for id, status := range got.ended {
		if status != "0" {
			t.Errorf("stream %d: grpc-status %q, want 0", id, status)
		}
	}
	if n := len(ts.events(t, "WRITE_TIMEOUT")); n != 0 {
		t.Errorf("%d WRITE_TIMEOUT events, want 0", n)
	}
}

// TestCloseStopsServing: once a close fault has sent FIN, a request that
// arrives during the drain is not executed: nothing could answer it.
func TestCloseStopsServing(t *testing.T) {
	ts := startConfig(t, func(c *Config) { c.Drain = 500 * time.Millisecond }, "kind=close method=debit count=1")
	c := dial(t, ts.addr)
	c.send(pathDebit, debitMsg("a", 10), nil)
	if r := c.wait(0, true, 2*time.Second); r.closedBy() != "eof" {
		t.Fatalf("connection ended by %q, want eof (the fault's FIN)", r.closedBy())
	}
	c.send(pathDebit, debitMsg("a", 10), md{{MetaCall, "after-close"}})
	ts.await(t, "CONN_CLOSED", 2*time.Second) // the drain is over: the reader read it, or never will
	ts.Close()                                // every stream goroutine has returned
	for _, e := range ts.events(t, "EXEC") {
		if e.Text("call") == "after-close" {
			t.Errorf("a debit sent after the server's FIN executed: %v", e)
		}
	}
}

// debitSleepMsg is a DebitRequest whose execution sleeps ms first.
func debitSleepMsg(account string, amount, ms int64) []byte {
	b := debitMsg(account, amount)
	b = protowire.AppendTag(b, fieldDebitSleepMs, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(ms))
}

// TestResetStopsGoroutine: a stream the client resets stops its
// handler's sleep (Request.Done is the stream's): its goroutine returns,
// so that goroutines stay bounded by MAX_CONCURRENT_STREAMS however many
// streams a client opens and resets.
func TestResetStopsGoroutine(t *testing.T) {
	ts := startConfig(t, func(c *Config) { c.MaxConcurrentStreams = 2 })
	c := dial(t, ts.addr)
	if r := c.wait(c.send(pathGet, getMsg("a"), nil), false, 2*time.Second); r.status() != "0" {
		t.Fatalf("warm-up get: status %q", r.status())
	}
	ignore := goleak.IgnoreCurrent()
	for range 20 {
		id := c.send(pathDebit, debitSleepMsg("a", 1, 3600_000), nil)
		c.fr.WriteRSTStream(id, http2.ErrCodeCancel)
	}
	// The reader handles frames in order: once the PING is answered,
	// every reset has been seen, and the writer has ended the streams.
	c.ping([8]byte{7})
	if err := goleak.Find(ignore); err != nil {
		t.Errorf("goroutines of reset streams still running: %v", err)
	}
	// Their slots are free again.
	if r := c.wait(c.send(pathGet, getMsg("a"), nil), false, 2*time.Second); r.status() != "0" {
		t.Errorf("get after the resets: status %q rst %v, want 0", r.status(), r.rst)
	}
	if n := len(ts.events(t, "EXEC")); n != 2 {
		t.Errorf("%d EXEC events, want 2 (the gets; reset debits stop sleeping unexecuted)", n)
	}
}

// TestSlotHeldUntilWritten: a stream holds its MAX_CONCURRENT_STREAMS
// slot until the writer has ended it, so replies waiting for a window of
// 0 are bounded by the slots: the requests beyond them are refused.
func TestSlotHeldUntilWritten(t *testing.T) {
	const slots, n = 4, 20
	ts := startConfig(t, func(c *Config) { c.MaxConcurrentStreams = slots })
	c := dial(t, ts.addr)
	c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
	for i := range int64(n) {
		c.send(pathEcho, echoMsg(1000), nil)
		// One at a time, so that each echo has been refused or executed
		// before the next HEADERS: only the slots can refuse it.
		ts.awaitCounter(t, func(f map[string]int64) bool {
			return f["requests.echo"]+f["unavailable"] == i+1 && f["exec.echo"] == f["requests.echo"]
		})
	}
	if got := ts.counter(t, "unavailable"); got != n-slots {
		t.Errorf("%d of %d echoes refused with the window 0, want %d (all but the slots)", got, n, n-slots)
	}
}

// TestConnErrorBehindStalledData: a connection error while a reply waits
// for a window of 0 drops what waits and sends GOAWAY and the close at
// once.
func TestConnErrorBehindStalledData(t *testing.T) {
	ts := startServer(t)
	c := dial(t, ts.addr)
	c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
	c.send(pathEcho, echoMsg(1000), nil)
	ts.awaitCounter(t, func(f map[string]int64) bool { return f["exec.echo"] == 1 })
	c.fr.AllowIllegalWrites = true
	c.fr.WriteData(0, true, []byte("x")) // a connection error
	r := c.wait(0, true, 2*time.Second)
	if r.goaway == nil || r.goaway.ErrCode != http2.ErrCodeProtocol || r.closedBy() != "eof" {
		t.Errorf("GOAWAY %+v, connection ended by %q; want GOAWAY(PROTOCOL_ERROR), then a close", r.goaway, r.closedBy())
	}
}

// TestPingFloodCapped: a client that sends PINGs and reads nothing
// blocks the writer; the ACKs queued behind it are capped, past which
// the connection is reset at once, not after the writer's timeout.
func TestPingFloodCapped(t *testing.T) {
	// The writer's timeout well past the awaits below: only the cap may
	// end the connection, not a WRITE_TIMEOUT, however loaded the machine.
	ts := startConfig(t, func(c *Config) { c.WriteTimeout = 5 * time.Minute })
	// The client's receive buffer is small from the SYN on, so that the
	// window it advertises stays small and the server's writer blocks
	// after a few hundred KiB of ACKs, not after tens of MiB.
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		return errors.Join(err, serr)
	}}
	nc, err := d.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	fr := http2.NewFramer(nc, nil)
	io.WriteString(nc, http2.ClientPreface)
	fr.WriteSettings()
	// The flood is written 64 KiB of PING frames at a time, one write
	// each (one frame per write is too slow under -race on a busy
	// machine), until the server closes the connection or the test does.
	var batch bytes.Buffer
	bf := http2.NewFramer(&batch, nil)
	for batch.Len() < 64<<10 {
		bf.WritePing(false, [8]byte{1})
	}
	flooded := make(chan struct{})
	go func() {
		defer close(flooded)
		for {
			if _, err := nc.Write(batch.Bytes()); err != nil {
				return // closed: by the server, which gave up on this connection, or by the test
			}
		}
	}()
	defer func() { nc.Close(); <-flooded }()
	evs := ts.await(t, "PROTOCOL_ERROR", 60*time.Second)
	if got := evs[0].Text("err"); !strings.Contains(got, "ENHANCE_YOUR_CALM") {
		t.Errorf("PROTOCOL_ERROR err=%q, want the control-frame cap's ENHANCE_YOUR_CALM", got)
	}
	ts.await(t, "CONN_CLOSED", 30*time.Second)
	// The reset reaches the client: its flood ends on a write error.
	select {
	case <-flooded:
	case <-time.After(30 * time.Second):
		t.Error("the flood still writes 30s after the server closed the connection")
	}
}

// TestWindowUpdateRules: WINDOW_UPDATE on an idle stream is a connection
// error; on a closed one it is ignored; one that takes a window past
// 2^31-1 is a FLOW_CONTROL_ERROR of the stream or of the connection (RFC
// 9113 §6.9.1), never clamped.
func TestWindowUpdateRules(t *testing.T) {
	const maxInc = 1<<31 - 1
	t.Run("idle", func(t *testing.T) {
		ts := startServer(t)
		c := dial(t, ts.addr)
		c.fr.WriteWindowUpdate(99, 1)
		r := c.wait(0, true, 2*time.Second)
		if r.goaway == nil || r.goaway.ErrCode != http2.ErrCodeProtocol || r.closedBy() != "eof" {
			t.Errorf("GOAWAY %+v, connection ended by %q; want GOAWAY(PROTOCOL_ERROR), then a close", r.goaway, r.closedBy())
		}
	})
	t.Run("closed", func(t *testing.T) {
		ts := startServer(t)
		c := dial(t, ts.addr)
		id := c.send(pathGet, getMsg("a"), nil)
		if r := c.wait(id, false, 2*time.Second); r.status() != "0" {
			t.Fatalf("get: status %q", r.status())
		}
		for range 3 {
			c.fr.WriteWindowUpdate(id, maxInc) // would overflow if it were open
		}
		if r := c.wait(c.send(pathGet, getMsg("a"), nil), false, 2*time.Second); r.status() != "0" || r.goaway != nil {
			t.Errorf("get after WINDOW_UPDATEs on a closed stream: status %q GOAWAY %+v, want 0 and none", r.status(), r.goaway)
		}
	})
	t.Run("stream_overflow", func(t *testing.T) {
		ts := startServer(t, "kind=noreply")
		c := dial(t, ts.addr)
		id := c.send(pathDebit, debitMsg("a", 1), nil)
		ts.await(t, "EXEC", 2*time.Second) // open, and never answered
		c.fr.WriteWindowUpdate(id, maxInc)
		r := c.wait(id, false, 2*time.Second)
		if r.rst == nil || *r.rst != http2.ErrCodeFlowControl {
			t.Errorf("RST_STREAM %v, want FLOW_CONTROL_ERROR", r.rst)
		}
	})
	t.Run("conn_overflow", func(t *testing.T) {
		ts := startServer(t)
		c := dial(t, ts.addr)
		c.fr.WriteWindowUpdate(0, maxInc)
		r := c.wait(0, true, 2*time.Second)
		if r.goaway == nil || r.goaway.ErrCode != http2.ErrCodeFlowControl || r.closedBy() != "eof" {
			t.Errorf("GOAWAY %+v, connection ended by %q; want GOAWAY(FLOW_CONTROL_ERROR), then a close", r.goaway, r.closedBy())
		}
	})
}

// TestUnicodeSpaceAccount: an account holding a non-ASCII space is no
// white space to the bank, which executes it; its answer is encoded, not
// refused INTERNAL.
func TestUnicodeSpaceAccount(t *testing.T) {
	ts := startServer(t)
	c := dial(t, ts.addr)
	r := c.wait(c.send(pathDebit, debitMsg("a\u00a0b", 10), nil), false, 2*time.Second)
	if r.status() != "0" {
		t.Fatalf("executed debit answered grpc-status %q %q, want 0", r.status(), r.header("grpc-message"))
	}
	if got, want := replyText(t, r.data), "account=a\u00a0b balance=990 exec=1 budget_ms=4294967295"; got != want {
		t.Errorf("reply %q, want %q", got, want)
	}
}

// TestAttemptTableBounded: the attempt table keeps at most
// maxAttemptCalls calls, forgetting the oldest first, and ClearFaults
// (ctl.clear) empties it.
func TestAttemptTableBounded(t *testing.T) {
	ts := startServer(t)
	for i := range maxAttemptCalls + 100 {
		ts.attempt("call-" + strconv.Itoa(i))
	}
	ts.amu.Lock()
	n := len(ts.attempts)
	ts.amu.Unlock()
	if n > maxAttemptCalls {
		t.Errorf("attempt table holds %d calls, want at most %d", n, maxAttemptCalls)
	}
	last := "call-" + strconv.Itoa(maxAttemptCalls+99)
	if got := ts.attempt(last); got != 2 {
		t.Errorf("the newest call's next attempt is %d, want 2", got)
	}
	if got := ts.attempt("call-0"); got != 1 {
		t.Errorf("the oldest call, forgotten, is at attempt %d, want 1", got)
	}
	ts.ClearFaults()
	if got := ts.attempt(last); got != 1 {
		t.Errorf("after ClearFaults a call is at attempt %d, want 1", got)
	}
}

// TestExecBudgetMatchesAttempt: EXEC and ATTEMPT log one budget, -1 for
// a request without grpc-timeout.
func TestExecBudgetMatchesAttempt(t *testing.T) {
	ts := startServer(t)
	c := dial(t, ts.addr)
	if r := c.wait(c.send(pathDebit, debitMsg("a", 1), nil), false, 2*time.Second); r.status() != "0" {
		t.Fatalf("debit: status %q", r.status())
	}
	att, _ := ts.events(t, "ATTEMPT")[0].Int("budget")
	exec, _ := ts.events(t, "EXEC")[0].Int("budget")
	if att != -1 || exec != att {
		t.Errorf("ATTEMPT budget=%d EXEC budget=%d, want both -1", att, exec)
	}
}

// TestConnWindowCredited: with stream windows larger than the
// connection's, only the connection window holds the replies back: no
// DATA byte goes past it, and each WINDOW_UPDATE on stream 0 lets out
// exactly its credit, until every reply has ended.
func TestConnWindowCredited(t *testing.T) {
	const n, payload, credit = 6, 15000, 20000
	reply := prefixLen + len(echoMsg(payload))
	total := n * reply // 90 KB: past the 64 KiB window, within it and two credits
	ts := startServer(t)
	c := dial(t, ts.addr)
	c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20})
	for range n {
		c.send(pathEcho, echoMsg(payload), nil)
	}
	ts.awaitCounter(t, func(f map[string]int64) bool { return f["exec.echo"] == n })
	var got tally
	allowed := defaultWindow
	for step := 0; ; step++ {
		want := min(allowed, total)
		c.readUntil(&got, func(t *tally) bool { return t.data >= want }, 2*time.Second)
		// Each edge of the window falls inside one reply's DATA, which
		// fits one frame: a writer past the window shows more than want
		// at once. The PING, answered by the writer, lets a later frame
		// in too, if one was written before it.
		c.fr.WritePing(false, [8]byte{byte(step)})
		if !c.readUntil(&got, func(t *tally) bool { return t.acks == step+1 }, 2*time.Second) {
			t.Fatalf("no PING ACK %d within 2s", step+1)
		}
		if got.data != want {
			t.Fatalf("after %d credits of %d: got %d DATA bytes, want %d", step, credit, got.data, want)
		}
		if want == total {
			break
		}
		c.fr.WriteWindowUpdate(0, credit)
		allowed += credit
	}
	if !c.readUntil(&got, func(t *tally) bool { return len(t.ended) == n }, 2*time.Second) {
		t.Fatalf("%d of %d echoes ended, want all", len(got.ended), n)
	}
	for id, status := range got.ended {
		if status != "0" {
			t.Errorf("stream %d: grpc-status %q, want 0", id, status)
		}
	}
}
