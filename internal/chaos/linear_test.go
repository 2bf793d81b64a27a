package chaos

import (
	"bytes"
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	gocmp "github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/report"
)

// History builders: times are in ns since the run's start, the account is
// "a" unless changed, and IDs are unique within a test's history.

func okGet(id, client int, invoke, complete, balance, exec int64) Op {
	return Op{ID: id, Client: client, Kind: OpGet, Account: "a", Invoke: invoke, Complete: complete,
		Outcome: OutcomeOK, Status: "OK", RespAccount: "a", Balance: balance, Exec: exec, Attempts: 1}
}

func okDebit(id, client int, amount, invoke, complete, balance, exec int64) Op {
	return Op{ID: id, Client: client, Kind: OpKeylessDebit, Account: "a", Amount: amount, Invoke: invoke, Complete: complete,
		Outcome: OutcomeOK, Status: "OK", RespAccount: "a", Balance: balance, Exec: exec, Attempts: 1}
}

func unknownDebit(id, client int, amount, invoke, complete int64) Op {
	return Op{ID: id, Client: client, Kind: OpKeylessDebit, Account: "a", Amount: amount, Invoke: invoke, Complete: complete,
		Outcome: OutcomeUnknown, Status: "UNKNOWN", Attempts: 1}
}

func failedDebit(id, client int, amount, invoke, complete int64) Op {
	return Op{ID: id, Client: client, Kind: OpKeylessDebit, Account: "a", Amount: amount, Invoke: invoke, Complete: complete,
		Outcome: OutcomeFailed, Status: "UNAVAILABLE", Attempts: 1}
}

func keyed(op Op, key string, replayed bool) Op {
	op.Kind, op.Key, op.Replayed = OpKeyedDebit, key, replayed
	return op
}

func onAccount(op Op, account string) Op {
	op.Account = account
	if op.Outcome == OutcomeOK {
		op.RespAccount = account
	}
	return op
}

func ids(ops []Op) []int {
	var out []int
	for _, op := range ops {
		out = append(out, op.ID)
	}
	return out
}

