package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rpcbench/rpcbench/internal/report"
)

// execLine is the EXEC event rpcserver logs for a debit it executed.
func execLine(key, status string) string {
	return fmt.Sprintf(`{"time":"2026-12-01T00:00:00Z","level":"DEBUG","msg":"EXEC","conn":1,"id":1,"method":"debit","key":%q,"account":"a","status":%q}`, key, status) + "\n"
}

// TestExactlyOnceRules hands the exactly-once checker synthetic histories
// and server logs, one per rule: each rule alone must fail the check,
// and the excused case (a server down during the call) must not.
func TestExactlyOnceRules(t *testing.T) {
	keyed := func(key string, outcome Outcome, status string, invoke, complete int64) Op {
		return Op{Kind: OpKeyedDebit, Account: "a", Amount: 1, Key: key, Outcome: outcome, Status: status, Invoke: invoke, Complete: complete}
	}
	tests := []struct {
		name   string
		ops    []Op
		log    string
		downs  [][2]int64
		want   report.Verdict
		detail string
	}{
		{"each executed once", []Op{keyed("k1", OutcomeOK, "OK", 1, 2), keyed("k2", OutcomeUnknown, "UNKNOWN", 3, 4)},
			execLine("k1", "OK") + execLine("k2", "OK"), nil, report.Pass, "keys=2 executed_twice=0 acked_unexecuted=0 failed_executed=0"},
		{"executed twice", []Op{keyed("k1", OutcomeOK, "OK", 1, 2)},
			execLine("k1", "OK") + execLine("k1", "OK"), nil, report.Fail, "executed_twice=1"},
		{"acknowledged, never executed", []Op{keyed("k1", OutcomeOK, "OK", 1, 2)},
			"", nil, report.Fail, "acked_unexecuted=1"},
		{"acknowledged, unlogged while a server was down", []Op{keyed("k1", OutcomeOK, "OK", 10, 20)},
			"", [][2]int64{{15, 30}}, report.Pass, "unlogged_at_kill=1"},
		{"answered as failed but executed", []Op{keyed("k1", OutcomeFailed, "UNAVAILABLE", 1, 2)},
			execLine("k1", "OK"), nil, report.Fail, "failed_executed=1 "},
		{"failed and not executed", []Op{keyed("k1", OutcomeFailed, "UNAVAILABLE", 1, 2)},
			execLine("k1", "UNAVAILABLE"), nil, report.Pass, "failed_executed=0"},
		{"keyless debits are not its business", []Op{{Kind: OpKeylessDebit, Account: "a", Amount: 1, Outcome: OutcomeOK}},
			"", nil, report.Pass, "keys=0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fleet{o: Options{Servers: 1, Out: t.TempDir()}, downs: [][][2]int64{tt.downs}}
			if err := os.WriteFile(f.logPath(0), []byte(tt.log), 0o644); err != nil {
				t.Fatal(err)
			}
			c := exactlyOnce(tt.ops, f)
			if c.Verdict != tt.want || !strings.Contains(c.Detail, tt.detail) {
				t.Errorf("got %v %s, want %v with %q", c.Verdict, c.Detail, tt.want, tt.detail)
			}
			countsShown(t, c)
		})
	}
	t.Run("an unreadable log fails", func(t *testing.T) {
		f := &fleet{o: Options{Servers: 1, Out: filepath.Join(t.TempDir(), "missing")}, downs: make([][][2]int64, 1)}
		if c := exactlyOnce(nil, f); c.Verdict != report.Fail || !strings.Contains(c.Detail, "logs unreadable") {
			t.Errorf("got %v %s, want FAIL, logs unreadable", c.Verdict, c.Detail)
		}
	})
}

// TestRightCallerRules: an OK answer counts as right only when it names
// the account its call asked for; one naming another account, naming
// none, or that could not be parsed (the workload then leaves
// RespAccount empty) fails the check.
func TestRightCallerRules(t *testing.T) {
	ok := func(asked, named string) Op {
		return Op{Kind: OpGet, Account: asked, Outcome: OutcomeOK, RespAccount: named}
	}
	tests := []struct {
		name string
		ops  []Op
		want report.Verdict
	}{
		{"every answer its own", []Op{ok("a", "a"), ok("b", "b")}, report.Pass},
		{"another call's answer", []Op{ok("a", "a"), ok("b", "a")}, report.Fail},
		{"an answer naming no account", []Op{ok("a", "")}, report.Fail},
		{"failed and unknown calls have no answer to check", []Op{{Kind: OpGet, Account: "a", Outcome: OutcomeFailed}, {Kind: OpGet, Account: "a", Outcome: OutcomeUnknown}}, report.Pass},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := rightCaller(tt.ops)
			if c.Verdict != tt.want {
				t.Errorf("got %v %s, want %v", c.Verdict, c.Detail, tt.want)
			}
			countsShown(t, c)
		})
	}
}

// countsShown fails unless c's Counts are the numbers its Detail shows.
func countsShown(t *testing.T, c Check) {
	t.Helper()
	if len(c.Counts) == 0 {
		t.Errorf("%s: no counts", c.Name)
	}
	for k, n := range c.Counts {
		if !strings.Contains(" "+c.Detail+" ", fmt.Sprintf(" %s=%d ", k, n)) {
			t.Errorf("%s: Counts[%s]=%d, Detail %q shows otherwise", c.Name, k, n, c.Detail)
		}
	}
}

// TestExactlyOnceAcrossDrain: a keyed debit that a draining server did
// not take, re-sent and executed by the other server, is executed once;
// one the draining server took past its drain and the other executed
// again is caught executed twice, wherever its two EXEC lines are.
func TestExactlyOnceAcrossDrain(t *testing.T) {
	op := Op{Kind: OpKeyedDebit, Account: "a", Amount: 1, Key: "k1", Outcome: OutcomeOK, Status: "OK", Invoke: 1, Complete: 2}
	tests := []struct {
		name   string
		logs   [2]string // servers 0 (drained) and 1
		want   report.Verdict
		detail string
	}{
		{"re-sent after the drain, executed by the other", [2]string{"", execLine("k1", "OK")}, report.Pass, "executed_twice=0 acked_unexecuted=0"},
		{"taken past the drain and executed by both", [2]string{execLine("k1", "OK"), execLine("k1", "OK")}, report.Fail, "executed_twice=1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fleet{o: Options{Servers: 2, Out: t.TempDir()}, downs: make([][][2]int64, 2)}
			for i, l := range tt.logs {
				if err := os.WriteFile(f.logPath(i), []byte(l), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if c := exactlyOnce([]Op{op}, f); c.Verdict != tt.want || !strings.Contains(c.Detail, tt.detail) {
				t.Errorf("got %v %s, want %v with %q", c.Verdict, c.Detail, tt.want, tt.detail)
			}
		})
	}
}
