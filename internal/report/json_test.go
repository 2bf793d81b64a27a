package report

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestWriteJSON(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 3, 4, 5, 0, time.UTC)
	results := []Result{
		{Line: Line{Name: "a", Verdict: Pass, Fields: []Field{{Key: "n", Value: "990"}, {Key: "t", Value: "2ms", Kind: Volatile}}},
			Group: "evidence", Start: t0, Duration: 1500 * time.Microsecond, PassIndex: 1},
		{Line: Line{Name: "b", Fields: []Field{{Key: "why", Value: "timed out after 1s (--timeout)"}}},
			Group: "robustness", Start: t0, Duration: time.Second, PassIndex: 1, TimedOut: true},
		{Line: Line{Name: "a", Verdict: Interrupted, Fields: []Field{{Key: "ok", Value: "true", Kind: Asserted}, {Key: "r", Value: "0.5", Kind: Bound}}},
			Group: "evidence", Start: t0, Duration: 0, PassIndex: 2},
		{Line: Skip("c", "nethost: test hosts unavailable: not running as root"), Group: "network", Start: t0, PassIndex: 1},
		{Line: Line{Name: "d", Verdict: Error, Fields: []Field{{Key: "why", Value: "adapter grpc-go did not answer init"}}},
			Group: "grpc", Start: t0, PassIndex: 1},
		{Line: Line{Name: "e", Verdict: Finding, Fields: []Field{{Key: "executions", Value: "2"}, {Key: "exec_at_most_once", Value: "violated"}}},
			Group: "grpc", Start: t0, PassIndex: 1},
		{Line: Line{Name: "f", Verdict: NotApplicable, Fields: []Field{{Key: "why", Value: "connect-go lacks retry_policy"}}},
			Group: "grpc", Start: t0, PassIndex: 1},
	}
	info := RunInfo{Command: []string{"rpcbench", "all"}, Version: "v commit c go", Start: t0, End: t0.Add(2 * time.Second)}
	var b strings.Builder
	if err := WriteJSON(&b, info, results); err != nil {
		t.Fatal(err)
	}
	var got any
	if err := json.Unmarshal([]byte(b.String()), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, b.String())
	}
	start := "2026-12-01T03:04:05Z"
	want := map[string]any{
		"schema_version": 4.0,
		"run": map[string]any{"command": []any{"rpcbench", "all"}, "version": "v commit c go", "start": start,
			"end": "2026-12-01T03:04:07Z", "duration_ms": 2000.0},
		"cases": []any{
			map[string]any{"name": "a", "group": "evidence", "start": start, "duration_ms": 1.5, "pass_index": 1.0,
				"verdict": "pass", "pass": true, "fields": []any{
					map[string]any{"key": "n", "value": 990.0, "text": "990", "kind": "recorded", "volatile": false},
					map[string]any{"key": "t", "value": "2ms", "text": "2ms", "kind": "volatile", "volatile": true},
				}},
			map[string]any{"name": "b", "group": "robustness", "start": start, "duration_ms": 1000.0, "pass_index": 1.0,
				"verdict": "timeout", "pass": false, "why": "timed out after 1s (--timeout)", "fields": []any{}},
			map[string]any{"name": "a", "group": "evidence", "start": start, "duration_ms": 0.0, "pass_index": 2.0,
				"verdict": "interrupted", "pass": false, "fields": []any{
					map[string]any{"key": "ok", "value": true, "text": "true", "kind": "asserted", "volatile": false},
					map[string]any{"key": "r", "value": 0.5, "text": "0.5", "kind": "bound", "volatile": false},
				}},
			map[string]any{"name": "c", "group": "network", "start": start, "duration_ms": 0.0, "pass_index": 1.0,
				"verdict": "skip", "pass": false, "why": "nethost: test hosts unavailable: not running as root", "fields": []any{}},
			map[string]any{"name": "d", "group": "grpc", "start": start, "duration_ms": 0.0, "pass_index": 1.0,
				"verdict": "error", "pass": false, "why": "adapter grpc-go did not answer init", "fields": []any{}},
			map[string]any{"name": "e", "group": "grpc", "start": start, "duration_ms": 0.0, "pass_index": 1.0,
				"verdict": "finding", "pass": false, "fields": []any{
					map[string]any{"key": "executions", "value": 2.0, "text": "2", "kind": "recorded", "volatile": false},
					map[string]any{"key": "exec_at_most_once", "value": "violated", "text": "violated", "kind": "recorded", "volatile": false},
				}},
			map[string]any{"name": "f", "group": "grpc", "start": start, "duration_ms": 0.0, "pass_index": 1.0,
				"verdict": "n/a", "pass": false, "why": "connect-go lacks retry_policy", "fields": []any{}},
		},
		"passed":         1.0,
		"failed":         1.0,
		"errors":         1.0,
		"interrupted":    1.0,
		"skipped":        1.0,
		"findings":       1.0,
		"not_applicable": 1.0,
		"summary":        "1 passed, 1 failed, 1 error, 1 interrupted, 1 skipped, 1 finding, 1 n/a",
		"per_case": []any{
			map[string]any{"name": "a", "runs": 2.0, "passed": 1.0, "failed_runs": []any{}, "error_runs": []any{}, "interrupted_runs": []any{2.0}, "skipped_runs": []any{}},
			map[string]any{"name": "b", "runs": 1.0, "passed": 0.0, "failed_runs": []any{1.0}, "error_runs": []any{}, "interrupted_runs": []any{}, "skipped_runs": []any{}},
			map[string]any{"name": "c", "runs": 1.0, "passed": 0.0, "failed_runs": []any{}, "error_runs": []any{}, "interrupted_runs": []any{}, "skipped_runs": []any{1.0}},
			map[string]any{"name": "d", "runs": 1.0, "passed": 0.0, "failed_runs": []any{}, "error_runs": []any{1.0}, "interrupted_runs": []any{}, "skipped_runs": []any{}},
			map[string]any{"name": "e", "runs": 1.0, "passed": 1.0, "failed_runs": []any{}, "error_runs": []any{}, "interrupted_runs": []any{}, "skipped_runs": []any{}},
			map[string]any{"name": "f", "runs": 1.0, "passed": 1.0, "failed_runs": []any{}, "error_runs": []any{}, "interrupted_runs": []any{}, "skipped_runs": []any{}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("JSON mismatch (-want +got):\n%s", diff)
	}
}

func TestWriteJSONEmpty(t *testing.T) {
	var b strings.Builder
	if err := WriteJSON(&b, RunInfo{}, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"cases": []`, `"per_case": []`, `"command": []`, `"skipped": 0`, `"summary": "0 passed, 0 failed"`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("WriteJSON(nil) = %s, want %s", b.String(), want)
		}
	}
}
