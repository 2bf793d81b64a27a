package report

import (
	"encoding/json"
	"fmt"
	"io"
)

// The JSON document WriteJSON writes. Its field names are a stable
// interface for scripts; add to them, never rename.
type (
	jsonResults struct {
		Cases       []jsonCase  `json:"cases"`
		Passed      int         `json:"passed"`
		Failed      int         `json:"failed"`
		Interrupted int         `json:"interrupted"`
		Summary     string      `json:"summary"`
		PerCase     []jsonCount `json:"per_case"`
	}
	jsonCount struct {
		Name            string `json:"name"`
		Runs            int    `json:"runs"`
		Passed          int    `json:"passed"`
		FailedRuns      []int  `json:"failed_runs"`
		InterruptedRuns []int  `json:"interrupted_runs"`
	}
	jsonCase struct {
		Name    string      `json:"name"`
		Verdict string      `json:"verdict"`
		Pass    bool        `json:"pass"`
		Fields  []jsonField `json:"fields"`
	}
	jsonField struct {
		Key      string `json:"key"`
		Value    string `json:"value"`
		Kind     string `json:"kind"`
		Volatile bool   `json:"volatile"`
	}
)

// WriteJSON writes lines as one indented JSON object:
//
//	{"cases": [{"name": ..., "verdict": "PASS", "pass": true,
//	            "fields": [{"key": ..., "value": ..., "kind": "asserted", "volatile": false}]}],
//	 "passed": N, "failed": M, "interrupted": K, "summary": "N passed, M failed",
//	 "per_case": [{"name": ..., "runs": R, "passed": P, "failed_runs": [...], "interrupted_runs": [...]}]}
//
// verdict is PASS, FAIL or INTERRUPTED, and pass is true for PASS only.
// kind is Kind.String(): recorded, asserted, bound or volatile; volatile
// is true for volatile only. pass and volatile predate verdict and kind
// and stay for scripts that read them. summary is Summary(lines).
//
// per_case is CountByCase(lines): one entry per case name, in order of
// first appearance, whose failed_runs and interrupted_runs are the
// 1-based occurrences of that case that failed or were interrupted.
// Every array is an array, never null. Values are written as given,
// newlines included.
func WriteJSON(w io.Writer, lines []Line) error {
	counts := CountByCase(lines)
	r := jsonResults{Cases: make([]jsonCase, len(lines)), PerCase: make([]jsonCount, len(counts)), Summary: Summary(lines)}
	r.Passed, r.Failed, r.Interrupted = Tally(lines)
	for i, l := range lines {
		c := jsonCase{Name: l.Name, Verdict: l.Verdict.String(), Pass: l.Passed(), Fields: make([]jsonField, len(l.Fields))}
		for j, f := range l.Fields {
			c.Fields[j] = jsonField{Key: f.Key, Value: f.Value, Kind: f.Kind.String(), Volatile: f.Kind == Volatile}
		}
		r.Cases[i] = c
	}
	for i, c := range counts {
		r.PerCase[i] = jsonCount(c)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("report: write json: %w", err)
	}
	return nil
}
