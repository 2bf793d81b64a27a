package grpcwire

import (
	"bytes"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"google.golang.org/protobuf/encoding/protowire"
)

// echoMsg is an EchoRequest holding n bytes.
func echoMsg(n int) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, fieldEchoPayload, protowire.BytesType), bytes.Repeat([]byte("x"), n))
}

// tally is what a client read on every stream of its connection.
type tally struct {
	data  int               // DATA bytes
	ended map[uint32]string // streams ended by END_STREAM: their grpc-status
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
