package server_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/server"
	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/servertest"
)

// TestExpiredRequestNotExecuted: a debit whose budget runs out while it
// waits for the only worker is answered DEADLINE_EXCEEDED and never
// executed.
func TestExpiredRequestNotExecuted(t *testing.T) {
	t.Parallel()
	cfg := server.DefaultConfig()
	cfg.Workers = 1
	srv, addr := servertest.Start(t, cfg)
	rc := servertest.Dial(t, addr)

	rc.Send(servertest.Request(1, bank.MethodGet, "account=a sleep=500"))
	d := servertest.Request(2, bank.MethodDebit, "account=a amount=10")
	d.BudgetMs = 100
	rc.Send(d)
	got := rc.RecvByID(1, 2)

	if st := got[1].Status; st != proto.StatusOK {
		t.Errorf("slow get: status %v, want OK", st)
	}
	if st, msg := got[2].Status, string(got[2].Payload); st != proto.StatusDeadlineExceeded || !strings.HasPrefix(msg, "expired before execution") {
		t.Errorf("debit: status %v %q, want DEADLINE_EXCEEDED \"expired before execution ...\"", st, msg)
	}
	for name, want := range map[string]int64{"expired": 1, "exec.debit": 0, "requests.debit": 1} {
		if got := servertest.Counter(t, srv, name); got != want {
			t.Errorf("server %s = %d, want %d", name, got, want)
		}
	}
	rc.Send(servertest.Request(3, bank.MethodGet, "account=a"))
	if b := servertest.Fields(t, rc.Recv().Payload)["balance"]; b != fmt.Sprint(bank.DefaultBalance) {
		t.Errorf("balance after the expired debit = %s, want %d", b, bank.DefaultBalance)
	}
}

// TestExpiredRequestFromClient is the same through a Client: the call
// gives up after its 100ms, and the server, finding the request expired
// when the worker frees up, does not execute it.
func TestExpiredRequestFromClient(t *testing.T) {
	t.Parallel()
	cfg := server.DefaultConfig()
	cfg.Workers = 1
	srv, addr := servertest.Start(t, cfg)
	c := servertest.NewClient(t, addr, servertest.ClientConfig())

	slow := make(chan client.Result, 1)
	go func() { slow <- c.Do(context.Background(), servertest.Get("a", "sleep=500")) }()
	servertest.WaitCounter(t, srv, "requests.get", 1)
	call := servertest.Debit("a", 10)
	call.Timeout = 100 * time.Millisecond
	if r := c.Do(context.Background(), call); r.Status != proto.StatusUnknown {
		t.Errorf("debit: got status %v (%v), want UNKNOWN", r.Status, r.Log)
	}
	<-slow
	servertest.WaitCounter(t, srv, "expired", 1)
	if got := servertest.Counter(t, srv, "exec.debit"); got != 0 {
		t.Errorf("server exec.debit = %d, want 0", got)
	}
	r := c.Do(context.Background(), servertest.Get("a"))
	if b := servertest.Fields(t, r.Payload)["balance"]; b != fmt.Sprint(bank.DefaultBalance) {
		t.Errorf("balance = %s, want %d", b, bank.DefaultBalance)
	}
}

// TestBadFrameClosesOnlyItsConnection: bytes that are not a valid request
// close that connection, unanswered, and nothing after them is read; other
// connections keep being served.
func TestBadFrameClosesOnlyItsConnection(t *testing.T) {
	ping := func(id uint64) []byte { return servertest.Encode(t, servertest.Request(id, serverapi.MethodPing, "")) }
	tests := []struct {
		name string
		bad  []byte
	}{
		{"bad_magic", func() []byte { b := ping(1); b[4], b[5] = 0xde, 0xad; return b }()},
		{"length_2^31-1", []byte{0x7f, 0xff, 0xff, 0xff}},
		{"length_65537", []byte{0, 1, 0, 1}},
		{"length_23", []byte{0, 0, 0, 23}},
		{"response_from_client", servertest.Encode(t, proto.Frame{Type: proto.TypeResponse, ID: 1, Method: serverapi.MethodPing})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, addr := servertest.Start(t, server.DefaultConfig())
			good, bad := servertest.Dial(t, addr), servertest.Dial(t, addr)
			good.SendBytes(ping(1))
			if f := good.Recv(); f.Status != proto.StatusOK {
				t.Fatalf("ping before: status %v, want OK", f.Status)
			}
			// A valid request right behind the bad bytes must not be read.
			bad.SendBytes(append(tt.bad, ping(2)...))
			if extra, _ := bad.WaitClosed(); len(extra) != 0 {
				t.Errorf("server answered the bad connection with % x, want nothing", extra)
			}

			good.SendBytes(ping(3))
			if f := good.Recv(); f.ID != 3 || f.Status != proto.StatusOK {
				t.Errorf("ping after: id %d status %v, want 3 OK", f.ID, f.Status)
			}
			for name, want := range map[string]int64{"protocol_errors": 1, "requests.ctl": 2, "conns_accepted": 2} {
				if got := servertest.Counter(t, srv, name); got != want {
					t.Errorf("server %s = %d, want %d", name, got, want)
				}
			}
		})
	}
}

