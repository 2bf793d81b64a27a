package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rpcbench/rpcbench/internal/cases"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/scenario"
)

// command runs rpcbench with args over a's scenarios and returns the exit
// code and stderr, as main would.
func command(a *app, args ...string) (int, string) {
	root := newRootCmd(a)
	root.SetArgs(args)
	root.SetOut(a.Out)
	root.SetErr(a.Err)
	err := root.ExecuteContext(context.Background())
	return outcome(err, a.Err.(*bytes.Buffer))
}

func TestAllDefaultEvidencePerGroup(t *testing.T) {
	var r fakeRuns
	a, _, _ := testApp(t, r.fake("e", cases.GroupEvidence, true), r.fake("h", cases.GroupRobustness, true))
	writeTree(t, map[string]string{"evidence/output.txt": "the evidence group's\n", "evidence/logs/server-e.log": "kept"})
	if code, errText := command(a, "all", "--group", cases.GroupRobustness); code != exitOK {
		t.Fatalf("exit %d: %s", code, errText)
	}
	if got := readFile(t, "evidence/output.txt"); got != "the evidence group's\n" {
		t.Errorf("evidence/output.txt = %q: the robustness run replaced the evidence group's", got)
	}
	if got := readFile(t, "evidence/logs/server-e.log"); got != "kept" {
		t.Errorf("evidence/logs/server-e.log = %q", got)
	}
	if got := readFile(t, filepath.Join("evidence", cases.GroupRobustness, report.OutputFile)); got != "CASE h PASS\n1 passed, 0 failed\n" {
		t.Errorf("evidence/robustness/output.txt = %q", got)
	}
}

// TestAllRefusedBeforeRunning: what cannot run, or cannot be written, is
// a usage error (exit 2) before any scenario runs.
func TestAllRefusedBeforeRunning(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		setup func(t *testing.T)
		want  string
	}{
		{"count overflows", []string{"all", "--count", "461168601842738791", "--evidence", ""}, nil, "--count"},
		{"json unwritable", []string{"all", "--json", "no/such/dir/x.json", "--evidence", ""}, nil, "--json no/such/dir/x.json"},
		{"temporary directory missing", []string{"all", "--evidence", ""}, func(t *testing.T) { t.Setenv("TMPDIR", "/nonexistent/rpcbench") }, "TMPDIR"},
		{"evidence directory in use", []string{"all"}, func(t *testing.T) {
			held, err := report.CreateEvidence("evidence", report.Env{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { held.Abandon() })
		}, "in use by another run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r fakeRuns
			a, _, _ := testApp(t, r.fake("one", cases.GroupEvidence, true))
			if tt.setup != nil {
				tt.setup(t)
			}
			code, errText := command(a, tt.args...)
			if code != exitError {
				t.Errorf("exit code %d, want %d; stderr %s", code, exitError, errText)
			}
			if !strings.Contains(errText, tt.want) {
				t.Errorf("stderr %q does not mention %q", errText, tt.want)
			}
			if len(r.runs) != 0 {
				t.Errorf("ran %v", r.names())
			}
		})
	}
}

// TestAllJSONStdout: --json - puts the JSON on stdout, alone, and the CASE
// lines on stderr.
func TestAllJSONStdout(t *testing.T) {
	var r fakeRuns
	a, stdout, stderr := testApp(t, r.fake("one", cases.GroupEvidence, true))
	if code, errText := command(a, "all", "--json", "-", "--evidence", ""); code != exitOK {
		t.Fatalf("exit %d: %s", code, errText)
	}
	var v map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &v); err != nil {
		t.Errorf("stdout is not one JSON document: %v\n%s", err, stdout)
	}
	if !strings.Contains(stderr.String(), "CASE one PASS") {
		t.Errorf("stderr %q lacks the CASE line", stderr)
	}
}

// TestAllInterruptedKeepsEvidence: an interrupted run leaves the previous
// evidence exactly as it was.
func TestAllInterruptedKeepsEvidence(t *testing.T) {
	var r fakeRuns
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	interrupting := scenario.Fake("two", cases.GroupEvidence, "proves two", func(ctx context.Context, env scenario.Env) report.Line {
		cancel()
		<-ctx.Done()
		return report.Line{Name: "two", Fields: []report.Field{{Key: "why", Value: "interrupted"}}}
	})
	a, _, stderr := testApp(t, r.fake("one", cases.GroupEvidence, true), interrupting)
	old := map[string]string{"evidence/output.txt": "complete\n", "evidence/env.txt": "env\n", "evidence/logs/server-one.log": "old log"}
	writeTree(t, old)
	err := runAll(ctx, &allOptions{app: a, Group: cases.GroupEvidence, Evidence: "evidence"})
	if code, _ := outcome(err, stderr); code != exitInterrupted {
		t.Errorf("exit code %d, want %d", code, exitInterrupted)
	}
	for name, content := range old {
		if got := readFile(t, name); got != content {
			t.Errorf("%s = %q after an interrupted run, want %q", name, got, content)
		}
	}
}

