package server_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/server"
	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/servertest"
)

// frameIDs renders frames as TYPE/ID, in the order they came.
func frameIDs(frames []proto.Frame) []string {
	out := make([]string, len(frames))
	for i, f := range frames {
		out[i] = f.Type.String() + "/" + string(rune('0'+f.ID))
	}
	return out
}

// drainAsync starts srv.Drain under a timeout and returns its result's
// channel.
func drainAsync(srv *server.Server, timeout time.Duration) <-chan error {
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		errc <- srv.Drain(ctx)
	}()
	return errc
}

// names returns the names of the events among evs that a drain logs.
func drainEvents(evs []serverapi.Event) []string {
	var out []string
	for _, e := range evs {
		switch e.Name {
		case serverapi.EventDrainStart, serverapi.EventDrain, serverapi.EventDrainDropped, serverapi.EventDrained, serverapi.EventDrainDone:
			out = append(out, e.Name)
		}
	}
	return out
}

// TestDrainFinishesTaken: with one worker busy on a slow get and a debit
// queued behind it, a drain names the debit as the last request taken,
// answers both, drops a get sent after the drain frame, half-closes,
// and ends once the client closes.
func TestDrainFinishesTaken(t *testing.T) {
	t.Parallel()
	var log servertest.Log
	cfg := server.DefaultConfig()
	cfg.Workers, cfg.Log = 1, log.Logger()
	srv, addr := servertest.Start(t, cfg)
	rc := servertest.Dial(t, addr)
	rc.Send(servertest.Request(1, bank.MethodGet, "account=a sleep=300"))
	rc.Send(servertest.Request(2, bank.MethodDebit, "account=a amount=10"))
	servertest.WaitCounter(t, srv, "requests.debit", 1)

	errc := drainAsync(srv, servertest.WaitLimit)
	log.WaitEvent(t, serverapi.EventDrain, nil)
	rc.Send(servertest.Request(3, bank.MethodGet, "account=a"))
	frames, err := rc.RecvUntilClosed()
	if !errors.Is(err, io.EOF) {
		t.Errorf("the connection ended with %v, want EOF (the server's FIN)", err)
	}
	want := []string{"DRAIN/2", "RESPONSE/1", "RESPONSE/2"}
	if diff := cmp.Diff(want, frameIDs(frames)); diff != "" {
		t.Errorf("frames (-want +got):\n%s", diff)
	}
	for _, f := range frames {
		if f.Type == proto.TypeResponse && f.Status != proto.StatusOK {
			t.Errorf("answer to %d: %v %q, want OK", f.ID, f.Status, f.Payload)
		}
	}
	rc.Close()
	if err := <-errc; err != nil {
		t.Errorf("Drain: %v, want nil", err)
	}
	for name, want := range map[string]int64{"exec.get": 1, "exec.debit": 1, "drain_dropped": 1} {
		if got := servertest.Counter(t, srv, name); got != want {
			t.Errorf("server %s = %d, want %d", name, got, want)
		}
	}
	wantEvents := []string{serverapi.EventDrainStart, serverapi.EventDrain, serverapi.EventDrainDropped, serverapi.EventDrained, serverapi.EventDrainDone}
	if diff := cmp.Diff(wantEvents, drainEvents(log.Events(t))); diff != "" {
		t.Errorf("drain events (-want +got):\n%s", diff)
	}
}

// TestDrainDeadline: a request that never finishes does not hold the
// drain past its deadline: Drain returns the context's error, the
// connection is closed unanswered, and DRAIN_DONE counts it as cut.
func TestDrainDeadline(t *testing.T) {
	t.Parallel()
	var log servertest.Log
	cfg := server.DefaultConfig()
	cfg.Log = log.Logger()
	srv, addr := servertest.Start(t, cfg, "kind=sleep method=get delay=1m")
	rc := servertest.Dial(t, addr)
	rc.Send(servertest.Request(1, bank.MethodGet, "account=a"))
	log.WaitEvent(t, serverapi.EventFault, nil)

	errc := drainAsync(srv, 200*time.Millisecond)
	frames, err := rc.RecvUntilClosed()
	if err == nil || errors.Is(err, io.EOF) && len(frames) > 1 {
		t.Errorf("the connection ended with %v after %d frames, want it closed after the drain frame alone", err, len(frames))
	}
	if diff := cmp.Diff([]string{"DRAIN/1"}, frameIDs(frames)); diff != "" {
		t.Errorf("frames (-want +got):\n%s", diff)
	}
	if err := <-errc; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Drain: %v, want an error wrapping %v", err, context.DeadlineExceeded)
	}
	done := log.WaitEvent(t, serverapi.EventDrainDone, nil)
	if n := done.Attrs[serverapi.KeyOpen]; n != float64(1) {
		t.Errorf("DRAIN_DONE open=%v, want 1", n)
	}
	if got := servertest.Counter(t, srv, "exec.get"); got != 0 {
		t.Errorf("exec.get = %d, want 0: the sleeping get was cut", got)
	}
}

