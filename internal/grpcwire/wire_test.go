package grpcwire

import (
	"bytes"
	"encoding/binary"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/protobuf/encoding/protowire"
)

// TestExpiredNotExecuted: a request whose grpc-timeout ran out before it
// could execute (1ns, spent before its goroutine starts) is answered
// DEADLINE_EXCEEDED unexecuted.
func TestExpiredNotExecuted(t *testing.T) {
	ts := startServer(t)
	c := dial(t, ts.addr)
	// 1n is spent before any goroutine can execute the request.
	id := c.send(pathDebit, debitMsg("a", 10), md{{"grpc-timeout", "1n"}, {MetaCall, "c1"}})
	r := c.wait(id, false, 2*time.Second)
	if !r.trailersOnly || r.status() != "4" {
		t.Fatalf("got %v, want trailers-only grpc-status 4", r.headers)
	}
	if n := len(ts.events(t, "EXEC")); n != 0 {
		t.Errorf("%d EXEC events, want 0", n)
	}
	if n := len(ts.events(t, "EXPIRED")); n != 1 {
		t.Errorf("%d EXPIRED events, want 1", n)
	}
}

// TestDeadlineCutsWait: a handler that waits (sleep=2000) past its
// request's 200ms grpc-timeout stops waiting at the deadline: answered
// DEADLINE_EXCEEDED, unexecuted, logged EXPIRED. Before the handler's
// Done closed at the deadline it slept the whole 2s and executed.
func TestDeadlineCutsWait(t *testing.T) {
	ts := startServer(t)
	c := dial(t, ts.addr)
	msg := protowire.AppendTag(debitMsg("a", 10), fieldDebitSleepMs, protowire.VarintType)
	msg = protowire.AppendVarint(msg, 2000)
	id := c.send(pathDebit, msg, md{{"grpc-timeout", "200m"}, {MetaCall, "c1"}})
	r := c.wait(id, false, 1500*time.Millisecond)
	if !r.trailersOnly || r.status() != "4" {
		t.Fatalf("got %v, want trailers-only grpc-status 4 before the 2s sleep ended", r.headers)
	}
	if n := len(ts.events(t, "EXEC")); n != 0 {
		t.Errorf("%d EXEC events, want 0", n)
	}
	if n := len(ts.events(t, "EXPIRED")); n != 1 {
		t.Errorf("%d EXPIRED events, want 1", n)
	}
}

// TestAttemptsAndReplay: every HEADERS logs an ATTEMPT numbered per
// call; a keyed retry is replayed, not executed again; the key reused
// with another amount is refused.
func TestAttemptsAndReplay(t *testing.T) {
	ts := startServer(t)
	c := dial(t, ts.addr)
	key := md{{MetaKey, "k1"}, {MetaCall, "c1"}}
	r1 := c.wait(c.send(pathDebit, debitMsg("a", 10), key), false, 2*time.Second)
	r2 := c.wait(c.send(pathDebit, debitMsg("a", 10), append(key, [2]string{"grpc-previous-rpc-attempts", "1"})), false, 2*time.Second)
	if got := replyText(t, r1.data); got != "account=a balance=990 exec=1 budget_ms=4294967295" {
		t.Errorf("first answer %q", got)
	}
	if got := replyText(t, r2.data); got != "account=a balance=990 exec=1 replayed=1 budget_ms=4294967295" {
		t.Errorf("retry's answer %q, want the first one replayed", got)
	}
	r3 := c.wait(c.send(pathDebit, debitMsg("a", 20), md{{MetaKey, "k1"}}), false, 2*time.Second)
	if r3.status() != "3" {
		t.Errorf("key reuse: grpc-status %q, want 3", r3.status())
	}
	atts := ts.events(t, "ATTEMPT")
	if len(atts) != 3 {
		t.Fatalf("%d ATTEMPT events, want 3", len(atts))
	}
	for i, want := range []struct {
		prev string
		n    int64
	}{{"-", 1}, {"1", 2}, {"-", 1}} {
		// The third names no call: its key, k1, names it, a first attempt.
		if n, _ := atts[i].Int("attempt"); atts[i].Text("prev") != want.prev || n != want.n {
			t.Errorf("ATTEMPT %d: %v, want prev=%s attempt=%d", i, atts[i], want.prev, want.n)
		}
	}
	if n := len(ts.events(t, "EXEC")); n != 1 {
		t.Errorf("%d EXEC events, want 1", n)
	}
}