func writeTree(t *testing.T, files map[string]string) {
	t.Helper()
	for name, content := range files {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAllSelectionKeepsEvidence: --run or --skip that leaves part of the
// group must not replace the group's evidence unless --evidence names
// where it goes; a selection that leaves the whole group may.
func TestAllSelectionKeepsEvidence(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		code    int
		ran     []string
		written string // the evidence directory the run wrote, "" for none
	}{
		{"run selects part", []string{"all", "--run", "^late"}, exitError, nil, ""},
		{"skip leaves part", []string{"all", "--skip", "late"}, exitError, nil, ""},
		{"part, no evidence", []string{"all", "--run", "^late", "--evidence", ""}, exitOK, []string{"late_a"}, ""},
		{"part, named evidence", []string{"all", "--run", "^late", "--evidence", "ev"}, exitOK, []string{"late_a"}, "ev"},
		{"selection of the whole group", []string{"all", "--run", "_"}, exitOK, []string{"late_a", "normal_b"}, "evidence"},
		{"group all writes none by default", []string{"all", "--group", "all", "--run", "^late"}, exitOK, []string{"late_a"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r fakeRuns
			a, _, _ := testApp(t, r.fake("late_a", cases.GroupEvidence, true), r.fake("normal_b", cases.GroupEvidence, true), r.fake("h", cases.GroupRobustness, true))
			old := "an earlier run of the whole group\n"
			writeTree(t, map[string]string{"evidence/output.txt": old})
			code, errText := command(a, tt.args...)
			if code != tt.code {
				t.Fatalf("exit code %d, want %d; stderr %s", code, tt.code, errText)
			}
			if code == exitError && !strings.Contains(errText, "--evidence DIR") {
				t.Errorf("stderr %q does not say how to run it", errText)
			}
			if got := r.names(); !slices.Equal(got, tt.ran) {
				t.Errorf("ran %v, want %v", got, tt.ran)
			}
			if got := readFile(t, "evidence/output.txt"); (got != old) != (tt.written == "evidence") {
				t.Errorf("evidence/output.txt = %q, want it replaced: %v", got, tt.written == "evidence")
			}
			_, err := os.Stat(filepath.Join("ev", report.OutputFile))
			if (err == nil) != (tt.written == "ev") {
				t.Errorf("ev/output.txt: %v, want it written: %v", err, tt.written == "ev")
			}
			if _, err := os.Stat(filepath.Join("evidence", scenario.GroupAll)); err == nil {
				t.Errorf("evidence/all was written")
			}
		})
	}
}

// TestEvidencePrunesEarlierRuns: the temporary directory an interrupted
// run left in the evidence directory is removed by the next run there.
func TestEvidencePrunesEarlierRuns(t *testing.T) {
	var r fakeRuns
	a, _, _ := testApp(t, r.fake("one", cases.GroupEvidence, true))
	writeTree(t, map[string]string{"evidence/" + report.RunPrefix + "123/output.txt": "CASE one INTERRUPTED\n"})
	if code, errText := command(a, "all"); code != exitOK {
		t.Fatalf("exit %d: %s", code, errText)
	}
	if left, _ := filepath.Glob(filepath.Join("evidence", report.RunPrefix+"*")); len(left) > 0 {
		t.Errorf("left behind %v", left)
	}
}

// TestEvidenceErrorsSayWhatToDo: an evidence directory that cannot be
// written is named, with the flag that sends the evidence elsewhere, in
// words of the command rather than of an inner package.
func TestEvidenceErrorsSayWhatToDo(t *testing.T) {
	var r fakeRuns
	a, _, _ := testApp(t, r.fake("one", cases.GroupEvidence, true))
	held, err := report.CreateEvidence("evidence", report.Env{})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Discard()
	code, errText := command(a, "all")
	want := `rpcbench: evidence directory evidence is in use by another run; wait for it to finish, or name another with --evidence DIR, or --evidence "" to write none`
	if code != exitError || strings.TrimSpace(errText) != want {
		t.Errorf("exit %d, stderr %q; want %d, %q", code, errText, exitError, want)
	}
	if err := os.WriteFile("file", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	a.Err.(*bytes.Buffer).Reset()
	code, errText = command(a, "all", "--evidence", "file/ev")
	if code != exitError || !strings.Contains(errText, "evidence directory file/ev cannot be written") || !strings.Contains(errText, "--evidence DIR") {
		t.Errorf("exit %d, stderr %q", code, errText)
	}
}
