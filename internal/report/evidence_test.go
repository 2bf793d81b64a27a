package report

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// listDir returns the names in dir, sorted.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestEvidenceCommit(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		OutputFile:              "old output\n",
		"logs/server-old.log":   "old",
		"LIMITS.md":             "kept",
		"robustness/output.txt": "kept too",
	})
	ev, err := CreateEvidence(dir, Env{GoVersion: "go-test", Commit: "abc"})
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, ev.LogDir(), map[string]string{"server-a.log": "new"})
	lines := []Line{
		{Name: "a", Verdict: Pass, Fields: []Field{{Key: "t", Value: "1ms", Kind: Volatile}}},
		{Name: "b", Fields: []Field{{Key: "why", Value: "x [y] z"}}},
	}
	for _, l := range lines {
		if err := ev.Add(l); err != nil {
			t.Fatal(err)
		}
	}
	// Until Commit, the directory still holds the previous evidence.
	if b, _ := os.ReadFile(filepath.Join(dir, OutputFile)); string(b) != "old output\n" {
		t.Errorf("output.txt before Commit = %q, want the old one", b)
	}
	if err := ev.Commit(); err != nil {
		t.Fatal(err)
	}

	out, err := os.ReadFile(filepath.Join(dir, OutputFile))
	if err != nil {
		t.Fatal(err)
	}
	wantOut := "CASE a PASS t~=1ms\nCASE b FAIL why=[x [y] z]\n1 passed, 1 failed\n"
	if string(out) != wantOut {
		t.Errorf("output.txt =\n%s\nwant\n%s", out, wantOut)
	}
	back, err := ReadOutput(strings.NewReader(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(lines, back); diff != "" {
		t.Errorf("ReadOutput(output.txt) mismatch (-want +got):\n%s", diff)
	}
	env, err := os.ReadFile(filepath.Join(dir, EnvFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(env), "go: go-test\n") || !strings.Contains(string(env), "commit: abc\n") {
		t.Errorf("env.txt =\n%s\nwant the Env passed in", env)
	}
	if diff := cmp.Diff([]string{"a.logs"}, listDir(t, filepath.Join(dir, LogsDir))); diff != "" {
		t.Errorf("logs/ after Commit (-want +got):\n%s", diff)
	}
	if logs, err := ReadLogs(filepath.Join(dir, LogsDir)); err != nil || len(logs) != 1 || logs["server-a.log"] == nil {
		t.Errorf("ReadLogs after Commit = %q, %v; want server-a.log alone", logs, err)
	}
	// Nothing else in the directory was touched, and no run directory
	// is left behind.
	if diff := cmp.Diff([]string{LockFile, "LIMITS.md", EnvFile, LogsDir, OutputFile, "robustness"}, listDir(t, dir)); diff != "" {
		t.Errorf("evidence directory after Commit (-want +got):\n%s", diff)
	}
}

// TestEvidenceAbandon: a run that does not complete leaves the previous
// evidence exactly as it was, and its own output where Abandon says.
func TestEvidenceAbandon(t *testing.T) {
	dir := t.TempDir()
	old := map[string]string{OutputFile: "old output\n", EnvFile: "old env\n", "logs/server-old.log": "old"}
	writeFiles(t, dir, old)
	ev, err := CreateEvidence(dir, Env{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ev.Add(Line{Name: "a", Verdict: Pass}); err != nil {
		t.Fatal(err)
	}
	partial, err := ev.Abandon()
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range old {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != content {
			t.Errorf("%s after Abandon = %q, %v; want %q untouched", name, b, err, content)
		}
	}
	b, err := os.ReadFile(filepath.Join(partial, OutputFile))
	if err != nil || string(b) != "CASE a PASS\n1 passed, 0 failed\n" {
		t.Errorf("partial output = %q, %v", b, err)
	}
}

// TestEvidenceLocked: a second run on the same directory is refused while
// the first holds it, and allowed once it is done.
func TestEvidenceLocked(t *testing.T) {
	dir := t.TempDir()
	first, err := CreateEvidence(dir, Env{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CreateEvidence(dir, Env{}); !errors.Is(err, ErrLocked) {
		t.Errorf("second CreateEvidence while the first runs: %v, want %v", err, ErrLocked)
	}
	if err := first.Commit(); err != nil {
		t.Fatal(err)
	}
	second, err := CreateEvidence(dir, Env{})
	if err != nil {
		t.Fatalf("CreateEvidence after the first committed: %v", err)
	}
	if _, err := second.Abandon(); err != nil {
		t.Fatal(err)
	}
}

func TestCreateEvidenceMakesDirectories(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	ev, err := CreateEvidence(dir, Env{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ev.Commit(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, LogsDir)); err != nil || !fi.IsDir() {
		t.Errorf("logs/ not created: %v", err)
	}
	out, err := os.ReadFile(filepath.Join(dir, OutputFile))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), "0 passed, 0 failed\n"; got != want {
		t.Errorf("output.txt = %q, want %q", got, want)
	}
}

func TestEvidenceAddCounts(t *testing.T) {
	dir := t.TempDir()
	ev, err := CreateEvidence(dir, Env{})
	if err != nil {
		t.Fatal(err)
	}
	lines := []Line{{Name: "a", Verdict: Pass}, {Name: "b"}, {Name: "a", Verdict: Pass}, {Name: "b", Verdict: Pass}}
	for _, l := range lines {
		if err := ev.Add(l); err != nil {
			t.Fatal(err)
		}
	}
	if err := ev.AddCounts(); err != nil {
		t.Fatal(err)
	}
	if err := ev.Commit(); err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(filepath.Join(dir, OutputFile))
	if err != nil {
		t.Fatal(err)
	}
	want := "CASE a PASS\nCASE b FAIL\nCASE a PASS\nCASE b PASS\n" +
		"a  2/2\n" +
		"b  1/2  failed in run 1\n" +
		"3 passed, 1 failed\n"
	if diff := cmp.Diff(want, string(out)); diff != "" {
		t.Errorf("output.txt mismatch (-want +got):\n%s", diff)
	}
	back, err := ReadOutput(strings.NewReader(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(lines, back); diff != "" {
		t.Errorf("ReadOutput(output.txt) mismatch (-want +got):\n%s", diff)
	}
}
