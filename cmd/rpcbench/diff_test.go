package main

import (
	"context"
	"encoding/json"
	"flag"
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
			[]string{"\nalpha: calls 400 -> 401\n1 of 2 cases differs\n"}},
		{"tampered bracketed value",
			strings.Replace(goodOutput, "balance=990", "balance=980", 1), exitFailed,
			[]string{"\nbeta: status [OK balance=990] -> [OK balance=980]\n"}},
		{"flipped verdict",
			strings.NewReplacer("CASE beta PASS", "CASE beta FAIL", "2 passed, 0 failed", "1 passed, 1 failed").Replace(goodOutput), exitFailed,
			[]string{"\nbeta: verdict PASS -> FAIL\n"}},
		{"interrupted",
			strings.NewReplacer("CASE beta PASS", "CASE beta INTERRUPTED", "2 passed, 0 failed", "1 passed, 0 failed, 1 interrupted").Replace(goodOutput), exitFailed,
			[]string{"\nbeta: verdict PASS -> INTERRUPTED\n"}},
		// A scenario this machine could not run is not one that passed.
		{"skipped",
			strings.NewReplacer("CASE beta PASS status=[OK balance=990] log~=[a1 TIMEOUT backoff=23ms]", "CASE beta SKIP why=[nethost: not root]",
				"2 passed, 0 failed", "1 passed, 0 failed, 1 skipped").Replace(goodOutput), exitFailed,
			[]string{"\nbeta: verdict PASS -> SKIP (why=[nethost: not root])\n1 of 2 cases differs\n"}},
		// The case: serverDebitExec=200 -> serverDebitExec~=999
		// was "no differences".
		{"stable field turned volatile",
			strings.Replace(goodOutput, "calls=400", "calls~=999", 1), exitFailed,
			[]string{"\nalpha: field calls recorded -> volatile (=400 -> ~=999)\n"}},
		{"recorded field now asserted",
			strings.Replace(goodOutput, "calls=400", "calls==400", 1), exitFailed,
			[]string{"\nalpha: field calls recorded -> asserted (=400 -> ==400)\n"}},
		{"bound added",
			strings.Replace(goodOutput, "elapsed~=12ms", "elapsed~=12ms elapsed<=100ms", 1), exitFailed,
			[]string{"\nalpha: field elapsed appeared (<=100ms)\n"}},
		{"missing case",
			"CASE alpha PASS calls=400 elapsed~=12ms\n1 passed, 0 failed\n", exitFailed,
			[]string{"\nbeta: only in old run (PASS)\n"}},
		{"added case",
			goodOutput + "CASE gamma PASS\n", exitFailed, []string{"\ngamma: only in new run (PASS)\n", "1 of 3 cases differs\n"}},
		{"captured with --color always",
			strings.NewReplacer(" PASS ", " \x1b[32mPASS\x1b[0m ").Replace(goodOutput), exitOK, []string{"no differences (2 cases compared)"}},
		{"malformed case line",
			"CASE alpha PASS calls=[400\n", exitError, nil},
		// Another group's run shares no case: "2 of 4 cases differ"
		// would hide that nothing was compared.
		{"another group's run",
			"CASE gamma PASS\nCASE delta PASS\n2 passed, 0 failed\n", exitError, nil},
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
			for _, want := range tt.wantOut {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("stdout =\n%s\nwant it to contain %q", stdout, want)
				}
			}
		})
	}
}

// TestRunDiffWarns: a run with no summary line after its last CASE line
// (one that never finished, a file cut short) is compared all the same,
// with a warning naming it; a run that shares no case with the other is
// refused, naming both.
func TestRunDiffWarns(t *testing.T) {
	for _, tt := range []struct {
		name, new string
		wantCode  int
		wantErr   string
	}{
		{"cut short", "CASE alpha PASS calls=400 elapsed~=1ms\n", exitFailed, "new.txt has no summary line after its last CASE line"},
		{"whole", goodOutput, exitOK, ""},
		{"another group", "CASE gamma PASS\n1 passed, 0 failed\n", exitError, "have no case in common"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, _, stderr := testApp(t)
			old := writeFile(t, "old.txt", goodOutput)
			new := writeFile(t, "new.txt", tt.new)
			code, errText := outcome(runDiff(context.Background(), &diffOptions{app: a, Old: old, New: new, Evidence: "evidence"}), stderr)
			if code != tt.wantCode || (tt.wantErr == "") != (errText == "") || !strings.Contains(errText, tt.wantErr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errText, tt.wantCode, tt.wantErr)
			}
		})
	}
}

