package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/cases"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/scenario"
)

func TestRunAll(t *testing.T) {
	tests := []struct {
		name       string
		group      string
		failSecond bool
		wantRuns   []string
		wantCode   int
		wantOut    string
		wantErr    string
	}{
		{
			name:     "all pass",
			group:    cases.GroupEvidence,
			wantRuns: []string{"one", "two"},
			wantCode: exitOK,
			wantOut:  "CASE one PASS n=1 t~=3ms\nCASE two PASS\n2 passed, 0 failed\n",
		},
		{
			name:       "one fails",
			group:      cases.GroupEvidence,
			failSecond: true,
			wantRuns:   []string{"one", "two"},
			wantCode:   exitFailed,
			wantOut:    "CASE one PASS n=1 t~=3ms\nCASE two FAIL\n1 passed, 1 failed\n",
		},
		{
			name:     "group all",
			group:    scenario.GroupAll,
			wantRuns: []string{"one", "extra", "two"},
			wantCode: exitOK,
			wantOut:  "CASE one PASS n=1 t~=3ms\nCASE extra PASS\nCASE two PASS\n3 passed, 0 failed\n",
		},
		{
			name:     "other group",
			group:    "slow",
			wantRuns: []string{"extra"},
			wantCode: exitOK,
			wantOut:  "CASE extra PASS\n1 passed, 0 failed\n",
		},
		{
			name:     "unknown group",
			group:    "nope",
			wantCode: exitError,
			wantErr:  "rpcbench: no scenarios in group \"nope\"\nvalid groups: evidence, slow, all\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r fakeRuns
			a, stdout, stderr := testApp(t,
				r.fake("one", cases.GroupEvidence, true, report.Field{Key: "n", Value: "1"}, report.Field{Key: "t", Value: "3ms", Kind: report.Volatile}),
				r.fake("extra", "slow", true),
				r.fake("two", cases.GroupEvidence, !tt.failSecond),
			)
			err := runAll(context.Background(), &allOptions{app: a, Group: tt.group, Evidence: "evidence"})
			code, errText := outcome(err, stderr)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d (err %v)", code, tt.wantCode, err)
			}
			if diff := cmp.Diff(tt.wantRuns, r.names()); diff != "" {
				t.Errorf("scenarios run (-want +got):\n%s", diff)
			}
			if got := stdout.String(); got != tt.wantOut {
				t.Errorf("stdout =\n%s\nwant\n%s", got, tt.wantOut)
			}
			if tt.wantErr != "" && errText != tt.wantErr {
				t.Errorf("stderr =\n%s\nwant\n%s", errText, tt.wantErr)
			}
			if tt.wantCode == exitError {
				return
			}
			// output.txt holds exactly what stdout showed.
			if got := readFile(t, filepath.Join("evidence", report.OutputFile)); got != tt.wantOut {
				t.Errorf("output.txt =\n%s\nwant\n%s", got, tt.wantOut)
			}
		})
	}
}