// TestChunkMode: responses written in 1-13 byte pieces still decode to
// the right answers.
func TestChunkMode(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.Chunk = true
	srv, addr := servertest.Start(t, cfg)
	rc := servertest.Dial(t, addr)
	const n = 20
	var batch []byte
	ids := make([]uint64, n)
	for i := range n {
		ids[i] = uint64(i + 1)
		batch = append(batch, servertest.Encode(t, servertest.Request(ids[i], bank.MethodDebit, fmt.Sprintf("account=acct-%d amount=%d", i, i+1)))...)
	}
	rc.SendBytes(batch)
	got := rc.RecvByID(ids...)
	servertest.WaitCounter(t, srv, "frames_sent", n) // counted once each write returns
	for i, id := range ids {
		want := fmt.Sprintf("account=acct-%d balance=%d budget=5000 exec=1 replayed=false", i, bank.DefaultBalance-(i+1))
		if f := got[id]; f.Status != proto.StatusOK || string(f.Payload) != want {
			t.Errorf("request %d: got %v %q, want OK %q", id, f.Status, f.Payload, want)
		}
	}
	frames, chunks := servertest.Counter(t, srv, "frames_sent"), servertest.Counter(t, srv, "write_chunks")
	if frames != n {
		t.Errorf("server frames_sent = %d, want %d", frames, n)
	}
	if chunks <= frames {
		t.Errorf("server write_chunks = %d, want more than frames_sent %d", chunks, frames)
	}
}

// TestWriteChunksWithoutChunkMode: outside chunk mode each batch of
// responses is one write, so chunks never outnumber frames.
func TestWriteChunksWithoutChunkMode(t *testing.T) {
	srv, addr := servertest.Start(t, server.DefaultConfig())
	rc := servertest.Dial(t, addr)
	for id := uint64(1); id <= 5; id++ {
		rc.Send(servertest.Request(id, serverapi.MethodPing, ""))
		rc.Recv()
	}
	servertest.WaitCounter(t, srv, "frames_sent", 5)
	if frames, chunks := servertest.Counter(t, srv, "frames_sent"), servertest.Counter(t, srv, "write_chunks"); frames != 5 || chunks > frames {
		t.Errorf("server frames_sent = %d, write_chunks = %d; want 5 and at most 5", frames, chunks)
	}
}

// TestQueueFull: with one worker and room for one waiting request, a burst
// of slow requests is partly answered UNAVAILABLE, unexecuted.
func TestQueueFull(t *testing.T) {
	t.Parallel()
	cfg := server.DefaultConfig()
	cfg.Workers, cfg.QueueSize = 1, 1
	srv, addr := servertest.Start(t, cfg)
	rc := servertest.Dial(t, addr)
	const n = 5
	var batch []byte
	ids := make([]uint64, n)
	for i := range n {
		ids[i] = uint64(i + 1)
		batch = append(batch, servertest.Encode(t, servertest.Request(ids[i], bank.MethodDebit, "account=a amount=1 sleep=100"))...)
	}
	rc.SendBytes(batch)
	got := rc.RecvByID(ids...)
	var unavailable, ok int64
	for _, f := range got {
		switch {
		case f.Status == proto.StatusUnavailable && string(f.Payload) == "queue full":
			unavailable++
		case f.Status == proto.StatusOK:
			ok++
		default:
			t.Errorf("request %d: got %v %q, want OK or UNAVAILABLE \"queue full\"", f.ID, f.Status, f.Payload)
		}
	}
	// At most one executing and one waiting when the burst arrives.
	if ok < 1 || ok > 2 {
		t.Errorf("%d requests executed, want 1 or 2", ok)
	}
	for name, want := range map[string]int64{"queue_full": unavailable, "unavailable": unavailable, "exec.debit": ok} {
		if got := servertest.Counter(t, srv, name); got != want {
			t.Errorf("server %s = %d, want %d", name, got, want)
		}
	}
}