// TestConnectionKeepsServing: PINGs are answered, the connection window
// is credited (more than 64 KiB of requests on one connection), and a
// request on an unknown path, a bad content-type or a bad grpc-timeout
// is refused without closing the connection.
func TestConnectionKeepsServing(t *testing.T) {
	ts := startServer(t)
	c := dial(t, ts.addr)
	if err := c.fr.WritePing(false, [8]byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	// Gets padded with an unknown field: big requests, small replies, so
	// that only the server's credit of its receive window is tested (this
	// client never credits the server's send window).
	big := append(protowire.AppendBytes(protowire.AppendTag(nil, 7, protowire.BytesType), bytes.Repeat([]byte("x"), 15000)), getMsg("a")...)
	for i := range 8 { // 120 KB, beyond the 64 KiB initial window
		r := c.wait(c.send(pathGet, big, nil), false, 2*time.Second)
		if r.status() != "0" {
			t.Fatalf("get %d: status %q, want 0", i, r.status())
		}
	}
	if r := c.wait(c.send("/nope/Nope", nil, nil), false, 2*time.Second); r.status() != "12" {
		t.Errorf("unknown path: grpc-status %q, want 12", r.status())
	}
	badTimeout := md{{"grpc-timeout", "12x"}}
	if r := c.wait(c.send(pathGet, getMsg("a"), badTimeout), false, 2*time.Second); r.rst == nil || *r.rst != http2.ErrCodeProtocol {
		t.Errorf("bad grpc-timeout: RST %v, want PROTOCOL_ERROR", r.rst)
	}
	// An oversized message is refused by its prefix alone.
	id := c.nextID
	c.nextID += 2
	c.hbuf.Reset()
	hdrs := md{{":method", "POST"}, {":scheme", "http"}, {":path", pathEcho}, {":authority", "t"}, {"content-type", "application/grpc"}}
	for _, f := range hdrs {
		c.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.hbuf.Bytes(), EndHeaders: true})
	prefix := make([]byte, prefixLen)
	binary.BigEndian.PutUint32(prefix[1:], 1<<30)
	c.fr.WriteData(id, false, prefix)
	if r := c.wait(id, false, 2*time.Second); r.status() != "8" {
		t.Errorf("1 GiB message: grpc-status %q, want 8", r.status())
	}
	// Still serving, and the PING was answered.
	if r := c.wait(c.send(pathGet, getMsg("a"), nil), false, 2*time.Second); r.status() != "0" {
		t.Errorf("after the refusals: grpc-status %q, want 0", r.status())
	}
	if n := len(ts.events(t, "PROTOCOL_ERROR")); n != 1 {
		t.Errorf("%d PROTOCOL_ERROR events, want 1 (the grpc-timeout)", n)
	}
}

// TestPingAck: a PING is answered with its bytes while a request sleeps.
func TestPingAck(t *testing.T) {
	ts := startServer(t, "kind=noreply")
	c := dial(t, ts.addr)
	c.send(pathDebit, debitMsg("a", 1), nil)
	c.fr.WritePing(false, [8]byte{9, 8, 7})
	deadline := time.After(2 * time.Second)
	for {
		select {
		case f := <-c.frames:
			if p, ok := f.(*http2.PingFrame); ok && p.IsAck() && p.Data == [8]byte{9, 8, 7} {
				return
			}
		case <-deadline:
			t.Fatal("no PING ACK")
		}
	}
}

// TestMalformedFrameClosesConnOnly: a frame on stream 0 that must not be
// there gets GOAWAY(PROTOCOL_ERROR) and closes that connection; another
// connection is served.
func TestMalformedFrameClosesConnOnly(t *testing.T) {
	ts := startServer(t)
	bad := dial(t, ts.addr)
	good := dial(t, ts.addr)
	bad.fr.AllowIllegalWrites = true
	bad.fr.WriteData(0, true, []byte("x")) // DATA on stream 0
	r := bad.wait(1, true, 2*time.Second)
	if r.goaway == nil || r.goaway.ErrCode != http2.ErrCodeProtocol || r.closedBy() != "eof" {
		t.Errorf("GOAWAY %+v, closed by %q; want PROTOCOL_ERROR and a close", r.goaway, r.closedBy())
	}
	if r := good.wait(good.send(pathGet, getMsg("a"), nil), false, 2*time.Second); r.status() != "0" {
		t.Errorf("the other connection: grpc-status %q, want 0", r.status())
	}
}

