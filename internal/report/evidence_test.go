package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEvidence(t *testing.T) {
	dir := t.TempDir()
	logs := filepath.Join(dir, LogsDir)
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"server-old.log", "server-old-2.log", "keep.txt"} {
		if err := os.WriteFile(filepath.Join(logs, name), []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, OutputFile), []byte("stale content that is long\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	ev, err := CreateEvidence(dir, Env{GoVersion: "go-test", Commit: "abc"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ev.LogDir(), logs; got != want {
		t.Errorf("LogDir = %q, want %q", got, want)
	}
	lines := []Line{
		{Name: "a", Pass: true, Fields: []Field{{Key: "t", Value: "1ms", Volatile: true}}},
		{Name: "b", Fields: []Field{{Key: "why", Value: "x [y] z"}}},
	}
	for _, l := range lines {
		if err := ev.Add(l); err != nil {
			t.Fatal(err)
		}
	}
	if err := ev.Close(); err != nil {
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

	left, err := os.ReadDir(logs)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{"keep.txt"}, names); diff != "" {
		t.Errorf("logs left after clearing (-want +got):\n%s", diff)
	}
}

func TestCreateEvidenceMakesDirectories(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	ev, err := CreateEvidence(dir, Env{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ev.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(ev.LogDir()); err != nil || !fi.IsDir() {
		t.Errorf("log dir %s not created: %v", ev.LogDir(), err)
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
	lines := []Line{{Name: "a", Pass: true}, {Name: "b"}, {Name: "a", Pass: true}, {Name: "b", Pass: true}}
	for _, l := range lines {
		if err := ev.Add(l); err != nil {
			t.Fatal(err)
		}
	}
	if err := ev.AddCounts(); err != nil {
		t.Fatal(err)
	}
	if err := ev.Close(); err != nil {
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