func TestRunAllEvidence(t *testing.T) {
	var r fakeRuns
	a, _, stderr := testApp(t, r.fake("one", cases.GroupEvidence, true), r.fake("two", cases.GroupEvidence, true))
	logs := filepath.Join("ev", report.LogsDir)
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(logs, "server-gone.log")
	if err := os.WriteFile(stale, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	a.Server = filepath.Join(t.TempDir(), "my-server")
	if err := os.WriteFile(a.Server, nil, 0o755); err != nil {
		t.Fatal(err)
	}

	err := runAll(context.Background(), &allOptions{app: a, Group: cases.GroupEvidence, Evidence: "ev", JSON: "results.json"})
	if code, errText := outcome(err, stderr); code != exitOK {
		t.Fatalf("exit code %d, stderr %s", code, errText)
	}

	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale log %s still there (stat err %v)", stale, err)
	}
	got, err := report.ReadLogs(logs)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"server-one.log", "server-two.log"} {
		if _, ok := got[name]; !ok {
			t.Errorf("server log %s missing from %s", name, logs)
		}
	}
	for _, run := range r.runs {
		// Logs are written inside ev/ and moved to ev/logs at the end.
		if d := run.Env.LogDir; filepath.Base(d) != report.LogsDir || filepath.Dir(filepath.Dir(d)) != "ev" {
			t.Errorf("%s ran with LogDir %q, want a logs directory inside ev/", run.Name, d)
		}
		if run.Env.ServerBin != a.Server {
			t.Errorf("%s ran with ServerBin %q, want %q", run.Name, run.Env.ServerBin, a.Server)
		}
	}
	env := readFile(t, filepath.Join("ev", report.EnvFile))
	for _, key := range []string{"go:", "os/arch:", "kernel:", "cpu:", "cores:", "commit:", "date:"} {
		if !strings.Contains(env, key) {
			t.Errorf("env.txt lacks %q:\n%s", key, env)
		}
	}

	var results struct {
		Cases []struct {
			Name string `json:"name"`
			Pass bool   `json:"pass"`
		} `json:"cases"`
		Summary string `json:"summary"`
	}
	if err := json.Unmarshal([]byte(readFile(t, "results.json")), &results); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	if len(results.Cases) != 2 || results.Cases[0].Name != "one" || !results.Cases[1].Pass || results.Summary != "2 passed, 0 failed" {
		t.Errorf("results.json = %+v", results)
	}
}

func TestRunAllNoEvidence(t *testing.T) {
	var r fakeRuns
	a, _, stderr := testApp(t, r.fake("one", cases.GroupEvidence, true))
	err := runAll(context.Background(), &allOptions{app: a, Group: cases.GroupEvidence, Evidence: ""})
	if code, errText := outcome(err, stderr); code != exitOK {
		t.Fatalf("exit code %d, stderr %s", code, errText)
	}
	if entries, _ := os.ReadDir("."); len(entries) != 0 {
		t.Errorf("working directory holds %v, want nothing written", entries)
	}
	// The logs went to a temporary directory that is gone now.
	if d := r.runs[0].Env.LogDir; d == "" {
		t.Errorf("LogDir empty, want a temporary directory for the batch")
	} else if _, err := os.Stat(d); !os.IsNotExist(err) {
		t.Errorf("temporary log directory %s still there (stat err %v)", d, err)
	}
}

func TestRunAllServerMissing(t *testing.T) {
	var r fakeRuns
	a, _, stderr := testApp(t, r.fake("one", cases.GroupEvidence, true))
	empty := t.TempDir()
	a.Executable = func() (string, error) { return filepath.Join(empty, "rpcbench"), nil }
	err := runAll(context.Background(), &allOptions{app: a, Group: cases.GroupEvidence, Evidence: "evidence"})
	code, errText := outcome(err, stderr)
	if code != exitError {
		t.Errorf("exit code %d, want %d", code, exitError)
	}
	for _, want := range []string{filepath.Join(empty, "rpcserver"), "go build -o bin/ ./cmd/..."} {
		if !strings.Contains(errText, want) {
			t.Errorf("stderr %q does not mention %q", errText, want)
		}
	}
	if len(r.runs) != 0 {
		t.Errorf("ran %v without a server", r.names())
	}
}

