package report

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWriteJSON(t *testing.T) {
	lines := []Line{
		{Name: "a", Verdict: Pass, Fields: []Field{{Key: "n", Value: "1"}, {Key: "t", Value: "2ms", Kind: Volatile}}},
		{Name: "b", Fields: nil},
		{Name: "a", Verdict: Interrupted, Fields: []Field{{Key: "ok", Value: "true", Kind: Asserted}, {Key: "t", Value: "9ms", Kind: Bound}}},
	}
	var b strings.Builder
	if err := WriteJSON(&b, lines); err != nil {
		t.Fatal(err)
	}
	var got any
	if err := json.Unmarshal([]byte(b.String()), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, b.String())
	}
	want := map[string]any{
		"cases": []any{
			map[string]any{"name": "a", "verdict": "PASS", "pass": true, "fields": []any{
				map[string]any{"key": "n", "value": "1", "kind": "recorded", "volatile": false},
				map[string]any{"key": "t", "value": "2ms", "kind": "volatile", "volatile": true},
			}},
			map[string]any{"name": "b", "verdict": "FAIL", "pass": false, "fields": []any{}},
			map[string]any{"name": "a", "verdict": "INTERRUPTED", "pass": false, "fields": []any{
				map[string]any{"key": "ok", "value": "true", "kind": "asserted", "volatile": false},
				map[string]any{"key": "t", "value": "9ms", "kind": "bound", "volatile": false},
			}},
		},
		"passed":      1.0,
		"failed":      1.0,
		"interrupted": 1.0,
		"summary":     "1 passed, 1 failed, 1 interrupted",
		"per_case": []any{
			map[string]any{"name": "a", "runs": 2.0, "passed": 1.0, "failed_runs": []any{}, "interrupted_runs": []any{2.0}},
			map[string]any{"name": "b", "runs": 1.0, "passed": 0.0, "failed_runs": []any{1.0}, "interrupted_runs": []any{}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("JSON mismatch (-want +got):\n%s", diff)
	}
}

func TestWriteJSONEmpty(t *testing.T) {
	var b strings.Builder
	if err := WriteJSON(&b, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"cases": []`, `"per_case": []`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("WriteJSON(nil) = %s, want %s", b.String(), want)
		}
	}
}