// TestDrainTwice: two drains at once, and a third after, are one drain:
// one drain frame on the connection, one DRAIN_START, and every call
// returns nil once the client has closed.
func TestDrainTwice(t *testing.T) {
	t.Parallel()
	var log servertest.Log
	cfg := server.DefaultConfig()
	cfg.Log = log.Logger()
	srv, addr := servertest.Start(t, cfg)
	rc := servertest.Dial(t, addr)
	servertest.WaitCounter(t, srv, "conns_open", 1)
	first, second := drainAsync(srv, servertest.WaitLimit), drainAsync(srv, servertest.WaitLimit)
	frames, err := rc.RecvUntilClosed()
	if !errors.Is(err, io.EOF) {
		t.Errorf("the connection ended with %v, want EOF", err)
	}
	if diff := cmp.Diff([]string{"DRAIN/0"}, frameIDs(frames)); diff != "" {
		t.Errorf("frames (-want +got):\n%s", diff)
	}
	rc.Close()
	for i, errc := range []<-chan error{first, second, drainAsync(srv, servertest.WaitLimit)} {
		if err := <-errc; err != nil {
			t.Errorf("Drain %d: %v, want nil", i+1, err)
		}
	}
	if n := countNamed(log.Events(t), serverapi.EventDrainStart); n != 1 {
		t.Errorf("%d DRAIN_START events, want 1", n)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("Close after the drain: %v", err)
	}
}

func countNamed(evs []serverapi.Event, name string) int {
	n := 0
	for _, e := range evs {
		if e.Name == name {
			n++
		}
	}
	return n
}

// TestDrainFrameFromClient: a drain frame from a client is a protocol
// error that closes that connection only.
func TestDrainFrameFromClient(t *testing.T) {
	t.Parallel()
	srv, addr := servertest.Start(t, server.DefaultConfig())
	bad, good := servertest.Dial(t, addr), servertest.Dial(t, addr)
	bad.Send(proto.Frame{Type: proto.TypeDrain, ID: 0, Method: proto.DrainMethod})
	if extra, err := bad.WaitClosed(); len(extra) > 0 || err == nil {
		t.Errorf("after a client's drain frame: read %d bytes, then %v; want the connection closed unanswered", len(extra), err)
	}
	servertest.WaitCounter(t, srv, "protocol_errors", 1)
	good.Send(servertest.Request(1, bank.MethodGet, "account=a"))
	if f := good.Recv(); f.ID != 1 || f.Status != proto.StatusOK {
		t.Errorf("the other connection: got %v %d %q, want OK to 1", f.Status, f.ID, f.Payload)
	}
}

// TestDrainFault: a drain fault on the second request drains the server
// there: the drain frame names the first, the second is dropped
// unexecuted; ctl.drain on another connection, during the drain, is
// dropped too.
func TestDrainFault(t *testing.T) {
	t.Parallel()
	var log servertest.Log
	cfg := server.DefaultConfig()
	cfg.Log = log.Logger()
	srv, addr := servertest.Start(t, cfg, "kind=drain method=debit count=1")
	rc := servertest.Dial(t, addr)
	rc.Send(servertest.Request(1, bank.MethodGet, "account=a"))
	if f := rc.Recv(); f.ID != 1 || f.Status != proto.StatusOK {
		t.Fatalf("get: %v %d %q, want OK to 1", f.Status, f.ID, f.Payload)
	}
	rc.Send(servertest.Request(2, bank.MethodDebit, "account=a amount=10"))
	frames, err := rc.RecvUntilClosed()
	if !errors.Is(err, io.EOF) {
		t.Errorf("the connection ended with %v, want EOF", err)
	}
	if diff := cmp.Diff([]string{"DRAIN/1"}, frameIDs(frames)); diff != "" {
		t.Errorf("frames (-want +got):\n%s", diff)
	}
	rc.Close()
	fault := log.WaitEvent(t, serverapi.EventFault, nil)
	if k := fault.Text(serverapi.KeyKind); k != "drain" {
		t.Errorf("FAULT kind=%s, want drain", k)
	}
	log.WaitEvent(t, serverapi.EventDrainDone, nil)
	for name, want := range map[string]int64{"exec.debit": 0, "drain_dropped": 1, "faults_fired": 1} {
		if got := servertest.Counter(t, srv, name); got != want {
			t.Errorf("server %s = %d, want %d", name, got, want)
		}
	}
}

// TestCtlDrain: ctl.drain is answered before the drain frame, which
// names no request on a connection that sent only control requests.
func TestCtlDrain(t *testing.T) {
	t.Parallel()
	_, addr := servertest.Start(t, server.DefaultConfig())
	rc := servertest.Dial(t, addr)
	rc.Send(servertest.Request(5, serverapi.MethodDrain, ""))
	frames, err := rc.RecvUntilClosed()
	if !errors.Is(err, io.EOF) {
		t.Errorf("the connection ended with %v, want EOF", err)
	}
	if diff := cmp.Diff([]string{"RESPONSE/5", "DRAIN/0"}, frameIDs(frames)); diff != "" {
		t.Errorf("frames (-want +got):\n%s", diff)
	}
}
