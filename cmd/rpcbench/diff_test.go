package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/report"
)

const goodOutput = "CASE alpha PASS calls=400 elapsed~=12ms\n" +
	"CASE beta PASS status=[OK balance=990] log~=[a1 TIMEOUT backoff=23ms]\n" +
	"2 passed, 0 failed\n"

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRunDiffFiles(t *testing.T) {
	tests := []struct {
		name     string
		new      string
		wantCode int
		wantOut  []string // substrings of stdout
	}{
		{"identical", goodOutput, exitOK, []string{"no differences (2 cases compared)"}},
		{"volatile values changed",
			strings.NewReplacer("12ms", "99ms", "23ms", "1ms").Replace(goodOutput), exitOK, []string{"no differences"}},
		{"cases reordered, summary dropped",
			"CASE beta PASS status=[OK balance=990] log~=[a1]\nCASE alpha PASS calls=400 elapsed~=1ms\n", exitOK, []string{"no differences"}},
		{"tampered stable value",
			strings.Replace(goodOutput, "calls=400", "calls=401", 1), exitFailed,
			[]string{"alpha: stable fields differ", `"400"`, `"401"`, "1 of 2 cases differ"}},
		{"tampered bracketed value",
			strings.Replace(goodOutput, "balance=990", "balance=980", 1), exitFailed,
			[]string{"beta: stable fields differ", "balance=980"}},
		{"flipped verdict",
			strings.Replace(goodOutput, "CASE beta PASS", "CASE beta FAIL", 1), exitFailed,
			[]string{"beta: PASS -> FAIL"}},
		{"missing case",
			"CASE alpha PASS calls=400 elapsed~=12ms\n1 passed, 0 failed\n", exitFailed,
			[]string{"beta: missing from new run"}},
		{"added case",
			goodOutput + "CASE gamma PASS\n", exitFailed, []string{"gamma: only in new run", "1 of 3 cases differ"}},
		{"malformed case line",
			"CASE alpha PASS calls=[400\n", exitError, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, stdout, stderr := testApp(t)
			old := writeFile(t, "old.txt", goodOutput)
			new := writeFile(t, "new.txt", tt.new)
			err := runDiff(context.Background(), &diffOptions{app: a, Old: old, New: new, Evidence: "evidence"})
			code, errText := outcome(err, stderr)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d (stderr %s)", code, tt.wantCode, errText)
			}
			// cmp.Diff may use non-breaking spaces; compare text only.
			out := strings.ReplaceAll(stdout.String(), "\u00a0", " ")
			for _, want := range tt.wantOut {
				if !strings.Contains(out, want) {
					t.Errorf("stdout =\n%s\nwant it to contain %q", out, want)
				}
			}
		})
	}
}

func TestRunDiffMalformedNamesLine(t *testing.T) {
	a, _, stderr := testApp(t)
	old := writeFile(t, "old.txt", goodOutput)
	bad := writeFile(t, "bad.txt", "CASE alpha PASS\n\nCASE beta MAYBE\n")
	err := runDiff(context.Background(), &diffOptions{app: a, Old: old, New: bad})
	code, errText := outcome(err, stderr)
	if code != exitError || !strings.Contains(errText, "bad.txt: report: line 3") {
		t.Errorf("exit code %d, stderr %q; want %d and the file and line named", code, errText, exitError)
	}
}

func TestRunDiffMissingOld(t *testing.T) {
	a, _, stderr := testApp(t)
	err := runDiff(context.Background(), &diffOptions{app: a, Evidence: "evidence"})
	code, errText := outcome(err, stderr)
	if code != exitError || !strings.Contains(errText, "evidence/output.txt") || !strings.Contains(errText, "rpcbench all") {
		t.Errorf("exit code %d, stderr %q; want %d, naming the file and how to make it", code, errText, exitError)
	}
}

// TestRunDiffFreshRun compares the evidence with a fresh run of the cases
// it names: the fakes reproduce it, or one of them has drifted.
func TestRunDiffFreshRun(t *testing.T) {
	tests := []struct {
		name       string
		alphaCalls string
		wantCode   int
	}{
		{"reproduced", "400", exitOK},
		{"drifted", "399", exitFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r fakeRuns
			a, stdout, stderr := testApp(t,
				r.fake("alpha", "evidence", true, report.Field{Key: "calls", Value: tt.alphaCalls}, report.Field{Key: "elapsed", Value: "7ms", Volatile: true}),
				r.fake("beta", "evidence", true, report.Field{Key: "status", Value: "OK balance=990"}, report.Field{Key: "log", Value: "other", Volatile: true}),
				r.fake("unrelated", "evidence", true),
			)
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			evidence := writeFile(t, filepath.Join("evidence", report.OutputFile), goodOutput)

			err := runDiff(context.Background(), &diffOptions{app: a, Evidence: "evidence"})
			code, errText := outcome(err, stderr)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d\nstdout %s\nstderr %s", code, tt.wantCode, stdout, errText)
			}
			if diff := cmp.Diff([]string{"alpha", "beta"}, r.names()); diff != "" {
				t.Errorf("scenarios run (-want +got):\n%s", diff)
			}
			if got := readFile(t, evidence); got != goodOutput {
				t.Errorf("diff rewrote %s:\n%s", evidence, got)
			}
			if strings.Contains(stdout.String(), "CASE alpha") && tt.wantCode == exitOK {
				t.Errorf("the fresh run's lines went to stdout, want them on stderr:\n%s", stdout)
			}
			// The fresh run's directory is kept only when the runs differ.
			kept, _ := os.ReadDir(tmp)
			if want := tt.wantCode == exitFailed; (len(kept) == 1) != want {
				t.Errorf("temporary directories left: %v; want one kept: %v", kept, want)
			}
			if tt.wantCode == exitFailed && !strings.Contains(errText, "kept in "+filepath.Join(tmp, kept[0].Name())) {
				t.Errorf("stderr %q does not name the kept directory", errText)
			}
		})
	}
}

func TestRunDiffFreshRunUnknownCase(t *testing.T) {
	var r fakeRuns
	a, stdout, stderr := testApp(t, r.fake("alpha", "evidence", true, report.Field{Key: "calls", Value: "400"}))
	t.Setenv("TMPDIR", t.TempDir())
	writeFile(t, filepath.Join("evidence", report.OutputFile), goodOutput)
	err := runDiff(context.Background(), &diffOptions{app: a, Evidence: "evidence"})
	code, errText := outcome(err, stderr)
	if code != exitFailed {
		t.Errorf("exit code %d, want %d", code, exitFailed)
	}
	if !strings.Contains(errText, "beta is not a scenario any more") || !strings.Contains(stdout.String(), "beta: missing from new run") {
		t.Errorf("stdout %s\nstderr %s\nwant beta reported as gone", stdout, errText)
	}
}
