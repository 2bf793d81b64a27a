package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rpcbench/rpcbench/internal/cases"
	"github.com/rpcbench/rpcbench/internal/report"
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
	interrupting := cases.Fake("two", cases.GroupEvidence, "proves two", func(ctx context.Context, env cases.Env) report.Line {
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
