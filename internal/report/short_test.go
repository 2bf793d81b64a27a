package report

import (
	"strings"
	"testing"
	"time"
)

func TestShort(t *testing.T) {
	pass := Line{Name: "late", Verdict: Pass, Fields: []Field{
		{Key: "A", Kind: Asserted, Value: "DEADLINE_EXCEEDED"},
		{Key: "aElapsed", Kind: Volatile, Value: "200ms"},
		{Key: "B", Kind: Recorded, Value: "OK account=acct-B"},
		{Key: "budget", Kind: Bound, Value: "2000ms"},
		{Key: "lateDropped", Kind: Asserted, Value: "1"},
	}}
	fail := Line{Name: "debit", Verdict: Fail, Fields: []Field{
		{Key: "balance", Kind: Asserted, Value: "980"},
		{Key: WhyKey, Value: "balance=980, want 990"},
	}}
	finding := Line{Name: "grpc_x_go_retry", Verdict: Finding, Fields: []Field{
		{Key: ScenarioKey, Value: "grpc_x"}, {Key: "stack", Value: "grpc-go"}, {Key: "config", Value: "retry"}, {Key: "version", Value: "1.85.0"},
		{Key: "code", Value: "OK"}, {Key: "executions", Value: "2"}, {Key: "elapsed", Kind: Volatile, Value: "22ms"},
		{Key: "exec_at_most_once", Kind: Outcome, Value: "violated"}, {Key: "ok_only_if_executed", Kind: Outcome, Value: "holds"},
	}}
	na := Line{Name: "grpc_x_connect_retry", Verdict: NotApplicable, Fields: []Field{
		{Key: "unsupported", Value: "connect-go lacks retry_policy"}, {Key: WhyKey, Value: "connect-go lacks retry_policy"},
	}}
	tests := []struct {
		name  string
		l     Line
		width int
		want  string
	}{
		{"checked fields, then observed ones", pass, 200, "PASS    late     0.21s  A==DEADLINE_EXCEEDED  budget<=2000ms  lateDropped==1  B=[OK account=acct-B]"},
		{"cut to the width", pass, 50, "PASS    late     0.21s  A==DEADLINE_EXCEEDED  …"},
		{"a failure shows why", fail, 200, "FAIL    debit    0.21s\n    balance=980, want 990"},
		// The double execution a person runs the scenario to see is on
		// the line: the invariants, then what decided them.
		{"a finding shows its invariants and observations", finding, 200,
			"FINDING grpc_x_go_retry   0.21s  exec_at_most_once:=violated  ok_only_if_executed:=holds  code=OK  executions=2"},
		{"a finding is wrapped, never cut", finding, 60,
			"FINDING grpc_x_go_retry   0.21s  exec_at_most_once:=violated\n    ok_only_if_executed:=holds  code=OK  executions=2"},
		{"the invariants come first, before other checked fields", Line{Name: "s", Verdict: Pass, Fields: []Field{
			{Key: "code", Kind: Asserted, Value: "OK"}, {Key: "seen", Value: "1"}, {Key: "own_answer", Kind: Outcome, Value: "holds"},
		}}, 200, "PASS    s        0.21s  own_answer:=holds  code==OK  seen=1"},
		{"n/a says what the stack lacks", na, 200, "N/A     grpc_x_connect_retry   0.21s\n    connect-go lacks retry_policy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Short(tt.l, 210*time.Millisecond, 6, tt.width)
			if got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
			for _, line := range strings.Split(got, "\n") {
				if n := len([]rune(line)); n > tt.width {
					t.Errorf("%d columns, want at most %d", n, tt.width)
				}
			}
		})
	}
}
