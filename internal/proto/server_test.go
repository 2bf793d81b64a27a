package proto_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"math"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/rpcbench/rpcbench/internal/proto"
)

// eventLog collects the server's event lines so a test can wait for one.
type eventLog struct {
	mu    sync.Mutex // guards lines
	lines []string
}

func (l *eventLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, string(p))
	return len(p), nil
}

func (l *eventLog) has(substr string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.ContainsFunc(l.lines, func(s string) bool { return strings.Contains(s, substr) })
}

// executingBarrier returns a server config whose log tells when a debit
// is about to execute: a zero-length sleep fault on the first debit logs
// "FAULT sleep id=N" on the worker right before it executes, with nothing
// in between that can block.
func executingBarrier(cfg proto.ServerConfig) (proto.ServerConfig, *eventLog, string) {
	ev := &eventLog{}
	cfg.Log = log.New(ev, "", 0)
	return cfg, ev, "kind=sleep method=debit count=1"
}

func TestBusinessMethods(t *testing.T) {
	type answer struct {
		Status  proto.Status
		Payload string
	}
	tests := []struct {
		name    string
		method  string
		payload string
		want    answer
	}{
		{"get", proto.MethodGet, "account=a",
			answer{proto.StatusOK, "account=a balance=1000 budget=5000 exec=0 replayed=false"}},
		{"get_extra_fields_ignored", proto.MethodGet, "account=a colour=blue sleep=1",
			answer{proto.StatusOK, "account=a balance=1000 budget=5000 exec=0 replayed=false"}},
		{"get_no_account", proto.MethodGet, "sleep=1", answer{proto.StatusInvalidArgument, "account is required"}},
		{"get_empty_account", proto.MethodGet, "account=", answer{proto.StatusInvalidArgument, "account is required"}},
		{"get_not_key_value", proto.MethodGet, "account", answer{proto.StatusInvalidArgument, `proto: "account" is not key=value`}},
		{"get_tab_separated", proto.MethodGet, "account=a\tsleep=x", answer{proto.StatusInvalidArgument, `proto: field sleep="x" is not an integer`}},
		{"get_bad_sleep", proto.MethodGet, "account=a sleep=x", answer{proto.StatusInvalidArgument, `proto: field sleep="x" is not an integer`}},
		{"debit", proto.MethodDebit, "account=a amount=1000",
			answer{proto.StatusOK, "account=a balance=0 budget=5000 exec=1 replayed=false"}},
		{"debit_no_amount", proto.MethodDebit, "account=a", answer{proto.StatusInvalidArgument, "amount must be a positive integer"}},
		{"debit_amount_0", proto.MethodDebit, "account=a amount=0", answer{proto.StatusInvalidArgument, "amount must be a positive integer"}},
		{"debit_amount_negative", proto.MethodDebit, "account=a amount=-5", answer{proto.StatusInvalidArgument, "amount must be a positive integer"}},
		{"debit_amount_text", proto.MethodDebit, "account=a amount=ten", answer{proto.StatusInvalidArgument, "amount must be a positive integer"}},
		{"debit_insufficient", proto.MethodDebit, "account=a amount=1001", answer{proto.StatusAppError, "insufficient funds"}},
		{"unknown_method", "put", "account=a", answer{proto.StatusInvalidArgument, `unknown method "put"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, addr := startServer(t, proto.DefaultServerConfig())
			rc := dialRaw(t, addr)
			rc.send(request(7, tt.method, tt.payload))
			f := rc.recv()
			if f.ID != 7 || f.Type != proto.TypeResponse || f.Method != tt.method {
				t.Errorf("response id %d type %v method %q, want 7 RESPONSE %q", f.ID, f.Type, f.Method, tt.method)
			}
			if diff := cmp.Diff(tt.want, answer{f.Status, string(f.Payload)}); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
			// Only an OK answer executed anything.
			executed := int64(0)
			if tt.want.Status == proto.StatusOK {
				executed = 1
			}
			name := "exec." + tt.method
			if tt.method != proto.MethodGet && tt.method != proto.MethodDebit {
				name, executed = "requests.other", 1
			}
			if got := counter(t, srv, name); got != executed {
				t.Errorf("server %s = %d, want %d", name, got, executed)
			}
		})
	}
}

// TestExpiredRequestNotExecuted: a debit whose budget runs out while it
// waits for the only worker is answered DEADLINE_EXCEEDED and never
// executed.
func TestExpiredRequestNotExecuted(t *testing.T) {
	t.Parallel()
	cfg := proto.DefaultServerConfig()
	cfg.Workers = 1
	srv, addr := startServer(t, cfg)
	rc := dialRaw(t, addr)

	rc.send(request(1, proto.MethodGet, "account=a sleep=500"))
	d := request(2, proto.MethodDebit, "account=a amount=10")
	d.BudgetMs = 100
	rc.send(d)
	got := rc.recvByID(1, 2)

	if st := got[1].Status; st != proto.StatusOK {
		t.Errorf("slow get: status %v, want OK", st)
	}
	if st, msg := got[2].Status, string(got[2].Payload); st != proto.StatusDeadlineExceeded || !strings.HasPrefix(msg, "expired before execution") {
		t.Errorf("debit: status %v %q, want DEADLINE_EXCEEDED \"expired before execution ...\"", st, msg)
	}
	for name, want := range map[string]int64{"expired": 1, "exec.debit": 0, "requests.debit": 1} {
		if got := counter(t, srv, name); got != want {
			t.Errorf("server %s = %d, want %d", name, got, want)
		}
	}
	rc.send(request(3, proto.MethodGet, "account=a"))
	if b := fields(t, rc.recv().Payload)["balance"]; b != fmt.Sprint(proto.DefaultBalance) {
		t.Errorf("balance after the expired debit = %s, want %d", b, proto.DefaultBalance)
	}
}

// TestExpiredRequestFromClient is the same through a Client: the call
// gives up after its 100ms, and the server, finding the request expired
// when the worker frees up, does not execute it.
func TestExpiredRequestFromClient(t *testing.T) {
	t.Parallel()
	cfg := proto.DefaultServerConfig()
	cfg.Workers = 1
	srv, addr := startServer(t, cfg)
	c := newClient(t, addr, testConfig())

	slow := make(chan proto.Result, 1)
	go func() { slow <- c.Do(context.Background(), get("a", "sleep=500")) }()
	waitCounter(t, srv, "requests.get", 1)
	call := debit("a", 10)
	call.Timeout = 100 * time.Millisecond
	if r := c.Do(context.Background(), call); r.Status != proto.StatusUnknown {
		t.Errorf("debit: got status %v (%v), want UNKNOWN", r.Status, r.Log)
	}
	<-slow
	waitCounter(t, srv, "expired", 1)
	if got := counter(t, srv, "exec.debit"); got != 0 {
		t.Errorf("server exec.debit = %d, want 0", got)
	}
	r := c.Do(context.Background(), get("a"))
	if b := fields(t, r.Payload)["balance"]; b != fmt.Sprint(proto.DefaultBalance) {
		t.Errorf("balance = %s, want %d", b, proto.DefaultBalance)
	}
}

func TestIdempotencyKey(t *testing.T) {
	type answer struct {
		Status  proto.Status
		Payload string
	}
	first := request(1, proto.MethodDebit, "account=a amount=10")
	first.Key = "key-1"
	tests := []struct {
		name      string
		second    func(f proto.Frame) proto.Frame
		want      answer
		execDebit int64
		dedupHits int64
		conflicts int64
	}{
		{"same_request_replayed", func(f proto.Frame) proto.Frame { return f },
			answer{proto.StatusOK, "account=a balance=990 budget=5000 exec=1 replayed=true"}, 1, 1, 0},
		{"different_payload", func(f proto.Frame) proto.Frame { f.Payload = []byte("account=a amount=11"); return f },
			answer{proto.StatusInvalidArgument, proto.ErrKeyReused}, 1, 0, 1},
		{"different_method", func(f proto.Frame) proto.Frame { f.Method = proto.MethodGet; return f },
			answer{proto.StatusInvalidArgument, proto.ErrKeyReused}, 1, 0, 1},
		{"other_key_executes", func(f proto.Frame) proto.Frame { f.Key = "key-2"; return f },
			answer{proto.StatusOK, "account=a balance=980 budget=5000 exec=2 replayed=false"}, 2, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, addr := startServer(t, proto.DefaultServerConfig())
			rc := dialRaw(t, addr)
			rc.send(first)
			if f := rc.recv(); f.Status != proto.StatusOK {
				t.Fatalf("first request: status %v %q, want OK", f.Status, f.Payload)
			}
			second := tt.second(first)
			second.ID = 2
			rc2 := dialRaw(t, addr) // the key is server-wide, not per connection
			rc2.send(second)
			f := rc2.recv()
			if diff := cmp.Diff(tt.want, answer{f.Status, string(f.Payload)}); diff != "" {
				t.Errorf("second answer (-want +got):\n%s", diff)
			}
			for name, want := range map[string]int64{"exec.debit": tt.execDebit, "dedup_hits": tt.dedupHits, "key_conflicts": tt.conflicts} {
				if got := counter(t, srv, name); got != want {
					t.Errorf("server %s = %d, want %d", name, got, want)
				}
			}
		})
	}
}

// TestIdempotencyKeyReplaysFailure: a keyed request's failure is stored
// like a success, so a retry neither executes nor changes the answer.
func TestIdempotencyKeyReplaysFailure(t *testing.T) {
	srv, addr := startServer(t, proto.DefaultServerConfig())
	rc := dialRaw(t, addr)
	f := request(1, proto.MethodDebit, fmt.Sprintf("account=a amount=%d", proto.DefaultBalance+1))
	f.Key = "k"
	for id := uint64(1); id <= 2; id++ {
		f.ID = id
		rc.send(f)
		if got := rc.recv(); got.Status != proto.StatusAppError || string(got.Payload) != "insufficient funds" {
			t.Errorf("request %d: got %v %q, want APP_ERROR \"insufficient funds\"", id, got.Status, got.Payload)
		}
	}
	if got := counter(t, srv, "dedup_hits"); got != 1 {
		t.Errorf("server dedup_hits = %d, want 1", got)
	}
}

// TestDuplicateWhileExecuting: a duplicate that arrives while the original
// executes waits for it and gets its result; one whose budget runs out
// first is answered DEADLINE_EXCEEDED without executing.
func TestDuplicateWhileExecuting(t *testing.T) {
	tests := []struct {
		name      string
		dupBudget uint32
		want      proto.Status
		wantMsg   string
	}{
		{"waits_for_result", 5000, proto.StatusOK, "account=a balance=990 budget=5000 exec=1 replayed=true"},
		{"budget_runs_out", 200, proto.StatusDeadlineExceeded, "original request with this key still executing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, ev, barrier := executingBarrier(proto.DefaultServerConfig())
			srv, addr := startServer(t, cfg, barrier)
			orig := request(1, proto.MethodDebit, "account=a amount=10 sleep=600")
			orig.Key = "key-1"
			a, b := dialRaw(t, addr), dialRaw(t, addr)
			a.send(orig)
			waitFor(t, "the original to start executing", func() bool { return ev.has("FAULT sleep id=1 ") })

			dup := orig
			dup.ID, dup.BudgetMs = 2, tt.dupBudget
			b.send(dup)
			got := b.recv()
			if got.Status != tt.want || !strings.HasPrefix(string(got.Payload), tt.wantMsg) {
				t.Errorf("duplicate: got %v %q, want %v %q", got.Status, got.Payload, tt.want, tt.wantMsg)
			}
			o := a.recv()
			if want := "account=a balance=990 budget=5000 exec=1 replayed=false"; o.Status != proto.StatusOK || string(o.Payload) != want {
				t.Errorf("original: got %v %q, want OK %q", o.Status, o.Payload, want)
			}
			if got := counter(t, srv, "exec.debit"); got != 1 {
				t.Errorf("server exec.debit = %d, want 1", got)
			}
		})
	}
}

// TestBadFrameClosesOnlyItsConnection: bytes that are not a valid request
// close that connection, unanswered, and nothing after them is read; other
// connections keep being served.
func TestBadFrameClosesOnlyItsConnection(t *testing.T) {
	ping := func(id uint64) []byte { return encode(t, request(id, proto.MethodPing, "")) }
	tests := []struct {
		name string
		bad  []byte
	}{
		{"bad_magic", func() []byte { b := ping(1); b[4], b[5] = 0xde, 0xad; return b }()},
		{"length_2^31-1", []byte{0x7f, 0xff, 0xff, 0xff}},
		{"length_65537", []byte{0, 1, 0, 1}},
		{"length_23", []byte{0, 0, 0, 23}},
		{"response_from_client", encode(t, proto.Frame{Type: proto.TypeResponse, ID: 1, Method: proto.MethodPing})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, addr := startServer(t, proto.DefaultServerConfig())
			good, bad := dialRaw(t, addr), dialRaw(t, addr)
			good.sendBytes(ping(1))
			if f := good.recv(); f.Status != proto.StatusOK {
				t.Fatalf("ping before: status %v, want OK", f.Status)
			}
			// A valid request right behind the bad bytes must not be read.
			bad.sendBytes(append(tt.bad, ping(2)...))
			if extra, _ := bad.waitClosed(); len(extra) != 0 {
				t.Errorf("server answered the bad connection with % x, want nothing", extra)
			}

			good.sendBytes(ping(3))
			if f := good.recv(); f.ID != 3 || f.Status != proto.StatusOK {
				t.Errorf("ping after: id %d status %v, want 3 OK", f.ID, f.Status)
			}
			for name, want := range map[string]int64{"protocol_errors": 1, "requests.ctl": 2, "conns_accepted": 2} {
				if got := counter(t, srv, name); got != want {
					t.Errorf("server %s = %d, want %d", name, got, want)
				}
			}
		})
	}
}

// TestChunkMode: responses written in 1-13 byte pieces still decode to
// the right answers.
func TestChunkMode(t *testing.T) {
	cfg := proto.DefaultServerConfig()
	cfg.Chunk = true
	srv, addr := startServer(t, cfg)
	rc := dialRaw(t, addr)
	const n = 20
	var batch []byte
	ids := make([]uint64, n)
	for i := range n {
		ids[i] = uint64(i + 1)
		batch = append(batch, encode(t, request(ids[i], proto.MethodDebit, fmt.Sprintf("account=acct-%d amount=%d", i, i+1)))...)
	}
	rc.sendBytes(batch)
	got := rc.recvByID(ids...)
	waitCounter(t, srv, "frames_sent", n) // counted once each write returns
	for i, id := range ids {
		want := fmt.Sprintf("account=acct-%d balance=%d budget=5000 exec=1 replayed=false", i, proto.DefaultBalance-(i+1))
		if f := got[id]; f.Status != proto.StatusOK || string(f.Payload) != want {
			t.Errorf("request %d: got %v %q, want OK %q", id, f.Status, f.Payload, want)
		}
	}
	frames, chunks := counter(t, srv, "frames_sent"), counter(t, srv, "write_chunks")
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
	srv, addr := startServer(t, proto.DefaultServerConfig())
	rc := dialRaw(t, addr)
	for id := uint64(1); id <= 5; id++ {
		rc.send(request(id, proto.MethodPing, ""))
		rc.recv()
	}
	waitCounter(t, srv, "frames_sent", 5)
	if frames, chunks := counter(t, srv, "frames_sent"), counter(t, srv, "write_chunks"); frames != 5 || chunks > frames {
		t.Errorf("server frames_sent = %d, write_chunks = %d; want 5 and at most 5", frames, chunks)
	}
}

// TestQueueFull: with one worker and room for one waiting request, a burst
// of slow requests is partly answered UNAVAILABLE, unexecuted.
func TestQueueFull(t *testing.T) {
	t.Parallel()
	cfg := proto.DefaultServerConfig()
	cfg.Workers, cfg.QueueSize = 1, 1
	srv, addr := startServer(t, cfg)
	rc := dialRaw(t, addr)
	const n = 5
	var batch []byte
	ids := make([]uint64, n)
	for i := range n {
		ids[i] = uint64(i + 1)
		batch = append(batch, encode(t, request(ids[i], proto.MethodDebit, "account=a amount=1 sleep=100"))...)
	}
	rc.sendBytes(batch)
	got := rc.recvByID(ids...)
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
		if got := counter(t, srv, name); got != want {
			t.Errorf("server %s = %d, want %d", name, got, want)
		}
	}
}

func TestControlMethods(t *testing.T) {
	t.Parallel()
	cfg := proto.DefaultServerConfig()
	cfg.Workers = 1
	srv, addr := startServer(t, cfg)
	rc := dialRaw(t, addr)
	call := func(id uint64, method, payload string) proto.Frame {
		t.Helper()
		rc.send(request(id, method, payload))
		return rc.recv()
	}

	if f := call(1, proto.MethodPing, ""); f.Status != proto.StatusOK || len(f.Payload) != 0 {
		t.Errorf("ctl.ping: got %v %q, want OK and no payload", f.Status, f.Payload)
	}

	// Control methods bypass the worker queue.
	rc.send(request(2, proto.MethodGet, "account=a sleep=500"))
	if f := call(3, proto.MethodPing, ""); f.ID != 3 {
		t.Errorf("first answer while the only worker is busy: id %d, want 3 (the ping)", f.ID)
	}
	if f := rc.recv(); f.ID != 2 || f.Status != proto.StatusOK {
		t.Errorf("slow get: id %d status %v, want 2 OK", f.ID, f.Status)
	}

	f := call(4, proto.MethodStats, "")
	stats := fields(t, f.Payload)
	var names []string
	for k := range stats {
		names = append(names, k)
	}
	slices.Sort(names)
	wantNames := []string{"conns_accepted", "conns_open", "conns_rejected", "dedup_hits", "exec.debit", "exec.get", "expired",
		"faults_fired", "frames_sent", "goroutines", "key_conflicts", "out_limit_waits", "protocol_errors", "queue_full",
		"requests.ctl", "requests.debit", "requests.get", "requests.other", "unavailable", "write_chunks", "write_timeouts"}
	if diff := cmp.Diff(wantNames, names); diff != "" {
		t.Errorf("ctl.stats counter names (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"requests.ctl": "3", "requests.get": "1", "exec.get": "1", "conns_accepted": "1"},
		map[string]string{"requests.ctl": stats["requests.ctl"], "requests.get": stats["requests.get"], "exec.get": stats["exec.get"], "conns_accepted": stats["conns_accepted"]}); diff != "" {
		t.Errorf("ctl.stats values (-want +got):\n%s", diff)
	}

	if f := call(5, proto.MethodFault, "kind=bogus"); f.Status != proto.StatusInvalidArgument || !strings.Contains(string(f.Payload), `unknown kind "bogus"`) {
		t.Errorf("ctl.fault kind=bogus: got %v %q, want INVALID_ARGUMENT about the unknown kind", f.Status, f.Payload)
	}
	if f := call(6, proto.MethodFault, "count=1   method=debit kind=unavailable"); f.Status != proto.StatusOK || string(f.Payload) != "kind=unavailable method=debit count=1" {
		t.Errorf("ctl.fault: got %v %q, want OK %q", f.Status, f.Payload, "kind=unavailable method=debit count=1")
	}
	if f := call(7, proto.MethodGet, "account=a"); f.Status != proto.StatusOK {
		t.Errorf("get with a debit-only fault set: status %v, want OK", f.Status)
	}
	if f := call(8, proto.MethodDebit, "account=a amount=1"); f.Status != proto.StatusUnavailable || string(f.Payload) != "injected unavailable" {
		t.Errorf("debit with the fault set: got %v %q, want UNAVAILABLE \"injected unavailable\"", f.Status, f.Payload)
	}
	if f := call(9, proto.MethodDebit, "account=a amount=1"); f.Status != proto.StatusOK {
		t.Errorf("debit after the count=1 fault is spent: status %v, want OK", f.Status)
	}
	call(10, proto.MethodFault, "kind=unavailable")
	if f := call(11, proto.MethodClear, ""); f.Status != proto.StatusOK {
		t.Errorf("ctl.clear: status %v, want OK", f.Status)
	}
	if f := call(12, proto.MethodGet, "account=a"); f.Status != proto.StatusOK {
		t.Errorf("get after ctl.clear: status %v, want OK", f.Status)
	}
	if got := counter(t, srv, "faults_fired"); got != 1 {
		t.Errorf("server faults_fired = %d, want 1", got)
	}
}

func TestParseFault(t *testing.T) {
	tests := []struct {
		in      string
		want    proto.Fault
		wantErr string // substring of the error; empty for success
	}{
		{"kind=late method=get count=1 delay=150ms", proto.Fault{Kind: proto.FaultLate, Method: "get", Count: 1, Delay: 150 * time.Millisecond}, ""},
		{"kind=sleep delay=2s", proto.Fault{Kind: proto.FaultSleep, Delay: 2 * time.Second}, ""},
		{"  kind=unavailable  ", proto.Fault{Kind: proto.FaultUnavailable}, ""},
		{"kind=noreply count=0", proto.Fault{Kind: proto.FaultNoReply}, ""},
		{"kind=close", proto.Fault{Kind: proto.FaultClose}, ""},
		{"kind=partial", proto.Fault{Kind: proto.FaultPartial}, ""},
		{"kind=badmagic method=debit", proto.Fault{Kind: proto.FaultBadMagic, Method: "debit"}, ""},
		{"", proto.Fault{}, "kind is required"},
		{"method=get", proto.Fault{}, "kind is required"},
		{"kind=explode", proto.Fault{}, `unknown kind "explode"`},
		{"kind=", proto.Fault{}, `unknown kind ""`},
		{"kind=late delay", proto.Fault{}, `"delay" is not key=value`},
		{"kind=late count=-1", proto.Fault{}, `count "-1" is not a whole number >= 0`},
		{"kind=late count=x", proto.Fault{}, `count "x" is not a whole number >= 0`},
		{"kind=late delay=5", proto.Fault{}, `delay "5" is not a duration >= 0`},
		{"kind=late delay=-1s", proto.Fault{}, `delay "-1s" is not a duration >= 0`},
		{"kind=late colour=red", proto.Fault{}, `unknown key "colour"`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := proto.ParseFault(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "proto: fault ") {
					t.Errorf("ParseFault(%q) error = %v, want \"proto: fault ...%s...\"", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseFault(%q): %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseFault(%q) (-want +got):\n%s", tt.in, diff)
			}
			again, err := proto.ParseFault(got.String())
			if err != nil || again != got {
				t.Errorf("ParseFault(%q) = %+v, %v; want %+v (String round trip)", got.String(), again, err, got)
			}
		})
	}
}

func TestServerConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*proto.ServerConfig)
	}{
		{"workers_0", func(c *proto.ServerConfig) { c.Workers = 0 }},
		{"queue_0", func(c *proto.ServerConfig) { c.QueueSize = 0 }},
		{"chunk_without_window", func(c *proto.ServerConfig) { c.Chunk, c.ChunkWindow = true, 0 }},
	}
	def := proto.DefaultServerConfig()
	if err := def.Validate(); err != nil {
		t.Fatalf("DefaultServerConfig().Validate() = %v, want nil", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := proto.DefaultServerConfig()
			tt.mutate(&cfg)
			if s, err := proto.NewServer(cfg); !errors.Is(err, proto.ErrConfig) || s != nil {
				t.Errorf("NewServer() = %v, %v; want nil, an error wrapping %v", s, err, proto.ErrConfig)
			}
		})
	}
}

// TestServerClose: Close returns promptly with requests sleeping, a late
// response pending and connections open; it cuts the sleeps short without
// executing those requests, and leaves no goroutine behind.
func TestServerClose(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	srv, err := proto.NewServer(proto.DefaultServerConfig())
	if err != nil {
		t.Fatal(err)
	}
	srv.AddFault(proto.Fault{Kind: proto.FaultLate, Method: proto.MethodDebit, Count: 1, Delay: time.Minute})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()

	c, err := proto.NewClient(ln.Addr().String(), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	calls := []proto.Call{
		debit("a", 1),                // executed; its answer is due in a minute
		get("b", "sleep=60000"),      // sleeping
		debit("c", 1, "sleep=60000"), // sleeping
	}
	results := make(chan proto.Result, len(calls))
	for i, call := range calls {
		go func() { results <- c.Do(context.Background(), call) }()
		if i == 0 {
			waitCounter(t, srv, "exec.debit", 1)
		}
	}
	waitCounter(t, srv, "requests.get", 1)
	waitCounter(t, srv, "requests.debit", 2)
	idle, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	waitCounter(t, srv, "conns_accepted", 2)

	closed := make(chan struct{})
	go func() { srv.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(waitLimit):
		t.Fatalf("Close still running after %v", waitLimit)
	}
	if err := <-errc; !errors.Is(err, proto.ErrServerClosed) {
		t.Errorf("Serve returned %v, want %v", err, proto.ErrServerClosed)
	}
	for range calls {
		if r := <-results; r.Status == proto.StatusOK {
			t.Errorf("call in flight at Close: got OK (%v), want a failure", r.Log)
		}
	}
	for name, want := range map[string]int64{"exec.debit": 1, "exec.get": 0} {
		if got := counter(t, srv, name); got != want {
			t.Errorf("server %s = %d after Close, want %d", name, got, want)
		}
	}
	if err := srv.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := srv.Serve(ln); !errors.Is(err, proto.ErrServerClosed) {
		t.Errorf("Serve after Close: %v, want %v", err, proto.ErrServerClosed)
	}
	c.Close()
	idle.Close()
	goleak.VerifyNone(t, ignore)
}

// TestCloseBeforeServe: Serve after Close returns at once and closes the
// listener.
func TestCloseBeforeServe(t *testing.T) {
	srv, err := proto.NewServer(proto.DefaultServerConfig())
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Serve(ln); !errors.Is(err, proto.ErrServerClosed) {
		t.Errorf("Serve after Close: %v, want %v", err, proto.ErrServerClosed)
	}
	if _, err := ln.Accept(); err == nil {
		t.Errorf("Serve after Close left the listener open")
	}
}

func TestFields(t *testing.T) {
	fs, err := proto.ParseFields([]byte("  b=2 a=1\tc= a=3 "))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(proto.Fields{"a": "3", "b": "2", "c": ""}, fs); diff != "" {
		t.Errorf("ParseFields (-want +got):\n%s", diff)
	}
	if got, want := fs.String(), "a=3 b=2 c="; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	for _, bad := range []string{"a", "=1", "a=1 b"} {
		if _, err := proto.ParseFields([]byte(bad)); err == nil {
			t.Errorf("ParseFields(%q) accepted it, want an error", bad)
		}
	}
	n, err := fs.Int("missing", 7)
	if n != 7 || err != nil {
		t.Errorf("Int(missing, 7) = %d, %v; want 7, nil", n, err)
	}
	if n, err := (proto.Fields{"n": "-12"}).Int("n", 0); n != -12 || err != nil {
		t.Errorf("Int(n=-12) = %d, %v; want -12, nil", n, err)
	}
	if _, err := (proto.Fields{"n": fmt.Sprint(uint64(math.MaxInt64) + 1)}).Int("n", 0); err == nil {
		t.Errorf("Int of a value past int64 accepted it, want an error")
	}
}