// TestRunDiffVolatileNotShown: a changed case prints what changed among
// the compared fields and nothing else; its volatile fields, changed or
// not, are not repeated.
func TestRunDiffVolatileNotShown(t *testing.T) {
	a, stdout, stderr := testApp(t)
	old := writeFile(t, "old.txt", goodOutput)
	new := writeFile(t, "new.txt", strings.NewReplacer("calls=400", "calls=401", "balance=990", "balance=980", "23ms", "1ms").Replace(goodOutput))
	err := runDiff(context.Background(), &diffOptions{app: a, Old: old, New: new})
	if code, errText := outcome(err, stderr); code != exitFailed {
		t.Errorf("exit code %d, want %d (stderr %s)", code, exitFailed, errText)
	}
	want := "--- old: old.txt\n+++ new: new.txt\n" +
		"alpha: calls 400 -> 401\n" +
		"beta: status [OK balance=990] -> [OK balance=980]\n" +
		"2 of 2 cases differ\n"
	if diff := cmp.Diff(want, stdout.String()); diff != "" {
		t.Errorf("stdout mismatch (-want +got):\n%s", diff)
	}
}

// TestRunDiffCounts: the closing line agrees with its counts.
func TestRunDiffCounts(t *testing.T) {
	const one = "CASE alpha PASS n=1\n"
	tests := []struct {
		name, old, new string
		want           string // the last line of stdout
	}{
		{"one case, same", one, one, "no differences (1 case compared)"},
		{"two cases, same", one + "CASE beta PASS\n", one + "CASE beta PASS\n", "no differences (2 cases compared)"},
		{"one case, differs", one, "CASE alpha PASS n=2\n", "1 of 1 case differs"},
		{"one of two differs", one + "CASE beta PASS\n", "CASE alpha PASS n=2\nCASE beta PASS\n", "1 of 2 cases differs"},
		{"two of two differ", one + "CASE beta PASS\n", "CASE alpha PASS n=2\nCASE beta FAIL\n", "2 of 2 cases differ"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, stdout, _ := testApp(t)
			old := writeFile(t, "old.txt", tt.old)
			new := writeFile(t, "new.txt", tt.new)
			_ = runDiff(context.Background(), &diffOptions{app: a, Old: old, New: new})
			lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
			if got := lines[len(lines)-1]; got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRunDiffJSONSkip: diff --json agrees with the text on a verdict
// change to SKIP: no fields, and the text names the reason.
func TestRunDiffJSONSkip(t *testing.T) {
	a, stdout, stderr := testApp(t)
	old := writeFile(t, "old.txt", goodOutput)
	new := writeFile(t, "new.txt", strings.NewReplacer("CASE beta PASS status=[OK balance=990] log~=[a1 TIMEOUT backoff=23ms]", "CASE beta SKIP why=[nethost: not root]",
		"2 passed, 0 failed", "1 passed, 0 failed, 1 skipped").Replace(goodOutput))
	err := runDiff(context.Background(), &diffOptions{app: a, Old: old, New: new, JSON: true})
	if code, errText := outcome(err, stderr); code != exitFailed {
		t.Errorf("exit code %d, want %d (stderr %s)", code, exitFailed, errText)
	}
	type field struct {
		Key      string
		Old, New *string
	}
	type difference struct {
		Case       string
		Occurrence int
		Change     string
		Text       string
		Fields     []field
	}
	var got struct {
		Compared    int
		Differences []difference
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	want := []difference{{Case: "beta", Occurrence: 1, Change: "changed", Text: "beta: verdict PASS -> SKIP (why=[nethost: not root])", Fields: []field{}}}
	if diff := cmp.Diff(want, got.Differences); diff != "" {
		t.Errorf("differences (-want +got):\n%s", diff)
	}
}

// TestRunDiffNothingToCompare: comparing runs that hold no cases is an
// input error, not "no differences".
func TestRunDiffNothingToCompare(t *testing.T) {
	tests := []struct {
		name, old, new string
		wantErr        string
	}{
		{"two empty files", "", "", "old.txt holds no CASE lines"},
		{"two files without CASE lines", "hello\n", "0 passed, 0 failed\n", "old.txt holds no CASE lines"},
		{"new empty", goodOutput, "", "new.txt holds no CASE lines"},
		{"old empty", "", goodOutput, "old.txt holds no CASE lines"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, stdout, stderr := testApp(t)
			old := writeFile(t, "old.txt", tt.old)
			new := writeFile(t, "new.txt", tt.new)
			err := runDiff(context.Background(), &diffOptions{app: a, Old: old, New: new})
			code, errText := outcome(err, stderr)
			if code != exitError || !strings.Contains(errText, tt.wantErr) {
				t.Errorf("exit code %d, stderr %q; want %d and %q", code, errText, exitError, tt.wantErr)
			}
			if strings.Contains(stdout.String(), "no differences") {
				t.Errorf("stdout = %q, want no verdict on nothing", stdout)
			}
		})
	}
}

// TestRunDiffSummaryContradicts: an output file whose summary line does
// not count its CASE lines is refused.
func TestRunDiffSummaryContradicts(t *testing.T) {
	a, stdout, stderr := testApp(t)
	twenty := strings.Repeat("CASE a PASS n=1\n", 20)
	old := writeFile(t, "old.txt", twenty+"20 passed, 0 failed\n")
	new := writeFile(t, "new.txt", twenty+"0 passed, 20 failed\n")
	err := runDiff(context.Background(), &diffOptions{app: a, Old: old, New: new})
	code, errText := outcome(err, stderr)
	want := `new.txt: report: line 21: summary line contradicts the CASE lines: "0 passed, 20 failed"`
	if code != exitError || !strings.Contains(errText, want) {
		t.Errorf("exit code %d, stderr %q; want %d and %q", code, errText, exitError, want)
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout = %q, want nothing", stdout)
	}
}

// TestRunDiffDirectories: an evidence directory stands for its output.txt,
// and the header names the file read.
func TestRunDiffDirectories(t *testing.T) {
	a, stdout, stderr := testApp(t)
	writeFile(t, filepath.Join("old", report.OutputFile), goodOutput)
	writeFile(t, filepath.Join("new", report.OutputFile), strings.Replace(goodOutput, "calls=400", "calls=401", 1))
	err := runDiff(context.Background(), &diffOptions{app: a, Old: "old", New: "new/"})
	code, errText := outcome(err, stderr)
	if code != exitFailed {
		t.Errorf("exit code %d, want %d (stderr %s)", code, exitFailed, errText)
	}
	wantHead := "--- old: old/output.txt\n+++ new: new/output.txt\nalpha: calls 400 -> 401\n"
	if !strings.HasPrefix(stdout.String(), wantHead) {
		t.Errorf("stdout =\n%s\nwant it to start\n%s", stdout, wantHead)
	}
	// A directory without output.txt names the file it looked for.
	if err := os.Mkdir("empty", 0o755); err != nil {
		t.Fatal(err)
	}
	err = runDiff(context.Background(), &diffOptions{app: a, Old: "old", New: "empty"})
	if code, errText := outcome(err, stderr); code != exitError || !strings.Contains(errText, "empty/output.txt") {
		t.Errorf("exit code %d, stderr %q; want %d naming empty/output.txt", code, errText, exitError)
	}
}

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestRunDiffGolden pins what diff prints for every kind of difference,
// and checks that it prints the same bytes every time.
func TestRunDiffGolden(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("testdata", "diff"))
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join(dir, "diff.golden")
	run := func() string {
		a, stdout, stderr := testApp(t)
		// Relative names, so that the header does not hold the checkout's path.
		t.Chdir(dir)
		err := runDiff(context.Background(), &diffOptions{app: a, Old: "old", New: "new.txt"})
		if code, errText := outcome(err, stderr); code != exitFailed {
			t.Fatalf("exit code %d, want %d (stderr %s)", code, exitFailed, errText)
		}
		return stdout.String()
	}
	got := run()
	if again := run(); again != got {
		t.Errorf("a second diff of the same files printed other bytes:\n%q\n%q", got, again)
	}
	for i, r := range got {
		if r != '\n' && (r < ' ' || r > '~') {
			t.Errorf("byte %d of the output is %q, want plain printable ASCII", i, r)
			break
		}
	}
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v; to create it: go test ./cmd/rpcbench -run TestRunDiffGolden -update", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("diff output differs from %s (-want +got):\n%s\nIf the change is intended: go test ./cmd/rpcbench -run TestRunDiffGolden -update", golden, diff)
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
				r.fake("alpha", "evidence", true, report.Field{Key: "calls", Value: tt.alphaCalls}, report.Field{Key: "elapsed", Value: "7ms", Kind: report.Volatile}),
				r.fake("beta", "evidence", true, report.Field{Key: "status", Value: "OK balance=990"}, report.Field{Key: "log", Value: "other", Kind: report.Volatile}),
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
	if !strings.Contains(errText, "beta is not a scenario any more") || !strings.Contains(stdout.String(), "\nbeta: only in old run (PASS)\n") {
		t.Errorf("stdout %s\nstderr %s\nwant beta reported as gone", stdout, errText)
	}
	if !strings.Contains(errText, "rpcbench: running 1 scenario into ") {
		t.Errorf("stderr %s\nwant it to announce running 1 scenario", errText)
	}
}