func TestCheckLinearizable(t *testing.T) {
	tests := []struct {
		name string
		ops  []Op
		want LinearResult // Window is compared by IDs, in wantWindow
		// wantWindow is the IDs of the window's ops, by invocation.
		wantWindow []int
	}{{
		name: "sequential",
		ops: []Op{
			okGet(1, 0, 0, 10, 1000, 0),
			okDebit(2, 0, 100, 20, 30, 900, 1),
			failedDebit(3, 0, 500, 40, 50),
			okGet(4, 0, 60, 70, 900, 1),
			keyed(okDebit(5, 0, 50, 80, 90, 850, 2), "k5", false),
			okGet(6, 0, 100, 110, 850, 2),
		},
		want: LinearResult{Verdict: report.Pass, Accounts: 1, Ops: 5},
	}, {
		name: "double_debit_seen_by_get",
		ops: []Op{
			okGet(1, 0, 0, 5, 1000, 0),
			okDebit(2, 0, 100, 10, 20, 900, 1),
			okGet(3, 1, 30, 40, 800, 2),
		},
		want:       LinearResult{Verdict: report.Fail, Accounts: 1, Ops: 3, Failed: []string{"a"}, WindowFrom: 10, WindowTo: 40},
		wantWindow: []int{2, 3},
	}, {
		name: "double_debit_seen_by_debit",
		ops: []Op{
			keyed(okDebit(1, 0, 100, 10, 20, 900, 1), "k1", false),
			okDebit(2, 1, 100, 30, 40, 700, 3),
			okGet(3, 0, 50, 60, 700, 3),
		},
		want:       LinearResult{Verdict: report.Fail, Accounts: 1, Ops: 3, Failed: []string{"a"}, WindowFrom: 10, WindowTo: 40},
		wantWindow: []int{1, 2},
	}, {
		name: "stale_read",
		ops: []Op{
			okDebit(1, 0, 100, 10, 20, 900, 1),
			okGet(2, 1, 30, 40, 1000, 0),
		},
		want:       LinearResult{Verdict: report.Fail, Accounts: 1, Ops: 2, Failed: []string{"a"}, WindowFrom: 10, WindowTo: 40},
		wantWindow: []int{1, 2},
	}, {
		name: "overdraft",
		ops: []Op{
			okDebit(1, 0, 600, 10, 20, 400, 1),
			okDebit(2, 0, 600, 30, 40, -200, 2),
		},
		want:       LinearResult{Verdict: report.Fail, Accounts: 1, Ops: 2, Failed: []string{"a"}, WindowFrom: 30, WindowTo: 40},
		wantWindow: []int{2},
	}, {
		// Invoked in the order 1, 2, 3; executed 3, 1, 2; a get concurrent
		// with all of them sees the state between 3 and 1.
		name: "concurrent_debits",
		ops: []Op{
			okDebit(1, 0, 100, 0, 50, 870, 2),
			okDebit(2, 1, 10, 5, 60, 860, 3),
			okDebit(3, 2, 30, 8, 40, 970, 1),
			okGet(4, 3, 1, 45, 970, 1),
			okGet(5, 3, 70, 80, 860, 3),
		},
		want: LinearResult{Verdict: report.Pass, Accounts: 1, Ops: 5},
	}, {
		name: "concurrent_debits_no_order",
		ops: []Op{
			okDebit(1, 0, 100, 0, 50, 900, 1),
			okDebit(2, 1, 10, 5, 60, 990, 1),
		},
		want:       LinearResult{Verdict: report.Fail, Accounts: 1, Ops: 2, Failed: []string{"a"}, WindowTo: 60},
		wantWindow: []int{1, 2},
	}, {
		name: "unknown_took_effect",
		ops: []Op{
			unknownDebit(1, 0, 100, 10, 20),
			okGet(2, 1, 30, 40, 900, 1),
		},
		want: LinearResult{Verdict: report.Pass, Accounts: 1, Ops: 2},
	}, {
		name: "unknown_no_effect",
		ops: []Op{
			unknownDebit(1, 0, 100, 10, 20),
			okGet(2, 1, 30, 40, 1000, 0),
			okDebit(3, 1, 50, 50, 60, 950, 1),
			okGet(4, 0, 70, 80, 950, 1),
		},
		want: LinearResult{Verdict: report.Pass, Accounts: 1, Ops: 4},
	}, {
		// The unknown debit's call returned long before the get that
		// first sees it: it may take effect at any point after its
		// invocation, a late retransmission say.
		name: "unknown_took_effect_late",
		ops: []Op{
			unknownDebit(1, 0, 100, 10, 20),
			okGet(2, 1, 30, 40, 1000, 0),
			okDebit(3, 0, 50, 50, 60, 950, 1),
			okGet(4, 1, 70, 80, 850, 2),
		},
		want: LinearResult{Verdict: report.Pass, Accounts: 1, Ops: 4},
	}, {
		name: "unknown_applied_twice",
		ops: []Op{
			unknownDebit(1, 0, 100, 10, 20),
			okGet(2, 1, 30, 40, 900, 1),
			okGet(3, 1, 50, 60, 800, 2),
		},
		// From 30 on, the unknown debit could explain either get: only
		// the initial state shows it took effect by op 2.
		want:       LinearResult{Verdict: report.Fail, Accounts: 1, Ops: 3, Failed: []string{"a"}, WindowTo: 60},
		wantWindow: []int{1, 2, 3},
	}, {
		name: "unknown_effect_before_invocation",
		ops: []Op{
			okGet(1, 1, 0, 5, 900, 1),
			unknownDebit(2, 0, 100, 10, 20),
		},
		want:       LinearResult{Verdict: report.Fail, Accounts: 1, Ops: 2, Failed: []string{"a"}, WindowTo: 5},
		wantWindow: []int{1},
	}, {
		name: "unknowns_of_mixed_amounts",
		ops: []Op{
			unknownDebit(1, 0, 100, 10, 20),
			unknownDebit(2, 1, 50, 11, 21),
			unknownDebit(3, 2, 50, 12, 22),
			okGet(4, 0, 30, 40, 950, 1),
			okGet(5, 0, 50, 60, 850, 2),
			okGet(6, 0, 70, 80, 800, 3),
		},
		want: LinearResult{Verdict: report.Pass, Accounts: 1, Ops: 6},
	}, {
		name: "unknowns_cannot_make_the_sum",
		ops: []Op{
			unknownDebit(1, 0, 100, 10, 20),
			unknownDebit(2, 1, 50, 11, 21),
			okGet(3, 0, 30, 40, 970, 1),
		},
		want:       LinearResult{Verdict: report.Fail, Accounts: 1, Ops: 3, Failed: []string{"a"}, WindowTo: 40},
		wantWindow: []int{1, 2, 3},
	}, {
		// The first attempt executed; the call's retry got the replay.
		name: "replayed_keyed_debit",
		ops: []Op{
			okGet(1, 1, 0, 5, 1000, 0),
			keyed(okDebit(2, 0, 100, 10, 90, 900, 1), "k2", true),
			okGet(3, 1, 20, 30, 900, 1),
			okDebit(4, 1, 10, 40, 50, 890, 2),
			okGet(5, 1, 100, 110, 890, 2),
		},
		want: LinearResult{Verdict: report.Pass, Accounts: 1, Ops: 5},
	}, {
		// A key belongs to one call; a replay to another call is checked
		// as a second execution.
		name: "replay_to_another_call",
		ops: []Op{
			keyed(okDebit(1, 0, 100, 10, 20, 900, 1), "k1", false),
			keyed(okDebit(2, 0, 100, 30, 40, 900, 1), "k1", true),
			okGet(3, 1, 50, 60, 900, 1),
		},
		want:       LinearResult{Verdict: report.Fail, Accounts: 1, Ops: 3, Failed: []string{"a"}, WindowFrom: 10, WindowTo: 40},
		wantWindow: []int{1, 2},
	}, {
		name: "unknown_gets_and_failed_ops_left_out",
		ops: []Op{
			failedDebit(1, 0, 100, 0, 10),
			{ID: 2, Client: 1, Kind: OpGet, Account: "a", Invoke: 0, Complete: 10, Outcome: OutcomeUnknown},
			okGet(3, 0, 20, 30, 1000, 0),
		},
		want: LinearResult{Verdict: report.Pass, Accounts: 1, Ops: 1},
	}, {
		name: "accounts_apart",
		ops: []Op{
			onAccount(okDebit(1, 0, 100, 10, 20, 900, 1), "b"),
			onAccount(okGet(2, 1, 30, 40, 900, 1), "c"),
			onAccount(okGet(3, 1, 30, 40, 1000, 0), "d"),
			onAccount(failedDebit(4, 0, 100, 10, 20), "e"),
		},
		want:       LinearResult{Verdict: report.Fail, Accounts: 3, Ops: 3, Failed: []string{"c"}, WindowTo: 40},
		wantWindow: []int{2},
	}, {
		// Two debits of at least 1 each cannot leave 999 of 1000: no
		// account ever holds this state, so the get fails on its own.
		name: "impossible_state",
		ops: []Op{
			okGet(1, 0, 10, 20, 1000, 0),
			okGet(2, 0, 30, 40, 999, 2),
		},
		want:       LinearResult{Verdict: report.Fail, Accounts: 1, Ops: 2, Failed: []string{"a"}, WindowFrom: 30, WindowTo: 40},
		wantWindow: []int{2},
	}, {
		// Exec 1 at balance 950 is a state some account could hold, just
		// not this one with no debit: the window starts at the start.
		name: "needs_the_initial_state",
		ops: []Op{
			okGet(1, 0, 30, 40, 950, 1),
			okGet(2, 0, 50, 60, 950, 1),
		},
		want:       LinearResult{Verdict: report.Fail, Accounts: 1, Ops: 2, Failed: []string{"a"}, WindowTo: 40},
		wantWindow: []int{1},
	}, {
		name: "empty",
		want: LinearResult{Verdict: report.Pass},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CheckLinearizable(tt.ops, 1000, 10*time.Second)
			if diff := gocmp.Diff(tt.wantWindow, ids(got.Window)); diff != "" {
				t.Errorf("window IDs (-want +got):\n%s", diff)
			}
			got.Window = nil
			if diff := gocmp.Diff(tt.want, got); diff != "" {
				t.Errorf("CheckLinearizable (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLinearWindow checks that the window of a long history closes in on
// the violation from both ends.
func TestLinearWindow(t *testing.T) {
	var ops []Op
	balance, exec := int64(1000), int64(0)
	ts := int64(0)
	id := 0
	next := func() (int, int64, int64) {
		id++
		ts += 10
		return id, ts, ts + 5
	}
	for range 20 {
		i, inv, comp := next()
		ops = append(ops, okGet(i, i%3, inv, comp, balance, exec))
		balance, exec = balance-10, exec+1
		i, inv, comp = next()
		ops = append(ops, okDebit(i, i%3, 10, inv, comp, balance, exec))
	}
	// A debit the server executes twice, seen by the next get; then
	// more of the history, which the window must not include.
	i, inv, comp := next()
	offender := i
	ops = append(ops, okDebit(i, 0, 10, inv, comp, balance-10, exec+1))
	balance, exec = balance-20, exec+2
	for range 5 {
		i, inv, comp = next()
		ops = append(ops, okGet(i, 1, inv, comp, balance, exec))
	}
	revealer := offender + 1

	got := CheckLinearizable(ops, 1000, 10*time.Second)
	if got.Verdict != report.Fail {
		t.Fatalf("verdict %s, want %s", got.Verdict, report.Fail)
	}
	if want := []int{offender, revealer}; !slices.Equal(ids(got.Window), want) {
		t.Errorf("window IDs %v, want %v", ids(got.Window), want)
	}
	if got.WindowFrom != ops[offender-1].Invoke || got.WindowTo != ops[revealer-1].Complete {
		t.Errorf("window [%d, %d], want [%d, %d]", got.WindowFrom, got.WindowTo, ops[offender-1].Invoke, ops[revealer-1].Complete)
	}
}

// TestLinearWindowInFlight checks what a window does with the operations
// in flight at its ends: debits become unknown, gets are left out.
func TestLinearWindowInFlight(t *testing.T) {
	ops := []Op{
		okGet(1, 0, 0, 5, 1000, 0),
		okDebit(2, 1, 100, 8, 100, 800, 2), // in flight at 20, where the window starts: its answer is not checked
		okGet(3, 2, 9, 100, 1000, 0),       // in flight too, and left out
		okGet(4, 0, 10, 15, 1000, 0),
		okDebit(5, 0, 100, 20, 25, 900, 1),
		okGet(6, 0, 30, 35, 800, 2), // the debit in flight explains it
		okGet(7, 0, 40, 45, 700, 3), // nothing explains this
		okGet(8, 0, 50, 55, 700, 3),
	}
	got := CheckLinearizable(ops, 1000, 10*time.Second)
	if got.Verdict != report.Fail {
		t.Fatalf("verdict %s, want %s", got.Verdict, report.Fail)
	}
	// From 30 on, op 2, unknown to the window, could explain the step
	// from op 6 to op 7; from 20 on, op 5 and op 2 are both needed to
	// get to op 6. Op 3 is in flight at 20 and ops 1, 4 complete before
	// it; op 8 comes after the violation.
	if got.WindowFrom != 20 || got.WindowTo != 45 || !slices.Equal(ids(got.Window), []int{2, 5, 6, 7}) {
		t.Errorf("window [%d, %d] %v, want [20, 45] [2 5 6 7]", got.WindowFrom, got.WindowTo, ids(got.Window))
	}
}

// TestLinearTimeout checks that a search porcupine cannot finish in time
// is reported as UNKNOWN, for that account only, and promptly.
func TestLinearTimeout(t *testing.T) {
	// 30 concurrent gets that can be ordered in any way, then one no
	// state explains: porcupine has to try 2^30 orders before it can
	// call the history illegal.
	var hard []Op
	for i := range 30 {
		hard = append(hard, onAccount(okGet(i+1, i, 0, 100, 1000, 0), "hard"))
		hard = append(hard, onAccount(unknownDebit(100+i, i, 1, 101, 102), "hard"))
	}
	hard = append(hard, onAccount(okGet(200, 0, 200, 300, 5, 5), "hard"))
	easy := onAccount(okGet(201, 1, 0, 10, 1000, 0), "easy")
	wrong := onAccount(okGet(202, 1, 20, 30, 999, 0), "easy")

	tests := []struct {
		name    string
		ops     []Op
		timeout time.Duration
		want    LinearResult
	}{
		{"alone", hard, time.Nanosecond,
			LinearResult{Verdict: report.Unknown, Accounts: 1, Ops: 61, TimedOut: []string{"hard"}}},
		{"with_a_pass", append(slices.Clip(hard), easy), 50 * time.Millisecond,
			LinearResult{Verdict: report.Unknown, Accounts: 2, Ops: 62, TimedOut: []string{"hard"}}},
		// A failure elsewhere decides the verdict. Exec 0 means the
		// initial balance, so the second get fails on its own.
		{"with_a_fail", append(slices.Clip(hard), easy, wrong), 50 * time.Millisecond,
			LinearResult{Verdict: report.Fail, Accounts: 2, Ops: 63, Failed: []string{"easy"}, TimedOut: []string{"hard"},
				Window: []Op{wrong}, WindowFrom: 20, WindowTo: 30}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			got := CheckLinearizable(tt.ops, 1000, tt.timeout)
			if elapsed := time.Since(start); elapsed > tt.timeout+2*time.Second {
				t.Errorf("took %v with a %v timeout", elapsed, tt.timeout)
			}
			if diff := gocmp.Diff(tt.want, got); diff != "" {
				t.Errorf("CheckLinearizable (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLinearBurstOfUnknowns checks that a burst of unknown debits, at one
// instant and at many, does not make porcupine try their subsets: the
// textbook encoding gives up on this history after any timeout.
func TestLinearBurstOfUnknowns(t *testing.T) {
	var ops []Op
	for i := range 24 {
		ops = append(ops, unknownDebit(i+1, i, 1, 10, 20), unknownDebit(i+101, i, 1, int64(11+i), 40))
	}
	ops = append(ops, okGet(201, 0, 50, 60, 1000, 0), okGet(202, 0, 70, 80, 990, 5))
	start := time.Now()
	got := CheckLinearizable(ops, 1000, 10*time.Second)
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("took %v", elapsed)
	}
	// From 50 on: the pool holds 48 debits of 1, and no 5 of them make 10.
	if got.Verdict != report.Fail || got.WindowFrom != 50 || got.WindowTo != 80 || len(got.Window) != 50 {
		t.Errorf("got verdict %s window [%d, %d] of %d ops, want FAIL [50, 80] of 50", got.Verdict, got.WindowFrom, got.WindowTo, len(got.Window))
	}
}

func TestVisualizeAccount(t *testing.T) {
	ops := []Op{
		okGet(1, 0, 0, 10, 1000, 0),
		keyed(okDebit(2, 1, 100, 5, 20, 900, 1), "k-two", false),
		unknownDebit(3, 2, 50, 6, 30),
		unknownDebit(6, 3, 20, 6, 30),
		okGet(4, 0, 40, 50, 850, 2),
		onAccount(okGet(5, 0, 0, 10, 1000, 0), "other"),
	}
	var b bytes.Buffer
	if err := VisualizeAccount(&b, ops, "a", 1000); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"<html", "get → balance=1000 exec=0", "debit 100 → balance=900 exec=1", "debit 50, 20 → unknown", "op 3 client 2", "op 6 client 3",
		"get → balance=850 exec=2", "key=k-two", "balance=850 exec=2"} {
		if !strings.Contains(page, want) {
			t.Errorf("visualization lacks %q", want)
		}
	}
	if strings.Contains(page, "op 5 ") {
		t.Errorf("visualization of a holds another account's op 5")
	}
	if err := VisualizeAccount(&b, ops, "nobody", 1000); err == nil {
		t.Errorf("VisualizeAccount of an account with no operations: got nil error, want one")
	}
}

func TestLinearDraws(t *testing.T) {
	a := &account{amounts: []int64{50, 100}}
	pool := func(n50, n100 int) string {
		p := string(make([]byte, 8))
		for range n50 {
			p = a.join(p, 50)
		}
		for range n100 {
			p = a.join(p, 100)
		}
		return p
	}
	tests := []struct {
		name   string
		pool   string
		n, sum int64
		want   []string
	}{
		{"nothing", pool(2, 1), 0, 0, []string{pool(2, 1)}},
		{"one_of_each", pool(2, 1), 2, 150, []string{pool(1, 0)}},
		{"either_way", pool(2, 1), 1, 100, []string{pool(2, 0)}},
		{"two_fifties", pool(2, 1), 2, 100, []string{pool(0, 1)}},
		{"too_many", pool(2, 1), 4, 250, nil},
		{"no_such_sum", pool(2, 1), 1, 70, nil},
		{"negative", pool(2, 1), -1, -50, nil},
		{"empty_pool", pool(0, 0), 1, 50, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := a.draws(tt.pool, tt.n, tt.sum); !slices.Equal(got, tt.want) {
				t.Errorf("draws(%q, %d, %d) = %q, want %q", tt.pool, tt.n, tt.sum, got, tt.want)
			}
		})
	}

	// Two ways to draw are two states: 2+3 leaves {1, 4}, 1+4 leaves
	// {2, 3}.
	b := &account{amounts: []int64{1, 2, 3, 4}}
	all, left14, left23 := string(make([]byte, 16)), string(make([]byte, 16)), string(make([]byte, 16))
	for _, x := range []int64{1, 2, 3, 4} {
		all = b.join(all, x)
	}
	left14, left23 = b.join(b.join(left14, 1), 4), b.join(b.join(left23, 2), 3)
	if got, want := b.draws(all, 2, 5), []string{left14, left23}; !slices.Equal(got, want) {
		t.Errorf("draws of 2 debits summing to 5 from {1, 2, 3, 4} = %q, want %q", got, want)
	}
}

// textbook checks a history with the usual encoding of unknown
// operations: an interval that ends after every other operation, and a
// step that either applies the debit or does nothing.
func textbook(ops []Op, initial int64) bool {
	type state struct{ balance, exec int64 }
	type input struct {
		get, unknown bool
		amount       int64
	}
	var end int64
	for _, op := range ops {
		end = max(end, op.Invoke, op.Complete)
	}
	var hist []porcupine.Operation
	for _, op := range ops {
		in := input{get: op.Kind == OpGet, amount: op.Amount}
		ret := op.Complete
		switch {
		case op.Outcome == OutcomeOK:
		case op.Outcome == OutcomeUnknown && !in.get:
			in.unknown, ret = true, end+1
		default:
			continue
		}
		hist = append(hist, porcupine.Operation{ClientId: op.Client, Input: in, Call: op.Invoke, Return: ret,
			Output: state{op.Balance, op.Exec}})
	}
	model := porcupine.NondeterministicModel{
		Init: func() []any { return []any{state{initial, 0}} },
		Step: func(st, i, o any) []any {
			s, in, out := st.(state), i.(input), o.(state)
			debited := state{s.balance - in.amount, s.exec + 1}
			switch {
			case in.get && out == s:
				return []any{s}
			case in.get:
				return nil
			case in.unknown && s.balance >= in.amount:
				return []any{s, debited}
			case in.unknown:
				return []any{s}
			case s.balance >= in.amount && out == debited:
				return []any{debited}
			}
			return nil
		},
	}
	return porcupine.CheckOperations(model.ToModel(), hist)
}

// randomHistory returns a history of a few clients on one account: run
// by a correct bank if rng so decides, else with one answer changed.
func randomHistory(rng *rand.Rand, initial int64) []Op {
	var ops []Op
	type effect struct {
		at int64
		op int
	}
	var effects []effect
	for c := range 3 {
		ts := rng.Int64N(4)
		for range 1 + rng.IntN(3) {
			op := Op{ID: len(ops) + 1, Client: c, Account: "a", Invoke: ts, Attempts: 1}
			op.Complete = ts + 1 + rng.Int64N(6)
			ts = op.Complete + rng.Int64N(3)
			if rng.IntN(3) == 0 {
				op.Kind = OpGet
			} else {
				op.Kind, op.Amount = OpKeylessDebit, 100*(1+rng.Int64N(2))
			}
			switch p := rng.IntN(10); {
			case p < 6:
				op.Outcome = OutcomeOK
			case p < 8:
				op.Outcome = OutcomeUnknown
			default:
				op.Outcome = OutcomeFailed
			}
			// Times are scaled by 4 so that an effect can fall inside an
			// interval as well as on one of its ends, where it ties.
			op.Invoke, op.Complete = 4*op.Invoke, 4*op.Complete
			switch {
			case op.Outcome == OutcomeOK:
				effects = append(effects, effect{op.Invoke + rng.Int64N(op.Complete-op.Invoke+1), len(ops)})
			case op.Outcome == OutcomeUnknown && op.Kind != OpGet && rng.IntN(2) == 0:
				effects = append(effects, effect{op.Invoke + rng.Int64N(400), len(ops)})
			}
			ops = append(ops, op)
		}
	}
	slices.SortStableFunc(effects, func(x, y effect) int { return cmp.Compare(x.at, y.at) })
	balance, exec := initial, int64(0)
	for _, e := range effects {
		op := &ops[e.op]
		if op.Kind != OpGet {
			if balance < op.Amount {
				if op.Outcome == OutcomeOK {
					op.Outcome, op.Status = OutcomeFailed, "APP_ERROR"
				}
				continue
			}
			balance, exec = balance-op.Amount, exec+1
		}
		if op.Outcome == OutcomeOK {
			op.Balance, op.Exec = balance, exec
		}
	}
	if rng.IntN(2) == 0 {
		i := rng.IntN(len(ops))
		if ops[i].Outcome == OutcomeOK {
			if rng.IntN(2) == 0 {
				ops[i].Balance += 100 * (1 - 2*rng.Int64N(2))
			} else {
				ops[i].Exec += 1 - 2*rng.Int64N(2)
			}
		}
	}
	return ops
}

// TestLinearMatchesTextbookEncoding checks the pool encoding of unknown
// debits against the textbook one on random histories.
func TestLinearMatchesTextbookEncoding(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const initial = 300 // low enough that debits get refused
	var pass, fail int
	for n := range 600 {
		ops := randomHistory(rng, initial)
		want := textbook(ops, initial)
		got := CheckLinearizable(ops, initial, 0)
		if (got.Verdict == report.Pass) != want {
			var b strings.Builder
			WriteHistory(&b, ops)
			t.Fatalf("history %d: verdict %s, textbook encoding says linearizable=%v; history:\n%s", n, got.Verdict, want, b.String())
		}
		if got.Verdict == report.Pass {
			pass++
			continue
		}
		fail++
		if len(got.Window) == 0 || got.WindowFrom > got.WindowTo {
			t.Fatalf("history %d: window [%d, %d] %v", n, got.WindowFrom, got.WindowTo, ids(got.Window))
		}
	}
	// Both verdicts must be well represented for the comparison to mean
	// anything.
	if pass < 100 || fail < 100 {
		t.Errorf("%d linearizable and %d not, want at least 100 of each", pass, fail)
	}
	t.Logf("%d linearizable, %d not", pass, fail)
}

// TestLinearWindowSound checks what the window's meaning rests on: every
// window of a linearizable history is linearizable, wherever it starts
// and ends.
func TestLinearWindowSound(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const initial = 300
	windows := 0
	for n := 0; n < 300; {
		ops := randomHistory(rng, initial)
		if !textbook(ops, initial) {
			continue
		}
		n++
		accts := splitAccounts(ops, initial)
		if len(accts) == 0 {
			continue
		}
		a := accts[0]
		times := []int64{0}
		for _, op := range ops {
			times = append(times, op.Invoke, op.Complete)
		}
		for range 20 {
			from, to := times[rng.IntN(len(times))], times[rng.IntN(len(times))]
			if from > to {
				from, to = to, from
			}
			windows++
			if got := a.check(from, to, 0); got != porcupine.Ok {
				var b strings.Builder
				WriteHistory(&b, ops)
				t.Fatalf("window [%d, %d] of a linearizable history: %s, want Ok; history:\n%s", from, to, got, b.String())
			}
		}
	}
	t.Logf("%d windows", windows)
}

func ExampleCheckLinearizable() {
	ops := []Op{
		okDebit(1, 0, 100, 10, 20, 900, 1),
		unknownDebit(2, 1, 100, 15, 25),
		okGet(3, 0, 30, 40, 800, 2), // op 2 took effect
		okGet(4, 1, 50, 60, 700, 3), // nothing explains this
	}
	res := CheckLinearizable(ops, 1000, time.Second)
	fmt.Println(res.Verdict, res.Failed, res.WindowFrom, res.WindowTo, ids(res.Window))
	// Output: FAIL [a] 10 60 [1 2 3 4]
}

// simulateHistory returns the history of clients running perClient
// operations each on accounts accounts of a correct bank, in the shape
// of a chaos run: debits of 1, most calls short, a few slow, some
// failed and some unknown (of which half took effect, some much later).
func simulateHistory(rng *rand.Rand, clients, accounts, perClient int, initial int64) []Op {
	type effect struct {
		at int64
		op int
	}
	var ops []Op
	var effects []effect
	for c := range clients {
		ts := rng.Int64N(1000)
		for n := range perClient {
			op := Op{ID: n + 1, Client: c, Account: fmt.Sprintf("acct-%d", rng.IntN(accounts)), Invoke: ts, Attempts: 1}
			d := 100 + rng.Int64N(2000)
			if rng.IntN(50) == 0 {
				d *= 100
			}
			op.Complete = ts + d
			ts = op.Complete + rng.Int64N(5000)
			switch p := rng.IntN(10); {
			case p < 4:
				op.Kind = OpGet
			case p < 8:
				op.Kind, op.Key, op.Amount = OpKeyedDebit, fmt.Sprintf("c%d-%d", c, n), 1
			default:
				op.Kind, op.Amount = OpKeylessDebit, 1
			}
			switch p := rng.IntN(100); {
			case p < 3:
				op.Outcome = OutcomeUnknown
				if rng.IntN(2) == 0 {
					effects = append(effects, effect{op.Invoke + rng.Int64N(4*d), len(ops)})
				}
			case p < 8:
				op.Outcome = OutcomeFailed
			default:
				op.Outcome = OutcomeOK
				effects = append(effects, effect{op.Invoke + rng.Int64N(d+1), len(ops)})
			}
			ops = append(ops, op)
		}
	}
	slices.SortStableFunc(effects, func(x, y effect) int { return cmp.Compare(x.at, y.at) })
	type state struct{ balance, exec int64 }
	states := map[string]*state{}
	for _, e := range effects {
		op := &ops[e.op]
		s := states[op.Account]
		if s == nil {
			s = &state{balance: initial}
			states[op.Account] = s
		}
		if op.Kind != OpGet {
			if s.balance < op.Amount {
				if op.Outcome == OutcomeOK {
					op.Outcome, op.Status = OutcomeFailed, "APP_ERROR"
				}
				continue
			}
			s.balance, s.exec = s.balance-op.Amount, s.exec+1
		}
		if op.Outcome == OutcomeOK {
			op.Balance, op.Exec, op.RespAccount, op.Status = s.balance, s.exec, op.Account, "OK"
		}
	}
	return ops
}

func BenchmarkCheckLinearizable(b *testing.B) {
	for _, tt := range []struct {
		name       string
		perClient  int
		doubleExec bool
	}{{"pass_16k", 2000, false}, {"fail_16k", 2000, true}} {
		b.Run(tt.name, func(b *testing.B) {
			ops := simulateHistory(rand.New(rand.NewPCG(5, 6)), 8, 4, tt.perClient, 1000)
			if tt.doubleExec {
				// One debit executed twice: every later answer on its
				// account is one short.
				mid := ops[len(ops)/2]
				for i := range ops {
					if ops[i].Account == mid.Account && ops[i].Invoke > mid.Complete && ops[i].Outcome == OutcomeOK {
						ops[i].Balance, ops[i].Exec = ops[i].Balance-1, ops[i].Exec+1
					}
				}
			}
			for b.Loop() {
				res := CheckLinearizable(ops, 1000, 30*time.Second)
				if want := map[bool]report.Verdict{false: report.Pass, true: report.Fail}[tt.doubleExec]; res.Verdict != want {
					b.Fatalf("verdict %s, want %s (timed out %v)", res.Verdict, want, res.TimedOut)
				}
				if tt.doubleExec {
					b.ReportMetric(float64(len(res.Window)), "window_ops")
				}
			}
		})
	}
}
