package server_test

import (
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/server"
	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/servertest"
	"github.com/rpcbench/rpcbench/internal/transport"
)

func oneWorker() server.Config {
	cfg := server.DefaultConfig()
	cfg.Workers = 1
	return cfg
}

func cancelReq(id uint64, payload string) proto.Frame {
	return servertest.Request(id, serverapi.MethodCancel, payload)
}

// TestCancelQueuedRequest: a debit waiting behind a slow request for the
// only worker, canceled on its connection, is answered DEADLINE_EXCEEDED
// when the worker takes it and never executes.
func TestCancelQueuedRequest(t *testing.T) {
	t.Parallel()
	srv, addr := servertest.Start(t, oneWorker())
	rc := servertest.Dial(t, addr)

	rc.Send(servertest.Request(1, bank.MethodGet, "account=a sleep=1000"))
	rc.Send(servertest.Request(2, bank.MethodDebit, "account=a amount=10"))
	rc.Send(cancelReq(3, "id=2"))
	got := rc.RecvByID(1, 2, 3)

	if st, msg := got[3].Status, string(got[3].Payload); st != proto.StatusOK || msg != "found=true" {
		t.Errorf("ctl.cancel id=2: got %v %q, want OK \"found=true\"", st, msg)
	}
	if st := got[1].Status; st != proto.StatusOK {
		t.Errorf("slow get: status %v, want OK", st)
	}
	if st, msg := got[2].Status, string(got[2].Payload); st != proto.StatusDeadlineExceeded || msg != "canceled before execution" {
		t.Errorf("canceled debit: got %v %q, want DEADLINE_EXCEEDED \"canceled before execution\"", st, msg)
	}
	for name, want := range map[string]int64{"canceled": 1, "exec.debit": 0, "requests.debit": 1, "expired": 0} {
		if got := servertest.Counter(t, srv, name); got != want {
			t.Errorf("server %s = %d, want %d", name, got, want)
		}
	}
	// Answered already: a second cancel finds nothing, and still answers OK.
	rc.Send(cancelReq(4, "id=2"))
	if f := rc.Recv(); f.Status != proto.StatusOK || string(f.Payload) != "found=false" {
		t.Errorf("second ctl.cancel id=2: got %v %q, want OK \"found=false\"", f.Status, f.Payload)
	}
}

// TestCancelOtherConnection: a cancel names a request of its own
// connection; the same ID queued on another connection is left alone.
func TestCancelOtherConnection(t *testing.T) {
	t.Parallel()
	srv, addr := servertest.Start(t, oneWorker())
	a, b := servertest.Dial(t, addr), servertest.Dial(t, addr)

	a.Send(servertest.Request(1, bank.MethodGet, "account=a sleep=1000"))
	a.Send(servertest.Request(2, bank.MethodDebit, "account=a amount=10"))
	servertest.WaitCounter(t, srv, "requests.debit", 1)
	b.Send(cancelReq(1, "id=2"))
	if f := b.Recv(); f.Status != proto.StatusOK || string(f.Payload) != "found=false" {
		t.Errorf("ctl.cancel id=2 from another connection: got %v %q, want OK \"found=false\"", f.Status, f.Payload)
	}
	if f := a.RecvByID(1, 2)[2]; f.Status != proto.StatusOK {
		t.Errorf("debit: status %v %q, want OK", f.Status, f.Payload)
	}
	if got := servertest.Counter(t, srv, "canceled"); got != 0 {
		t.Errorf("server canceled = %d, want 0", got)
	}
}

func TestCancelPayload(t *testing.T) {
	t.Parallel()
	_, addr := servertest.Start(t, server.DefaultConfig())
	rc := servertest.Dial(t, addr)
	tests := []struct {
		payload string
		want    proto.Status
		text    string // the answer's payload, or a prefix of its error
	}{
		{"id=99", proto.StatusOK, "found=false"},
		{"id=18446744073709551615", proto.StatusOK, "found=false"},
		{"", proto.StatusInvalidArgument, "server: ctl.cancel payload"},
		{"id=0", proto.StatusInvalidArgument, "server: ctl.cancel id="},
		{"id=-1", proto.StatusInvalidArgument, "server: ctl.cancel id="},
		{"id=x", proto.StatusInvalidArgument, "server: ctl.cancel id="},
		{"id=1 extra=2", proto.StatusInvalidArgument, "server: ctl.cancel payload"},
		{"ID=1", proto.StatusInvalidArgument, "server: ctl.cancel payload"},
		{"junk", proto.StatusInvalidArgument, "serverapi: "},
	}
	for i, tt := range tests {
		t.Run(tt.payload, func(t *testing.T) {
			rc.Send(cancelReq(uint64(i+1), tt.payload))
			f := rc.Recv()
			if f.Status != tt.want || !strings.HasPrefix(string(f.Payload), tt.text) {
				t.Errorf("ctl.cancel %q: got %v %q, want %v %q...", tt.payload, f.Status, f.Payload, tt.want, tt.text)
			}
		})
	}
}

// gateHandler executes "work" by announcing it started and waiting until
// released, so that a test knows for sure a request is executing.
type gateHandler struct {
	started chan uint64
	release chan struct{}
}

func (gateHandler) Methods() []string                { return []string{"work"} }
func (gateHandler) MayBlock(*transport.Request) bool { return true }
func (gateHandler) Counters(func(string, int64))     {}
func (h gateHandler) Execute(r *transport.Request, dst []byte) (proto.Status, []byte) {
	h.started <- r.ID
	<-h.release
	return proto.StatusOK, append(dst, "done"...)
}

// TestCancelExecutingRequest: a request a worker is executing is not
// stopped by a cancel; it runs to completion and is answered.
func TestCancelExecutingRequest(t *testing.T) {
	t.Parallel()
	h := gateHandler{started: make(chan uint64, 1), release: make(chan struct{})}
	srv, err := server.New(oneWorker(), h)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-errc; !errors.Is(err, server.ErrClosed) {
			t.Errorf("Serve returned %v, want %v", err, server.ErrClosed)
		}
	})
	rc := servertest.Dial(t, ln.Addr().String())

	rc.Send(servertest.Request(1, "work", ""))
	<-h.started
	rc.Send(cancelReq(2, "id=1"))
	if f := rc.Recv(); f.ID != 2 || f.Status != proto.StatusOK || string(f.Payload) != "found=false" {
		t.Errorf("ctl.cancel of the executing request: got id %d %v %q, want id 2 OK \"found=false\"", f.ID, f.Status, f.Payload)
	}
	close(h.release)
	if f := rc.Recv(); f.ID != 1 || f.Status != proto.StatusOK || string(f.Payload) != "done" {
		t.Errorf("executing request: got id %d %v %q, want id 1 OK \"done\"", f.ID, f.Status, f.Payload)
	}
	if got := srv.Counters()["canceled"]; got != "0" {
		t.Errorf("server canceled = %s, want 0", got)
	}
}