func TestRunAllInterrupted(t *testing.T) {
	var r fakeRuns
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := r.fake("one", cases.GroupEvidence, true)
	interrupting := scenario.Fake("two", cases.GroupEvidence, "proves two", func(ctx context.Context, env scenario.Env) report.Line {
		cancel() // as SIGINT would, while the scenario runs
		<-ctx.Done()
		return report.Line{Name: "two", Verdict: report.Interrupted, Fields: []report.Field{{Key: "why", Value: "interrupted: " + ctx.Err().Error()}}}
	})
	a, stdout, stderr := testApp(t, first, interrupting, r.fake("three", cases.GroupEvidence, true))

	err := runAll(ctx, &allOptions{app: a, Group: cases.GroupEvidence, Evidence: "evidence"})
	code, errText := outcome(err, stderr)
	if code != exitInterrupted {
		t.Errorf("exit code %d, want %d", code, exitInterrupted)
	}
	if diff := cmp.Diff([]string{"one"}, r.names()); diff != "" {
		t.Errorf("fakes run (-want +got):\n%s", diff)
	}
	if !strings.Contains(errText, "1 of 3 scenarios not run") {
		t.Errorf("stderr %q does not say what was not run", errText)
	}
	want := "CASE one PASS\nCASE two INTERRUPTED why=[interrupted: context canceled]\n1 passed, 0 failed, 1 interrupted\n"
	if got := stdout.String(); got != want {
		t.Errorf("stdout =\n%s\nwant\n%s", got, want)
	}
	checkPartial(t, "evidence", errText, want)
}

// checkPartial checks that an interrupted run left no output.txt in dir,
// which had none, and that stderr names the directory holding its partial
// output, which is want.
func checkPartial(t *testing.T, dir, errText, want string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, report.OutputFile)); !os.IsNotExist(err) {
		t.Errorf("an interrupted run wrote %s/%s (stat err %v)", dir, report.OutputFile, err)
	}
	m := regexp.MustCompile(`partial output is in (\S+)`).FindStringSubmatch(errText)
	if m == nil {
		t.Fatalf("stderr %q does not say where the partial output went", errText)
	}
	if got := readFile(t, filepath.Join(m[1], report.OutputFile)); got != want {
		t.Errorf("partial output.txt =\n%s\nwant\n%s", got, want)
	}
}

func TestRunAllColor(t *testing.T) {
	tests := []struct {
		mode report.ColorMode
		want bool
	}{
		{report.ColorAuto, false}, // a bytes.Buffer is not a terminal
		{report.ColorNever, false},
		{report.ColorAlways, true},
	}
	for _, tt := range tests {
		t.Run(tt.mode.String(), func(t *testing.T) {
			t.Setenv("NO_COLOR", "")
			var r fakeRuns
			a, stdout, _ := testApp(t, r.fake("one", cases.GroupEvidence, true))
			a.Color = tt.mode
			if err := runAll(context.Background(), &allOptions{app: a, Group: cases.GroupEvidence, Evidence: "evidence"}); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(stdout.String(), "\x1b["); got != tt.want {
				t.Errorf("colour codes in %q: %v, want %v", stdout.String(), got, tt.want)
			}
			// The evidence file never holds colour codes.
			if out := readFile(t, filepath.Join("evidence", report.OutputFile)); strings.Contains(out, "\x1b[") {
				t.Errorf("output.txt holds colour codes: %q", out)
			}
		})
	}
}

// flaky returns a scenario that fails on the calls listed (1-based) and
// passes otherwise, recording its runs in r.
func (r *fakeRuns) flaky(name, group string, failOn ...int) scenario.Case {
	calls := 0
	return scenario.Fake(name, group, "proves "+name, func(_ context.Context, env scenario.Env) report.Line {
		r.mu.Lock()
		r.runs = append(r.runs, fakeRun{name, env})
		r.mu.Unlock()
		calls++
		return report.Line{Name: name, Verdict: report.PassIf(!slices.Contains(failOn, calls))}
	})
}

