package main

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/scenario"
)

// TestBatchCheck: a batch that could never finish, or whose timeout is
// no bound, is a usage error before anything is set up.
func TestBatchCheck(t *testing.T) {
	two := scenario.Registry{{Name: "a"}, {Name: "b"}}
	tests := []struct {
		name  string
		b     batch
		count int
		want  string // "" for no error
	}{
		{"nothing to run", batch{}, maxRuns + 1, ""},
		{"at the bound", batch{Scenarios: two}, maxRuns / 2, ""},
		{"over the bound", batch{Scenarios: two}, maxRuns/2 + 1, "--count 500001 runs 2 scenarios 500001 times: more than 1000000 runs"},
		{"no timeout", batch{Scenarios: two}, 1, ""},
		{"negative timeout", batch{Scenarios: two, Timeout: -time.Second}, 1, "--timeout -1s: want a duration above 0, or 0 for no bound"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.b.check(tt.count)
			var ue *usageError
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("got %v, want nil", err)
			case tt.want != "" && (err == nil || err.Error() != tt.want || !errors.As(err, &ue)):
				t.Errorf("got %v, want the usage error %q", err, tt.want)
			}
		})
	}
}

// TestFailFastStop: only --failfast and a line that failed stop a
// batch, and what is left out is every run after it.
func TestFailFastStop(t *testing.T) {
	tests := []struct {
		name     string
		failFast bool
		verdict  report.Verdict
		i, total int
		stop     bool
		notRun   int
	}{
		{"failure without --failfast", false, report.Fail, 0, 3, false, 0},
		{"pass", true, report.Pass, 0, 3, false, 0},
		{"skipped", true, report.Skipped, 0, 3, false, 0},
		{"finding", true, report.Finding, 0, 3, false, 0},
		{"failure", true, report.Fail, 0, 3, true, 2},
		{"error", true, report.Error, 1, 3, true, 1},
		{"failure of the last run", true, report.Fail, 2, 3, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stop, notRun := failFastStop(tt.failFast, report.Line{Verdict: tt.verdict}, tt.i, tt.total)
			if stop != tt.stop || notRun != tt.notRun {
				t.Errorf("got %v, %d, want %v, %d", stop, notRun, tt.stop, tt.notRun)
			}
		})
	}
}

// TestEnding: what a batch decides once its runs have ended: whether it
// completed, what becomes of its evidence, and its error.
func TestEnding(t *testing.T) {
	cancelled := context.Canceled
	pipe := &signalError{sig: syscall.SIGPIPE}
	writeFailed := errors.New("print result: broken pipe")
	tests := []struct {
		name     string
		e        ending
		writeErr error
		count    int // passes; per is total/count
		complete bool
		fate     evidenceFate
		err      string // "" for nil
	}{
		{"all passed", ending{ran: 4, total: 4}, nil, 1, true, evidenceCommit, ""},
		{"a failure", ending{ran: 4, total: 4, failures: 1}, nil, 1, true, evidenceCommit, errFailed.Error()},
		{"skipped", ending{ran: 4, total: 4, skipped: 2}, nil, 1, true, evidenceSkipped, ""},
		{"interrupted", ending{cause: cancelled, ran: 1, total: 4}, nil, 1, false, evidencePartial,
			fmt.Sprintf("%v (context canceled); 3 of 4 scenarios not run", errInterrupted)},
		{"interrupted in a pass", ending{cause: cancelled, ran: 3, total: 4}, nil, 2, false, evidencePartial,
			fmt.Sprintf("%v (context canceled) in run 2/2; 1 of 4 scenarios not run", errInterrupted)},
		{"interrupted outweighs a write error", ending{cause: cancelled, ran: 4, total: 4}, writeFailed, 1, false, evidencePartial,
			fmt.Sprintf("%v (context canceled); 0 of 4 scenarios not run", errInterrupted)},
		{"reader gone after the last line", ending{cause: pipe, readerGone: true, ran: 4, total: 4}, nil, 1, true, evidenceCommit,
			fmt.Sprintf("%v (%v); 0 of 4 scenarios not run", errInterrupted, pipe)},
		{"reader gone, skipped", ending{cause: pipe, readerGone: true, ran: 4, total: 4, skipped: 1}, nil, 1, true, evidenceDiscard,
			fmt.Sprintf("%v (%v); 0 of 4 scenarios not run", errInterrupted, pipe)},
		{"reader gone mid-run", ending{cause: pipe, readerGone: true, ran: 2, total: 4}, nil, 1, false, evidenceDiscard,
			fmt.Sprintf("%v (%v); 2 of 4 scenarios not run", errInterrupted, pipe)},
		{"evidence unwritable", ending{evErr: writeFailed, ran: 2, total: 4}, writeFailed, 1, false, evidencePartial, writeFailed.Error()},
		{"write error outweighs a failure", ending{ran: 4, total: 4, failures: 1}, writeFailed, 1, true, evidenceCommit, writeFailed.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.e.complete(); got != tt.complete {
				t.Errorf("complete: got %v, want %v", got, tt.complete)
			}
			if got := tt.e.evidence(); got != tt.fate {
				t.Errorf("evidence: got %v, want %v", got, tt.fate)
			}
			err := tt.e.err(tt.writeErr, tt.count, tt.e.total/tt.count)
			if got := fmt.Sprint(err); (tt.err == "" && err != nil) || (tt.err != "" && got != tt.err) {
				t.Errorf("err: got %v, want %q", err, tt.err)
			}
			if tt.e.cause != nil && !errors.Is(err, errInterrupted) {
				t.Errorf("err %v does not wrap errInterrupted", err)
			}
		})
	}
}