func TestControlMethods(t *testing.T) {
	t.Parallel()
	cfg := server.DefaultConfig()
	cfg.Workers = 1
	srv, addr := servertest.Start(t, cfg)
	rc := servertest.Dial(t, addr)
	call := func(id uint64, method, payload string) proto.Frame {
		t.Helper()
		rc.Send(servertest.Request(id, method, payload))
		return rc.Recv()
	}

	if f := call(1, serverapi.MethodPing, ""); f.Status != proto.StatusOK || len(f.Payload) != 0 {
		t.Errorf("ctl.ping: got %v %q, want OK and no payload", f.Status, f.Payload)
	}

	// Control methods bypass the worker queue.
	rc.Send(servertest.Request(2, bank.MethodGet, "account=a sleep=500"))
	if f := call(3, serverapi.MethodPing, ""); f.ID != 3 {
		t.Errorf("first answer while the only worker is busy: id %d, want 3 (the ping)", f.ID)
	}
	if f := rc.Recv(); f.ID != 2 || f.Status != proto.StatusOK {
		t.Errorf("slow get: id %d status %v, want 2 OK", f.ID, f.Status)
	}

	f := call(4, serverapi.MethodStats, "")
	var names []string
	for k := range servertest.Fields(t, f.Payload) {
		names = append(names, k)
	}
	slices.Sort(names)
	if diff := cmp.Diff(serverapi.CounterNames(), names); diff != "" {
		t.Errorf("ctl.stats counter names (-want +got):\n%s", diff)
	}
	stats, err := serverapi.ParseCounters(f.Payload)
	if err != nil {
		t.Fatalf("ctl.stats answer: %v", err)
	}
	type some struct{ RequestsCtl, RequestsGet, ExecGet, ConnsAccepted int64 }
	if diff := cmp.Diff(some{RequestsCtl: 3, RequestsGet: 1, ExecGet: 1, ConnsAccepted: 1},
		some{stats.RequestsCtl, stats.RequestsGet, stats.ExecGet, stats.ConnsAccepted}); diff != "" {
		t.Errorf("ctl.stats values (-want +got):\n%s", diff)
	}

	if f := call(5, serverapi.MethodFault, "kind=bogus"); f.Status != proto.StatusInvalidArgument || !strings.Contains(string(f.Payload), `unknown kind "bogus"`) {
		t.Errorf("ctl.fault kind=bogus: got %v %q, want INVALID_ARGUMENT about the unknown kind", f.Status, f.Payload)
	}
	if f := call(6, serverapi.MethodFault, "count=1   method=debit kind=unavailable"); f.Status != proto.StatusOK || string(f.Payload) != "kind=unavailable method=debit count=1" {
		t.Errorf("ctl.fault: got %v %q, want OK %q", f.Status, f.Payload, "kind=unavailable method=debit count=1")
	}
	if f := call(7, bank.MethodGet, "account=a"); f.Status != proto.StatusOK {
		t.Errorf("get with a debit-only fault set: status %v, want OK", f.Status)
	}
	if f := call(8, bank.MethodDebit, "account=a amount=1"); f.Status != proto.StatusUnavailable || string(f.Payload) != "injected unavailable" {
		t.Errorf("debit with the fault set: got %v %q, want UNAVAILABLE \"injected unavailable\"", f.Status, f.Payload)
	}
	if f := call(9, bank.MethodDebit, "account=a amount=1"); f.Status != proto.StatusOK {
		t.Errorf("debit after the count=1 fault is spent: status %v, want OK", f.Status)
	}
	call(10, serverapi.MethodFault, "kind=unavailable")
	if f := call(11, serverapi.MethodClear, ""); f.Status != proto.StatusOK {
		t.Errorf("ctl.clear: status %v, want OK", f.Status)
	}
	if f := call(12, bank.MethodGet, "account=a"); f.Status != proto.StatusOK {
		t.Errorf("get after ctl.clear: status %v, want OK", f.Status)
	}
	if got := servertest.Counter(t, srv, "faults_fired"); got != 1 {
		t.Errorf("server faults_fired = %d, want 1", got)
	}
}

func TestServerConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*server.Config)
	}{
		{"workers_0", func(c *server.Config) { c.Workers = 0 }},
		{"queue_0", func(c *server.Config) { c.QueueSize = 0 }},
		{"chunk_without_window", func(c *server.Config) { c.Chunk, c.ChunkWindow = true, 0 }},
		{"chunk_window_negative", func(c *server.Config) { c.ChunkWindow = -time.Millisecond }},
		{"write_timeout_negative", func(c *server.Config) { c.WriteTimeout = -time.Second }},
	}
	def := server.DefaultConfig()
	if err := def.Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate() = %v, want nil", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := server.DefaultConfig()
			tt.mutate(&cfg)
			if s, err := server.New(cfg, bank.New(bank.NewMemory(), nil)); !errors.Is(err, server.ErrConfig) || s != nil {
				t.Errorf("server.New() = %v, %v; want nil, an error wrapping %v", s, err, server.ErrConfig)
			}
		})
	}
}

// TestServerClose: Close returns promptly with requests sleeping, a late
// response pending and connections open; it cuts the sleeps short without
// executing those requests, and leaves no goroutine behind.
func TestServerClose(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	srv := servertest.New(t, server.DefaultConfig())
	srv.AddFault(server.Fault{Kind: server.FaultLate, Method: bank.MethodDebit, Count: 1, Delay: time.Minute})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()

	c, err := client.New(ln.Addr().String(), servertest.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	calls := []client.Call{
		servertest.Debit("a", 1),                // executed; its answer is due in a minute
		servertest.Get("b", "sleep=60000"),      // sleeping
		servertest.Debit("c", 1, "sleep=60000"), // sleeping
	}
	results := make(chan client.Result, len(calls))
	for i, call := range calls {
		go func() { results <- c.Do(context.Background(), call) }()
		if i == 0 {
			servertest.WaitCounter(t, srv, "exec.debit", 1)
		}
	}
	servertest.WaitCounter(t, srv, "requests.get", 1)
	servertest.WaitCounter(t, srv, "requests.debit", 2)
	idle, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	servertest.WaitCounter(t, srv, "conns_accepted", 2)

	closed := make(chan struct{})
	go func() { srv.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(servertest.WaitLimit):
		t.Fatalf("Close still running after %v", servertest.WaitLimit)
	}
	if err := <-errc; !errors.Is(err, server.ErrClosed) {
		t.Errorf("Serve returned %v, want %v", err, server.ErrClosed)
	}
	for range calls {
		if r := <-results; r.Status == proto.StatusOK {
			t.Errorf("call in flight at Close: got OK (%v), want a failure", r.Log)
		}
	}
	for name, want := range map[string]int64{"exec.debit": 1, "exec.get": 0} {
		if got := servertest.Counter(t, srv, name); got != want {
			t.Errorf("server %s = %d after Close, want %d", name, got, want)
		}
	}
	if err := srv.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := srv.Serve(ln); !errors.Is(err, server.ErrClosed) {
		t.Errorf("Serve after Close: %v, want %v", err, server.ErrClosed)
	}
	c.Close()
	idle.Close()
	goleak.VerifyNone(t, ignore)
}

// TestCloseBeforeServe: Serve after Close returns at once and closes the
// listener.
func TestCloseBeforeServe(t *testing.T) {
	srv := servertest.New(t, server.DefaultConfig())
	srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Serve(ln); !errors.Is(err, server.ErrClosed) {
		t.Errorf("Serve after Close: %v, want %v", err, server.ErrClosed)
	}
	if _, err := ln.Accept(); err == nil {
		t.Errorf("Serve after Close left the listener open")
	}
}
