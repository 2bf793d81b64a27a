package server_test

import (
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/server"
	"github.com/rpcbench/rpcbench/internal/servertest"
)

// TestQueueSharePerConnection: a connection that floods the queue is
// turned away once it holds its share, unexecuted, and another
// connection's request still finds room.
func TestQueueSharePerConnection(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.Workers, cfg.QueueSize, cfg.MaxQueuedPerConn = 1, 16, 4
	srv, addr := servertest.Start(t, cfg)

	flood := servertest.Dial(t, addr)
	const sent = 10
	ids := make([]uint64, sent)
	var b []byte
	for i := range ids {
		ids[i] = uint64(i + 1)
		b = append(b, servertest.Encode(t, servertest.Request(ids[i], bank.MethodDebit, "account=flood amount=1 sleep=100"))...)
	}
	flood.SendBytes(b)

	other := servertest.Dial(t, addr)
	other.Send(servertest.Request(1, bank.MethodGet, "account=other sleep=0"))
	if f := other.Recv(); f.Status != proto.StatusOK {
		t.Errorf("the other connection's get: %v %q, want OK", f.Status, f.Payload)
	}

	answers := flood.RecvByID(ids...)
	ok, turnedAway := 0, 0
	for _, f := range answers {
		switch {
		case f.Status == proto.StatusOK:
			ok++
		case f.Status == proto.StatusUnavailable && string(f.Payload) == "connection's queue share full":
			turnedAway++
		default:
			t.Errorf("flood answer %d: %v %q", f.ID, f.Status, f.Payload)
		}
	}
	if ok != cfg.MaxQueuedPerConn || turnedAway != sent-cfg.MaxQueuedPerConn {
		t.Errorf("flood: %d OK, %d turned away; want %d and %d", ok, turnedAway, cfg.MaxQueuedPerConn, sent-cfg.MaxQueuedPerConn)
	}
	if got := servertest.Counter(t, srv, "conn_queue_full"); got != int64(turnedAway) {
		t.Errorf("conn_queue_full=%d, want %d", got, turnedAway)
	}
	if got := servertest.Counter(t, srv, "exec.debit"); got != int64(ok) {
		t.Errorf("exec.debit=%d, want %d: a turned-away debit executed", got, ok)
	}
}

// TestShareFreeOnceAnswered: a client that keeps exactly its share in
// flight, sending its next request the moment an answer arrives, is never
// turned away. The worker gives the slots back before it sends the
// answer; the other way round, the next request could find the slot
// still held, a race that showed as a stray UNAVAILABLE or two per
// benchmark round.
func TestShareFreeOnceAnswered(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.Workers, cfg.QueueSize, cfg.MaxQueuedPerConn = 2, 2, 1
	// The worker lingers after each answer, as a descheduled one would:
	// the next request arrives meanwhile.
	// Restored after the server stops: cleanups run last first.
	t.Cleanup(server.SetAnswerSent(func() { time.Sleep(2 * time.Millisecond) }))
	srv, addr := servertest.Start(t, cfg)
	rc := servertest.Dial(t, addr)
	const n = 50
	for i := range uint64(n) {
		// sleep=0 sends it through the queue, where the share applies.
		rc.Send(servertest.Request(i+1, bank.MethodGet, "account=a sleep=0"))
		if f := rc.Recv(); f.Status != proto.StatusOK {
			t.Fatalf("request %d of %d: %v %q, want OK: its share was still held by the answered one", i+1, n, f.Status, f.Payload)
		}
	}
	if got := servertest.Counter(t, srv, "conn_queue_full"); got != 0 {
		t.Errorf("conn_queue_full=%d, want 0", got)
	}
}