func TestRunAllCount(t *testing.T) {
	tests := []struct {
		name        string
		count       int
		evidence    string
		evidenceSet bool
		failOn      []int // calls of "two" that fail
		wantRuns    int   // scenarios run
		wantCode    int
		wantOut     string
		wantErr     string // substring of stderr
	}{
		{
			name: "count 1 prints no table", count: 1, evidence: "evidence",
			wantRuns: 2, wantCode: exitOK,
			wantOut: "CASE one PASS\nCASE two PASS\n2 passed, 0 failed\n",
		},
		{
			name: "every pass passes", count: 3, evidence: "ev", evidenceSet: true,
			wantRuns: 6, wantCode: exitOK,
			wantOut: "CASE one PASS\nCASE two PASS\n" +
				"CASE one PASS\nCASE two PASS\n" +
				"CASE one PASS\nCASE two PASS\n" +
				"one  3/3\n" +
				"two  3/3\n" +
				"6 passed, 0 failed\n",
		},
		{
			name: "one pass fails", count: 3, evidence: "ev", evidenceSet: true, failOn: []int{2},
			wantRuns: 6, wantCode: exitFailed,
			wantOut: "CASE one PASS\nCASE two PASS\n" +
				"CASE one PASS\nCASE two FAIL\n" +
				"CASE one PASS\nCASE two PASS\n" +
				"one  3/3\n" +
				"two  2/3  failed in run 2\n" +
				"5 passed, 1 failed\n",
		},
		{
			name: "no evidence asked for", count: 2, evidence: "", evidenceSet: true, failOn: []int{1, 2},
			wantRuns: 4, wantCode: exitFailed,
			wantOut: "CASE one PASS\nCASE two FAIL\n" +
				"CASE one PASS\nCASE two FAIL\n" +
				"one  2/2\n" +
				"two  0/2  failed in runs 1, 2\n" +
				"2 passed, 2 failed\n",
		},
		{
			name: "default evidence directory refused", count: 2, evidence: "evidence",
			wantRuns: 0, wantCode: exitError,
			wantErr: `rpcbench: --count 2 would replace evidence/ with 2 runs; name the directory with --evidence DIR, or --evidence "" to write none`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r fakeRuns
			a, stdout, stderr := testApp(t, r.fake("one", cases.GroupEvidence, true), r.flaky("two", cases.GroupEvidence, tt.failOn...))
			err := runAll(context.Background(), &allOptions{app: a, Group: cases.GroupEvidence, Count: tt.count,
				Evidence: tt.evidence, EvidenceSet: tt.evidenceSet, JSON: "results.json"})
			code, errText := outcome(err, stderr)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d (stderr %s)", code, tt.wantCode, errText)
			}
			if got := len(r.names()); got != tt.wantRuns {
				t.Errorf("ran %d scenarios %v, want %d", got, r.names(), tt.wantRuns)
			}
			if diff := cmp.Diff(tt.wantOut, stdout.String()); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if !strings.Contains(errText, tt.wantErr) {
				t.Errorf("stderr =\n%s\nwant it to contain %q", errText, tt.wantErr)
			}
			if got, want := strings.Count(errText, "# run "), tt.count; tt.count > 1 && tt.wantRuns > 0 && got != want {
				t.Errorf("stderr has %d progress lines, want %d:\n%s", got, want, errText)
			}
			if code == exitError {
				if entries, _ := os.ReadDir("."); len(entries) != 0 {
					t.Errorf("a refused run wrote %v", entries)
				}
				return
			}
			// The evidence holds exactly what stdout showed; nothing
			// else is written when there is none.
			if tt.evidence != "" {
				if got := readFile(t, filepath.Join(tt.evidence, report.OutputFile)); got != tt.wantOut {
					t.Errorf("output.txt =\n%s\nwant what stdout showed:\n%s", got, tt.wantOut)
				}
			} else if entries, _ := os.ReadDir("."); len(entries) != 1 {
				t.Errorf("wrote %v, want only results.json", entries)
			}
		})
	}
}

