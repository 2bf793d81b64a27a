package scenario_test

import (
	"context"
	"testing"

	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/scenario"
)

// TestErroredIsError: a scenario that calls Errored ends ERROR, its why
// naming the error before any failed check, and nothing after the call
// runs; one that only fails a check ends FAIL.
func TestErroredIsError(t *testing.T) {
	after := false
	errored := scenario.Case{Name: "errored", NoServer: true, Body: func(t *scenario.T) {
		t.Check(false, "x=1, want 2")
		t.Errored("adapter fake exited with 2 calls unanswered")
		after = true
	}}
	line := errored.Run(context.Background(), scenario.Env{})
	if line.Verdict != report.Error || line.Why() != "adapter fake exited with 2 calls unanswered; x=1, want 2" || after {
		t.Errorf("got %s (ran past Errored: %v), want ERROR, why naming the error then the failure", report.Format(line), after)
	}
	failed := scenario.Case{Name: "failed", NoServer: true, Body: func(t *scenario.T) { t.Check(false, "x=1, want 2") }}
	if line := failed.Run(context.Background(), scenario.Env{}); line.Verdict != report.Fail {
		t.Errorf("got %s, want FAIL", report.Format(line))
	}
}

// TestSkipfSkips: a scenario that calls Skipf ends SKIP with its reason,
// whatever it checked before, and nothing after the call runs.
func TestSkipfSkips(t *testing.T) {
	after := false
	c := scenario.Case{Name: "skipped", NoServer: true, Body: func(t *scenario.T) {
		t.Check(false, "x=1, want 2")
		t.Skipf("needs Linux: %s", "/proc")
		after = true
	}}
	line := c.Run(context.Background(), scenario.Env{})
	if line.Verdict != report.Skipped || line.Why() != "needs Linux: /proc" || after {
		t.Errorf("got %s (ran past Skipf: %v), want SKIP why=[needs Linux: /proc]", report.Format(line), after)
	}
}