// TestFieldsMatchProto reads bank.proto and checks every field number
// and type the hand-written encoding uses.
func TestFieldsMatchProto(t *testing.T) {
	src, err := os.ReadFile("../../proto/rpcbench/bank/v1/bank.proto")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		message, field, typ string
		num                 protowire.Number
	}{
		{"GetRequest", "account", "string", fieldGetAccount},
		{"GetRequest", "sleep_ms", "int64", fieldGetSleepMs},
		{"GetRequest", "work_ms", "int64", fieldGetWorkMs},
		{"DebitRequest", "account", "string", fieldDebitAccount},
		{"DebitRequest", "amount", "int64", fieldDebitAmount},
		{"DebitRequest", "sleep_ms", "int64", fieldDebitSleepMs},
		{"DebitRequest", "work_ms", "int64", fieldDebitWorkMs},
		{"EchoRequest", "payload", "bytes", fieldEchoPayload},
		{"EchoReply", "payload", "bytes", fieldEchoPayload},
		{"AccountReply", "account", "string", fieldReplyAccount},
		{"AccountReply", "balance", "int64", fieldReplyBalance},
		{"AccountReply", "exec", "int64", fieldReplyExec},
		{"AccountReply", "replayed", "bool", fieldReplyReplayed},
		{"AccountReply", "budget_ms", "int64", fieldReplyBudgetMs},
	}
	fieldRe := regexp.MustCompile(`^\s*(\w+)\s+(\w+)\s*=\s*(\d+);`)
	got := map[string]string{} // "Message.field" -> "type num"
	var msg string
	for _, line := range strings.Split(string(src), "\n") {
		if m, ok := strings.CutPrefix(line, "message "); ok {
			msg = strings.Fields(m)[0]
			continue
		}
		if m := fieldRe.FindStringSubmatch(line); m != nil && msg != "" {
			got[msg+"."+m[2]] = m[1] + " " + m[3]
		}
	}
	if len(got) != len(tests) {
		t.Errorf("bank.proto has %d fields, the table %d: %v", len(got), len(tests), got)
	}
	for _, tt := range tests {
		want := tt.typ + " " + strconv.Itoa(int(tt.num))
		if g := got[tt.message+"."+tt.field]; g != want {
			t.Errorf("%s.%s: proto says %q, the encoding uses %q", tt.message, tt.field, g, want)
		}
	}
}

// TestDecodeRequest: unknown fields are skipped, the last of a repeated
// field wins, a wrong wire type or a truncated length is an error.
func TestDecodeRequest(t *testing.T) {
	unknown := protowire.AppendTag(nil, 9, protowire.BytesType)
	unknown = protowire.AppendString(unknown, "zzz")
	tests := []struct {
		name    string
		method  string
		msg     []byte
		want    string
		wantErr bool
	}{
		{"debit", "debit", debitMsg("a", 5), "account=a amount=5", false},
		{"unknown field skipped", "debit", append(unknown, debitMsg("a", 5)...), "account=a amount=5", false},
		{"last wins", "debit", append(debitMsg("a", 5), debitMsg("b", 7)...), "account=b amount=7", false},
		{"empty get", "get", nil, "account=", false},
		{"wrong wire type", "get", protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 3), "", true},
		{"truncated length", "get", []byte{0x0a, 0x7f, 'a'}, "", true},
		{"bad utf-8", "get", protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte{0xff}), "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := decodeRequest(tt.method, tt.msg)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			p, err := appendPayload(nil, tt.method, &r)
			if err != nil || string(p) != tt.want {
				t.Errorf("payload %q, %v; want %q", p, err, tt.want)
			}
		})
	}
}

