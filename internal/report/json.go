package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"
)

// SchemaVersion is the version of the JSON document WriteJSON writes.
// Version 2 added schema_version, run, and per case group, start,
// duration_ms, pass_index and why; its verdict is lower case and may be
// "timeout"; a field's value is a number or a boolean when its text is
// one (text keeps the text). Version 2 later gained, by addition only, the
// verdict "skip", the count skipped and per case skipped_runs: a reader
// written before them still reads every document correctly, except that
// it does not know the verdict "skip" (whose pass is false). Version 3
// added the verdicts "finding" (a stack's pinned violation: not a
// failure, and pass is false, since pass means every invariant held) and
// "n/a" (the stack lacks what the configuration needs), the counts
// findings and not_applicable, and counts a per_case entry's finding and
// n/a runs in its passed, as runs that went as pinned. Version 4 gave a
// judged stack's invariants the field kind "outcome" (they were
// "asserted"), whose text is holds, violated, unsupported or sometimes.
const SchemaVersion = 4

// Result is one scenario run: its line and what the machine-readable
// outputs add to it.
type Result struct {
	Line
	Group    string
	Start    time.Time
	Duration time.Duration
	// PassIndex is the 1-based pass of a --count run it belongs to.
	PassIndex int
	// TimedOut is set when --timeout cut the scenario off; its verdict
	// is then Fail.
	TimedOut bool
}

// Status is the result's verdict as the machine-readable outputs write
// it: pass, finding, n/a, fail, error, interrupted, skip or timeout.
func (r Result) Status() string {
	switch {
	case r.TimedOut:
		return "timeout"
	case r.Verdict == Pass:
		return "pass"
	case r.Verdict == Interrupted:
		return "interrupted"
	case r.Verdict == Skipped:
		return "skip"
	case r.Verdict == Error:
		return "error"
	case r.Verdict == Finding:
		return "finding"
	case r.Verdict == NotApplicable:
		return "n/a"
	}
	return "fail"
}

// RunInfo describes a whole run.
type RunInfo struct {
	// Command is the command line, program name first.
	Command []string
	// Version is Version(): module version, commit, Go version.
	Version    string
	Start, End time.Time
}

// The JSON document WriteJSON writes. Its field names are a stable
// interface for scripts; add to them, and bump SchemaVersion when a
// field changes meaning.
type (
	jsonResults struct {
		SchemaVersion int         `json:"schema_version"`
		Run           jsonRun     `json:"run"`
		Cases         []jsonCase  `json:"cases"`
		Passed        int         `json:"passed"`
		Failed        int         `json:"failed"`
		Errors        int         `json:"errors"`
		Interrupted   int         `json:"interrupted"`
		Skipped       int         `json:"skipped"`
		Findings      int         `json:"findings"`
		NotApplicable int         `json:"not_applicable"`
		Summary       string      `json:"summary"`
		PerCase       []jsonCount `json:"per_case"`
	}
	jsonRun struct {
		Command    []string `json:"command"`
		Version    string   `json:"version"`
		Start      string   `json:"start"`
		End        string   `json:"end"`
		DurationMs float64  `json:"duration_ms"`
	}
	jsonCount struct {
		Name            string `json:"name"`
		Runs            int    `json:"runs"`
		Passed          int    `json:"passed"`
		FailedRuns      []int  `json:"failed_runs"`
		ErrorRuns       []int  `json:"error_runs"`
		InterruptedRuns []int  `json:"interrupted_runs"`
		SkippedRuns     []int  `json:"skipped_runs"`
	}
	jsonCase struct {
		Name       string      `json:"name"`
		Group      string      `json:"group"`
		Start      string      `json:"start"`
		DurationMs float64     `json:"duration_ms"`
		PassIndex  int         `json:"pass_index"`
		Verdict    string      `json:"verdict"`
		Pass       bool        `json:"pass"`
		Why        string      `json:"why,omitempty"`
		Fields     []jsonField `json:"fields"`
	}
	jsonField struct {
		Key      string `json:"key"`
		Value    any    `json:"value"`
		Text     string `json:"text"`
		Kind     string `json:"kind"`
		Volatile bool   `json:"volatile"`
	}
)

// typed returns s as a JSON number or boolean when it is one, else s.
func typed(s string) any {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f
	}
	if b, err := strconv.ParseBool(s); err == nil && (s == "true" || s == "false") {
		return b
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// WriteJSON writes a run's results as one indented JSON object, schema
// SchemaVersion (README, "Machine-readable results", documents it):
//
//	{"schema_version": 3,
//	 "run": {"command": [...], "version": ..., "start": ..., "end": ..., "duration_ms": N},
//	 "cases": [{"name": ..., "group": ..., "start": ..., "duration_ms": N, "pass_index": K,
//	            "verdict": "pass|finding|n/a|fail|error|interrupted|skip|timeout", "pass": true, "why": ...,
//	            "fields": [{"key": ..., "value": 990 | true | "text", "text": "990",
//	                        "kind": "asserted", "volatile": false}]}],
//	 "passed": N, "failed": M, "errors": E, "interrupted": K, "skipped": J, "findings": F,
//	 "not_applicable": A, "summary": "N passed, M failed, F findings, A n/a",
//	 "per_case": [{"name": ..., "runs": R, "passed": P, "failed_runs": [...], "interrupted_runs": [...],
//	               "skipped_runs": [...]}]}
//
// kind is Kind.String(). The why field is left out of fields and given
// as why; a skipped case's why says what is missing, an n/a one's what
// the stack lacks. pass is true for pass only: a finding agrees with its
// pins but is a violation, and skip, n/a and interrupted are neither pass
// nor a failure.
// per_case is CountByCase: one entry per case name, in order of first
// appearance, whose failed_runs, interrupted_runs and skipped_runs are the
// 1-based occurrences of that case that failed, were interrupted or were
// skipped.
// Every array is an array, never null.
func WriteJSON(w io.Writer, info RunInfo, results []Result) error {
	lines := make([]Line, len(results))
	for i, r := range results {
		lines[i] = r.Line
	}
	counts := CountByCase(lines)
	r := jsonResults{
		SchemaVersion: SchemaVersion,
		Run: jsonRun{Command: info.Command, Version: info.Version, Start: stamp(info.Start), End: stamp(info.End),
			DurationMs: ms(info.End.Sub(info.Start))},
		Cases: make([]jsonCase, len(results)), PerCase: make([]jsonCount, len(counts)), Summary: Summary(lines),
	}
	if r.Run.Command == nil {
		r.Run.Command = []string{}
	}
	t := Tally(lines)
	r.Passed, r.Failed, r.Errors, r.Interrupted, r.Skipped = t.Passed, t.Failed, t.Errors, t.Interrupted, t.Skipped
	r.Findings, r.NotApplicable = t.Findings, t.NotApplicable
	for i, res := range results {
		c := jsonCase{Name: res.Name, Group: res.Group, Start: stamp(res.Start), DurationMs: ms(res.Duration), PassIndex: res.PassIndex,
			Verdict: res.Status(), Pass: res.Passed(), Why: res.Why(), Fields: []jsonField{}}
		for _, f := range res.Fields {
			if f.Key == WhyKey {
				continue
			}
			c.Fields = append(c.Fields, jsonField{Key: f.Key, Value: typed(f.Value), Text: f.Value, Kind: f.Kind.String(), Volatile: f.Kind == Volatile})
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
