package report

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCountByCase(t *testing.T) {
	pass := func(name string) Line { return Line{Name: name, Verdict: Pass} }
	fail := func(name string) Line { return Line{Name: name, Verdict: Fail} }
	interrupted := func(name string) Line { return Line{Name: name, Verdict: Interrupted} }
	skipped := func(name string) Line { return Skip(name, "no root") }
	tests := []struct {
		name  string
		lines []Line
		want  []CaseCount
	}{
		{"none", nil, []CaseCount{}},
		{"each once", []Line{pass("a"), fail("b")}, []CaseCount{
			{Name: "a", Runs: 1, Passed: 1, FailedRuns: []int{}, ErrorRuns: []int{}, InterruptedRuns: []int{}, SkippedRuns: []int{}},
			{Name: "b", Runs: 1, Passed: 0, FailedRuns: []int{1}, ErrorRuns: []int{}, InterruptedRuns: []int{}, SkippedRuns: []int{}},
		}},
		{"repeated, in order of first appearance", []Line{
			pass("b"), pass("a"),
			fail("b"), pass("a"),
			pass("b"), pass("a"),
			fail("b"),
		}, []CaseCount{
			{Name: "b", Runs: 4, Passed: 2, FailedRuns: []int{2, 4}, ErrorRuns: []int{}, InterruptedRuns: []int{}, SkippedRuns: []int{}},
			{Name: "a", Runs: 3, Passed: 3, FailedRuns: []int{}, ErrorRuns: []int{}, InterruptedRuns: []int{}, SkippedRuns: []int{}},
		}},
		{"interrupted", []Line{pass("a"), fail("a"), interrupted("a")}, []CaseCount{
			{Name: "a", Runs: 3, Passed: 1, FailedRuns: []int{2}, ErrorRuns: []int{}, InterruptedRuns: []int{3}, SkippedRuns: []int{}},
		}},
		{"an error is counted apart", []Line{pass("a"), {Name: "a", Verdict: Error}}, []CaseCount{
			{Name: "a", Runs: 2, Passed: 1, FailedRuns: []int{}, ErrorRuns: []int{2}, InterruptedRuns: []int{}, SkippedRuns: []int{}},
		}},
		{"skipped is neither passed nor failed", []Line{skipped("a"), pass("b"), skipped("a")}, []CaseCount{
			{Name: "a", Runs: 2, Passed: 0, FailedRuns: []int{}, ErrorRuns: []int{}, InterruptedRuns: []int{}, SkippedRuns: []int{1, 2}},
			{Name: "b", Runs: 1, Passed: 1, FailedRuns: []int{}, ErrorRuns: []int{}, InterruptedRuns: []int{}, SkippedRuns: []int{}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, CountByCase(tt.lines)); diff != "" {
				t.Errorf("CountByCase mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWriteCounts(t *testing.T) {
	counts := []CaseCount{
		{Name: "normal_multiplex", Runs: 30, Passed: 30, FailedRuns: []int{}},
		{Name: "late", Runs: 30, Passed: 29, FailedRuns: []int{17}},
		{Name: "flaky_case", Runs: 30, Passed: 28, FailedRuns: []int{4, 17}},
		{Name: "stopped", Runs: 30, Passed: 28, FailedRuns: []int{4}, ErrorRuns: []int{}, InterruptedRuns: []int{30}},
		{Name: "no_root", Runs: 3, Passed: 0, SkippedRuns: []int{1, 2, 3}},
		{Name: "bad_adapter", Runs: 2, Passed: 1, ErrorRuns: []int{2}},
	}
	var b strings.Builder
	if err := WriteCounts(&b, counts); err != nil {
		t.Fatal(err)
	}
	want := "normal_multiplex  30/30\n" +
		"late              29/30  failed in run 17\n" +
		"flaky_case        28/30  failed in runs 4, 17\n" +
		"stopped           28/30  failed in run 4; interrupted in run 30\n" +
		"no_root           0/3    skipped in runs 1, 2, 3\n" +
		"bad_adapter       1/2    errored in run 2\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("WriteCounts mismatch (-want +got):\n%s", diff)
	}
	// The table sits among CASE lines in output.txt; ReadOutput skips it.
	lines, err := ReadOutput(strings.NewReader("CASE late PASS\n" + b.String() + "1 passed, 0 failed\n"))
	if err != nil || len(lines) != 1 {
		t.Errorf("ReadOutput over the table = %v, %v; want the one CASE line", lines, err)
	}
}

// TestNotes: findings are named by scenario with their columns, n/a
// counted by what the stacks lack; a run of passes has no notes.
func TestNotes(t *testing.T) {
	finding := func(name, sc string) Line {
		return Line{Name: name, Verdict: Finding, Fields: []Field{{Key: ScenarioKey, Value: sc}, {Key: "executions", Value: "2"}}}
	}
	na := func(name, why string) Line {
		return Line{Name: name, Verdict: NotApplicable, Fields: []Field{{Key: WhyKey, Value: why}}}
	}
	lines := []Line{
		{Name: "a", Verdict: Pass},
		finding("grpc_close_after_exec_grpcgo_retry", "grpc_close_after_exec"),
		finding("grpc_close_after_exec_grpcjs_retry", "grpc_close_after_exec"),
		na("grpc_close_after_exec_connectgo_retry", "connect-go lacks retry_policy"),
		finding("negative_control_x", ""),
		na("grpc_close_after_exec_connectgo_throttled", "connect-go lacks retry_policy, throttling"),
		na("grpc_x_connectgo_retry", "connect-go lacks retry_policy"),
	}
	want := []string{
		"3 findings, pinned violations of the stacks under test, not failures: grpc_close_after_exec (grpcgo_retry, grpcjs_retry); negative_control_x",
		"3 n/a, not judged, not failures: 2 connect-go lacks retry_policy; 1 connect-go lacks retry_policy, throttling",
	}
	if diff := cmp.Diff(want, Notes(lines)); diff != "" {
		t.Errorf("Notes (-want +got):\n%s", diff)
	}
	if got := Notes(lines[:1]); len(got) != 0 {
		t.Errorf("Notes of a pass = %q, want none", got)
	}
}