func FuzzDecodeRequest(f *testing.F) {
	f.Add("debit", debitMsg("a", 5))
	f.Add("get", getMsg("acct"))
	f.Add("echo", []byte{0x0a, 0x02, 'h', 'i'})
	f.Add("get", []byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add("debit", []byte{0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, method string, b []byte) {
		r, err := decodeRequest(method, b)
		if err != nil {
			return
		}
		// What decodes re-encodes as payload text the bank can parse,
		// or is refused as an argument the text cannot carry.
		if _, err := appendPayload(nil, method, &r); err != nil && method == "echo" {
			t.Errorf("echo payload refused: %v", err)
		}
		if len(r.account) > len(b) || len(r.payload) > len(b) {
			t.Errorf("decoded more than the message held")
		}
	})
}

// TestSendWindowHonoured: the server sends no more DATA than the
// client's connection window allows, until the client credits it.
func TestSendWindowHonoured(t *testing.T) {
	ts := startServer(t)
	c := dial(t, ts.addr)
	big := protowire.AppendBytes(protowire.AppendTag(nil, fieldEchoPayload, protowire.BytesType), bytes.Repeat([]byte("x"), 15000))
	got := 0
	for range 5 { // 75 KB of replies, beyond 65535
		r := c.wait(c.send(pathEcho, big, nil), false, 500*time.Millisecond)
		got += len(r.data)
	}
	if got != defaultWindow {
		t.Fatalf("got %d reply bytes without crediting, want exactly the window, %d", got, defaultWindow)
	}
	c.fr.WriteWindowUpdate(0, 1<<20)
	r := c.wait(9, false, 2*time.Second)
	if r.status() != "0" {
		t.Errorf("after the credit, the last echo's trailers %v, want grpc-status 0", r.trailers)
	}
}

// TestWaitForWorkerCounts: with one worker busy, a request waiting for
// it is answered expired when its grpc-timeout passes, not when the
// worker frees, and one the client resets while waiting never executes;
// neither is executed, and the log says why.
func TestWaitForWorkerCounts(t *testing.T) {
	const hold = 1500 * time.Millisecond
	ts := startConfig(t, func(c *Config) { c.Workers = 1 }, "kind=sleep method=get count=1 delay="+hold.String())
	c := dial(t, ts.addr)
	busy := c.send(pathGet, getMsg("a"), nil)
	ts.await(t, "FAULT", 2*time.Second) // the get holds the only slot, sleeping
	start := time.Now()
	expiring := c.send(pathDebit, debitMsg("a", 10), md{{"grpc-timeout", "100m"}, {MetaCall, "expiring"}})
	r := c.wait(expiring, false, 2*time.Second)
	// Answered at its timeout, well before the worker frees: bound by
	// the hold, so that a loaded machine's slack is not what is judged.
	if el := time.Since(start); !r.trailersOnly || r.status() != "4" || el >= hold-200*time.Millisecond {
		t.Errorf("the waiting debit got %v after %v, want trailers-only grpc-status 4 at its 100ms timeout, before the busy get's %v", r.headers, el, hold)
	}
	reset := c.send(pathDebit, debitMsg("b", 10), md{{MetaCall, "reset"}})
	c.fr.WriteRSTStream(reset, http2.ErrCodeCancel)
	if r := c.wait(busy, false, 3*time.Second); r.status() != "0" {
		t.Fatalf("the busy get: %v %v, want grpc-status 0", r.headers, r.trailers)
	}
	// A get sent after the worker freed runs after anything still
	// waiting for it, the reset debit included, had it been left waiting.
	if r := c.wait(c.send(pathGet, getMsg("a"), nil), false, 2*time.Second); r.status() != "0" {
		t.Fatalf("the get after: %v %v, want grpc-status 0", r.headers, r.trailers)
	}
	for _, e := range ts.events(t, "EXEC") {
		if e.Text("method") == "debit" {
			t.Errorf("debit of call %s executed, want neither", e.Text("call"))
		}
	}
	if evs := ts.events(t, "EXPIRED"); len(evs) != 1 || evs[0].Text("call") != "expiring" {
		t.Errorf("EXPIRED events %v, want one, for call expiring", evs)
	}
	if evs := ts.events(t, "CANCELED"); len(evs) != 1 || evs[0].Text("call") != "reset" {
		t.Errorf("CANCELED events %v, want one, for call reset", evs)
	}
}

// TestExpiredWaitingForWorker: a request whose grpc-timeout passes while
// it waits for the only worker is answered DEADLINE_EXCEEDED, logged
// EXPIRED and counted expired, and never executed, not even once the
// worker frees.
func TestExpiredWaitingForWorker(t *testing.T) {
	ts := startConfig(t, func(c *Config) { c.Workers = 1 }, "kind=sleep method=get count=1 delay=500ms")
	c := dial(t, ts.addr)
	busy := c.send(pathGet, getMsg("a"), nil)
	ts.await(t, "FAULT", 2*time.Second) // the get holds the only worker, sleeping
	id := c.send(pathDebit, debitMsg("a", 10), md{{"grpc-timeout", "50m"}, {MetaCall, "waiting"}})
	var got tally
	c.readUntil(&got, func(t *tally) bool { return len(t.ended) == 2 }, 2*time.Second)
	if got.ended[busy] != "0" {
		t.Fatalf("the busy get: grpc-status %q, want 0", got.ended[busy])
	}
	if status, ok := got.ended[id]; !ok || status != "4" {
		t.Errorf("the waiting debit: ended %v grpc-status %q, want ended, grpc-status 4", ok, status)
	}
	// Run after anything still waiting for the worker.
	if r := c.wait(c.send(pathGet, getMsg("a"), nil), false, 2*time.Second); r.status() != "0" {
		t.Fatalf("the get after: grpc-status %q, want 0", r.status())
	}
	if got := ts.counter(t, "expired"); got != 1 {
		t.Errorf("expired counter %d, want 1", got)
	}
	evs := ts.events(t, "EXPIRED")
	if len(evs) != 1 || evs[0].Text("call") != "waiting" {
		t.Errorf("EXPIRED events %v, want one, for call waiting", evs)
	} else if budget, _ := evs[0].Int("budget"); budget != 50 {
		t.Errorf("EXPIRED budget=%d, want 50", budget)
	}
	for _, e := range ts.events(t, "EXEC") {
		if e.Text("method") == "debit" {
			t.Errorf("the expired debit executed: %v", e)
		}
	}
}
