package bank_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/server"
	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/servertest"
)

// The tests here run the bank behind a real in-process server and speak
// the wire protocol to it, so they check what a client sees.

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
		{"get", bank.MethodGet, "account=a",
			answer{proto.StatusOK, "account=a balance=1000 budget=5000 exec=0 replayed=false"}},
		{"get_extra_fields_ignored", bank.MethodGet, "account=a colour=blue sleep=1",
			answer{proto.StatusOK, "account=a balance=1000 budget=5000 exec=0 replayed=false"}},
		{"get_no_account", bank.MethodGet, "sleep=1", answer{proto.StatusInvalidArgument, "account is required"}},
		{"get_empty_account", bank.MethodGet, "account=", answer{proto.StatusInvalidArgument, "account is required"}},
		{"get_not_key_value", bank.MethodGet, "account", answer{proto.StatusInvalidArgument, `bank: "account" is not key=value`}},
		{"get_tab_separated", bank.MethodGet, "account=a\tsleep=x", answer{proto.StatusInvalidArgument, `bank: field sleep="x" is not an integer`}},
		{"get_bad_sleep", bank.MethodGet, "account=a sleep=x", answer{proto.StatusInvalidArgument, `bank: field sleep="x" is not an integer`}},
		{"debit", bank.MethodDebit, "account=a amount=1000",
			answer{proto.StatusOK, "account=a balance=0 budget=5000 exec=1 replayed=false"}},
		{"debit_no_amount", bank.MethodDebit, "account=a", answer{proto.StatusInvalidArgument, "amount must be a positive integer"}},
		{"debit_amount_0", bank.MethodDebit, "account=a amount=0", answer{proto.StatusInvalidArgument, "amount must be a positive integer"}},
		{"debit_amount_negative", bank.MethodDebit, "account=a amount=-5", answer{proto.StatusInvalidArgument, "amount must be a positive integer"}},
		{"debit_amount_text", bank.MethodDebit, "account=a amount=ten", answer{proto.StatusInvalidArgument, "amount must be a positive integer"}},
		{"debit_insufficient", bank.MethodDebit, "account=a amount=1001", answer{proto.StatusAppError, "insufficient funds"}},
		{"unknown_method", "put", "account=a", answer{proto.StatusInvalidArgument, `unknown method "put"`}},
		{"echo", bank.MethodEcho, "anything at all\x00\xff", answer{proto.StatusOK, "anything at all\x00\xff"}},
		{"echo_empty", bank.MethodEcho, "", answer{proto.StatusOK, ""}},
		{"echo_large", bank.MethodEcho, strings.Repeat("x", 16<<10), answer{proto.StatusOK, strings.Repeat("x", 16<<10)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, addr := servertest.Start(t, server.DefaultConfig())
			rc := servertest.Dial(t, addr)
			rc.Send(servertest.Request(7, tt.method, tt.payload))
			f := rc.Recv()
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
			if tt.method != bank.MethodGet && tt.method != bank.MethodDebit && tt.method != bank.MethodEcho {
				name, executed = "requests.other", 1
			}
			if got := servertest.Counter(t, srv, name); got != executed {
				t.Errorf("server %s = %d, want %d", name, got, executed)
			}
		})
	}
}

// An echo with a key is refused unexecuted: it has nothing to record.
func TestEchoRefusesKey(t *testing.T) {
	srv, addr := servertest.Start(t, server.DefaultConfig())
	rc := servertest.Dial(t, addr)
	f := servertest.Request(3, bank.MethodEcho, "x")
	f.Key = "k"
	rc.Send(f)
	got := rc.Recv()
	if got.Status != proto.StatusInvalidArgument || string(got.Payload) != bank.ErrEchoKey {
		t.Errorf("keyed echo: got %v %q, want INVALID_ARGUMENT %q", got.Status, got.Payload, bank.ErrEchoKey)
	}
	if n := servertest.Counter(t, srv, "exec.echo"); n != 0 {
		t.Errorf("exec.echo = %d, want 0", n)
	}
}

