package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rpcbench/rpcbench/internal/cases"
)

// TestOutputPathsCheckedFirst: an output path that cannot be written is
// a usage error naming the path as typed, before any scenario runs, and
// leaves no temporary file behind.
func TestOutputPathsCheckedFirst(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"json is a directory", []string{"run", "one", "--json", "somedir"}, "--json somedir: is a directory"},
		{"junit is a directory", []string{"run", "one", "--junit", "somedir"}, "--junit somedir: is a directory"},
		{"events is a directory", []string{"all", "--json-events", "somedir", "--evidence", ""}, "--json-events somedir: is a directory"},
		{"json in a missing directory", []string{"all", "--json", "no/such/r.json", "--evidence", ""}, "--json no/such/r.json: directory no/such does not exist"},
		{"json fine, junit a directory", []string{"run", "one", "--json", "ok.json", "--junit", "somedir"}, "--junit somedir: is a directory"},
		{"json and junit on one file", []string{"run", "one", "--json", "r.out", "--junit", "./r.out"}, "--json and --junit both name r.out"},
		{"json and events on one file", []string{"run", "one", "--json", "r.out", "--json-events", "r.out"}, "--json and --json-events both name r.out"},
		{"junit and events on one file", []string{"all", "--evidence", "", "--junit", "r.out", "--json-events", "r.out"}, "--junit and --json-events both name r.out"},
		{"json is the evidence's output.txt", []string{"all", "--evidence", "ev", "--json", "ev/output.txt"}, "--json ev/output.txt: inside the evidence directory ev"},
		{"negative timeout", []string{"all", "--evidence", "", "--timeout", "-1s"}, "--timeout -1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r fakeRuns
			a, _, _ := testApp(t, r.fake("one", cases.GroupEvidence, true))
			if err := os.Mkdir("somedir", 0o755); err != nil {
				t.Fatal(err)
			}
			code, errText := command(a, tt.args...)
			if code != exitError {
				t.Errorf("exit code %d, want %d; stderr %s", code, exitError, errText)
			}
			if !strings.Contains(errText, tt.want) {
				t.Errorf("stderr %q, want it to say %q", errText, tt.want)
			}
			if len(r.runs) != 0 {
				t.Errorf("ran %v before refusing", r.names())
			}
			if strings.Contains(errText, "rpcbench: running") {
				t.Errorf("announced a run it then refused: %q", errText)
			}
			left, _ := filepath.Glob(".*tmp*")
			if _, err := os.Stat("ok.json"); err == nil {
				left = append(left, "ok.json")
			}
			more, _ := filepath.Glob("somedir/.*")
			if left = append(left, more...); len(left) > 0 {
				t.Errorf("left behind %v", left)
			}
		})
	}
}

// TestReportOutputIsADirectory: report -o DIR says so and puts no
// temporary file in DIR's parent.
func TestReportOutputIsADirectory(t *testing.T) {
	var r fakeRuns
	a, _, _ := testApp(t, r.fake("one", cases.GroupEvidence, true))
	writeTree(t, map[string]string{"evidence/output.txt": "CASE one PASS\n1 passed, 0 failed\n"})
	if err := os.Mkdir("out", 0o755); err != nil {
		t.Fatal(err)
	}
	code, errText := command(a, "report", "-o", "out")
	if code != exitError || !strings.Contains(errText, "out: is a directory") {
		t.Errorf("exit %d, stderr %q; want %d and 'out: is a directory'", code, errText, exitError)
	}
	if left, _ := filepath.Glob(".*tmp*"); len(left) > 0 {
		t.Errorf("left behind %v", left)
	}
}