// TestRunAllCountProgress checks that "# run K/N" precedes the CASE lines
// of pass K when stdout and stderr are one terminal.
func TestRunAllCountProgress(t *testing.T) {
	var r fakeRuns
	a, both, _ := testApp(t, r.fake("one", cases.GroupEvidence, true), r.fake("two", cases.GroupEvidence, true))
	a.Err = both
	err := runAll(context.Background(), &allOptions{app: a, Group: cases.GroupEvidence, Count: 2, Evidence: "", EvidenceSet: true})
	if err != nil {
		t.Fatal(err)
	}
	want := "rpcbench: running 2 scenarios of group evidence 2 times, no evidence written\n" +
		"# run 1/2\nCASE one PASS\nCASE two PASS\n" +
		"# run 2/2\nCASE one PASS\nCASE two PASS\n" +
		"one  2/2\ntwo  2/2\n4 passed, 0 failed\n"
	if diff := cmp.Diff(want, both.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

func TestRunAllCountJSON(t *testing.T) {
	var r fakeRuns
	a, _, stderr := testApp(t, r.fake("one", cases.GroupEvidence, true), r.flaky("two", cases.GroupEvidence, 2))
	err := runAll(context.Background(), &allOptions{app: a, Group: cases.GroupEvidence, Count: 3, Evidence: "", EvidenceSet: true, JSON: "results.json"})
	if code, errText := outcome(err, stderr); code != exitFailed {
		t.Fatalf("exit code %d, want %d; stderr %s", code, exitFailed, errText)
	}
	type count struct {
		Name       string `json:"name"`
		Runs       int    `json:"runs"`
		Passed     int    `json:"passed"`
		FailedRuns []int  `json:"failed_runs"`
	}
	var results struct {
		Cases   []struct{ Name string } `json:"cases"`
		PerCase []count                 `json:"per_case"`
		Summary string                  `json:"summary"`
	}
	if err := json.Unmarshal([]byte(readFile(t, "results.json")), &results); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	if len(results.Cases) != 6 || results.Summary != "5 passed, 1 failed" {
		t.Errorf("results.json holds %d cases and summary %q, want 6 and \"5 passed, 1 failed\"", len(results.Cases), results.Summary)
	}
	want := []count{{"one", 3, 3, []int{}}, {"two", 3, 2, []int{2}}}
	if diff := cmp.Diff(want, results.PerCase); diff != "" {
		t.Errorf("per_case (-want +got):\n%s", diff)
	}
}

// TestRunAllCountInterrupted interrupts the second of three passes: the
// run stops once the current scenario returns, records what ran and exits
// 130.
func TestRunAllCountInterrupted(t *testing.T) {
	var r fakeRuns
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	interrupting := scenario.Fake("two", cases.GroupEvidence, "proves two", func(ctx context.Context, env scenario.Env) report.Line {
		if calls++; calls < 2 {
			return report.Line{Name: "two", Verdict: report.Pass}
		}
		cancel() // as SIGINT would, while the scenario runs
		<-ctx.Done()
		return report.Line{Name: "two", Verdict: report.Interrupted, Fields: []report.Field{{Key: "why", Value: "interrupted: " + ctx.Err().Error()}}}
	})
	a, stdout, stderr := testApp(t, r.fake("one", cases.GroupEvidence, true), interrupting, r.fake("three", cases.GroupEvidence, true))

	err := runAll(ctx, &allOptions{app: a, Group: cases.GroupEvidence, Count: 3, Evidence: "ev", EvidenceSet: true})
	code, errText := outcome(err, stderr)
	if code != exitInterrupted {
		t.Errorf("exit code %d, want %d", code, exitInterrupted)
	}
	if diff := cmp.Diff([]string{"one", "three", "one"}, r.names()); diff != "" {
		t.Errorf("fakes run (-want +got):\n%s", diff)
	}
	if !strings.Contains(errText, "in run 2/3; 4 of 9 scenarios not run") {
		t.Errorf("stderr %q does not say where the run stopped", errText)
	}
	if strings.Contains(errText, "# run 3/3") {
		t.Errorf("stderr %q announces a pass that never started", errText)
	}
	want := "CASE one PASS\nCASE two PASS\nCASE three PASS\n" +
		"CASE one PASS\nCASE two INTERRUPTED why=[interrupted: context canceled]\n" +
		"one    2/2\n" +
		"two    1/2  interrupted in run 2\n" +
		"three  1/1\n" +
		"4 passed, 0 failed, 1 interrupted\n"
	if diff := cmp.Diff(want, stdout.String()); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
	checkPartial(t, "ev", errText, want)
}

// TestNoServerRunsWithoutBinary: scenarios that start no server run
// without an rpcserver binary; one more that does start one is refused
// as before.
func TestNoServerRunsWithoutBinary(t *testing.T) {
	var r fakeRuns
	inProcess := r.fake("model", cases.GroupEvidence, true)
	inProcess.NoServer = true
	a, _, stderr := testApp(t, inProcess, r.fake("served", cases.GroupEvidence, true))
	empty := t.TempDir()
	a.Executable = func() (string, error) { return filepath.Join(empty, "rpcbench"), nil }
	if code, errText := outcome(runRun(context.Background(), &runOptions{app: a, Names: []string{"model"}}), stderr); code != exitOK {
		t.Fatalf("run model: exit %d, %s", code, errText)
	}
	if code, errText := outcome(runRun(context.Background(), &runOptions{app: a, Names: []string{"model", "served"}}), stderr); code != exitError || !strings.Contains(errText, "rpcserver not found") {
		t.Errorf("run model served: exit %d, %s; want %d, rpcserver not found", code, errText, exitError)
	}
	if got := r.names(); !slices.Equal(got, []string{"model"}) {
		t.Errorf("ran %v, want [model]", got)
	}
}

// TestExitByVerdict: a run exits 0 when every observation agreed with its
// pins (passes, findings, n/a) and 1 when a scenario failed or ended in
// ERROR; the findings and n/a are counted apart from the passes and named
// above the summary.
func TestExitByVerdict(t *testing.T) {
	tests := []struct {
		verdict  report.Verdict
		wantCode int
		wantSum  string
		wantNote string
	}{
		{report.Pass, exitOK, "2 passed, 0 failed", ""},
		{report.Finding, exitOK, "1 passed, 0 failed, 1 finding", "rpcbench: 1 finding, pinned violations of the stacks under test, not failures: grpc_x (grpcgo_retry)"},
		{report.NotApplicable, exitOK, "1 passed, 0 failed, 1 n/a", "rpcbench: 1 n/a, not judged, not failures: 1 connect-go lacks retry_policy"},
		{report.Error, exitFailed, "1 passed, 0 failed, 1 error", ""},
		{report.Fail, exitFailed, "1 passed, 1 failed", ""},
	}
	for _, tt := range tests {
		t.Run(tt.verdict.String(), func(t *testing.T) {
			line := report.Line{Name: "grpc_x_grpcgo_retry", Verdict: tt.verdict, Fields: []report.Field{{Key: report.ScenarioKey, Value: "grpc_x"}}}
			if tt.verdict == report.NotApplicable {
				line.Fields = append(line.Fields, report.Field{Key: report.WhyKey, Value: "connect-go lacks retry_policy"})
			}
			a, stdout, stderr := testApp(t,
				scenario.Fake("one", cases.GroupEvidence, "proves one", func(context.Context, scenario.Env) report.Line {
					return report.Line{Name: "one", Verdict: report.Pass}
				}),
				scenario.Fake(line.Name, cases.GroupEvidence, "judges a stack", func(context.Context, scenario.Env) report.Line { return line }),
			)
			err := runAll(context.Background(), &allOptions{app: a, Group: cases.GroupEvidence, Evidence: ""})
			code, errText := outcome(err, stderr)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d (err %v)", code, tt.wantCode, err)
			}
			if !strings.HasSuffix(stdout.String(), "\n"+tt.wantSum+"\n") {
				t.Errorf("stdout ends %q, want the summary %q", stdout.String(), tt.wantSum)
			}
			if tt.wantNote != "" && !strings.Contains(errText, tt.wantNote+"\n") {
				t.Errorf("stderr %q lacks the note %q", errText, tt.wantNote)
			}
		})
	}
}