func TestIdempotencyKey(t *testing.T) {
	type answer struct {
		Status  proto.Status
		Payload string
	}
	first := servertest.Request(1, bank.MethodDebit, "account=a amount=10")
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
			answer{proto.StatusInvalidArgument, bank.ErrKeyReused}, 1, 0, 1},
		{"different_method", func(f proto.Frame) proto.Frame { f.Method = bank.MethodGet; return f },
			answer{proto.StatusInvalidArgument, bank.ErrKeyReused}, 1, 0, 1},
		{"other_key_executes", func(f proto.Frame) proto.Frame { f.Key = "key-2"; return f },
			answer{proto.StatusOK, "account=a balance=980 budget=5000 exec=2 replayed=false"}, 2, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log servertest.Log
			cfg := server.DefaultConfig()
			cfg.Log = log.Logger()
			srv, addr := servertest.Start(t, cfg)
			rc := servertest.Dial(t, addr)
			rc.Send(first)
			if f := rc.Recv(); f.Status != proto.StatusOK {
				t.Fatalf("first request: status %v %q, want OK", f.Status, f.Payload)
			}
			second := tt.second(first)
			second.ID = 2
			rc2 := servertest.Dial(t, addr) // the key is server-wide, not per connection
			rc2.Send(second)
			f := rc2.Recv()
			if diff := cmp.Diff(tt.want, answer{f.Status, string(f.Payload)}); diff != "" {
				t.Errorf("second answer (-want +got):\n%s", diff)
			}
			for name, want := range map[string]int64{"exec.debit": tt.execDebit, "dedup_hits": tt.dedupHits, "key_conflicts": tt.conflicts} {
				if got := servertest.Counter(t, srv, name); got != want {
					t.Errorf("server %s = %d, want %d", name, got, want)
				}
			}
			// The bank logs each replay and each conflict, naming the
			// request that met it; the answer above was written after.
			logged := map[string][]int64{}
			for _, e := range log.Events(t) {
				if e.Name == serverapi.EventDedupHit || e.Name == serverapi.EventKeyConflict {
					id, _ := e.Int(serverapi.KeyID)
					logged[e.Name] = append(logged[e.Name], id)
				}
			}
			want := map[string][]int64{}
			if tt.dedupHits > 0 {
				want[serverapi.EventDedupHit] = []int64{2}
			}
			if tt.conflicts > 0 {
				want[serverapi.EventKeyConflict] = []int64{2}
			}
			if diff := cmp.Diff(want, logged); diff != "" {
				t.Errorf("bank events by request id (-want +got):\n%s", diff)
			}
		})
	}
}

// TestIdempotencyKeyReplaysFailure: a keyed request's failure is stored
// like a success, so a retry neither executes nor changes the answer.
func TestIdempotencyKeyReplaysFailure(t *testing.T) {
	srv, addr := servertest.Start(t, server.DefaultConfig())
	rc := servertest.Dial(t, addr)
	f := servertest.Request(1, bank.MethodDebit, fmt.Sprintf("account=a amount=%d", bank.DefaultBalance+1))
	f.Key = "k"
	for id := uint64(1); id <= 2; id++ {
		f.ID = id
		rc.Send(f)
		if got := rc.Recv(); got.Status != proto.StatusAppError || string(got.Payload) != "insufficient funds" {
			t.Errorf("request %d: got %v %q, want APP_ERROR \"insufficient funds\"", id, got.Status, got.Payload)
		}
	}
	if got := servertest.Counter(t, srv, "dedup_hits"); got != 1 {
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
			// A zero-length sleep fault on the first debit logs a FAULT
			// event on the worker right before the debit executes, with
			// nothing in between that can block: the barrier.
			var log servertest.Log
			cfg := server.DefaultConfig()
			cfg.Log = log.Logger()
			srv, addr := servertest.Start(t, cfg, "kind=sleep method=debit count=1")
			orig := servertest.Request(1, bank.MethodDebit, "account=a amount=10 sleep=600")
			orig.Key = "key-1"
			a, b := servertest.Dial(t, addr), servertest.Dial(t, addr)
			a.Send(orig)
			log.WaitEvent(t, serverapi.EventFault, func(e serverapi.Event) bool {
				id, _ := e.Int(serverapi.KeyID)
				return id == 1 && e.Text(serverapi.KeyKind) == server.FaultSleep.String()
			})

			dup := orig
			dup.ID, dup.BudgetMs = 2, tt.dupBudget
			b.Send(dup)
			got := b.Recv()
			if got.Status != tt.want || !strings.HasPrefix(string(got.Payload), tt.wantMsg) {
				t.Errorf("duplicate: got %v %q, want %v %q", got.Status, got.Payload, tt.want, tt.wantMsg)
			}
			o := a.Recv()
			if want := "account=a balance=990 budget=5000 exec=1 replayed=false"; o.Status != proto.StatusOK || string(o.Payload) != want {
				t.Errorf("original: got %v %q, want OK %q", o.Status, o.Payload, want)
			}
			if got := servertest.Counter(t, srv, "exec.debit"); got != 1 {
				t.Errorf("server exec.debit = %d, want 1", got)
			}
		})
	}
}
