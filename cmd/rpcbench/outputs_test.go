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

// TestOutputDashIsStdout: "-" names stdout for every flag that takes an
// output file: what the flag asks for is written there, and no file
// named "-" appears.
func TestOutputDashIsStdout(t *testing.T) {
	const card = "CASE a_rpcbench PASS scenario=a stack=rpcbench config=client exec_at_most_once:=holds\n" +
		"CASE a_grpcgo_default PASS scenario=a stack=grpc-go config=default version=1.85.0 exec_at_most_once:=violated\n" +
		"2 passed, 0 failed\n"
	tests := []struct {
		name string
		args []string
		// want starts stdout.
		want string
	}{
		{"run --json", []string{"run", "one", "--json", "-"}, "{"},
		{"run --junit", []string{"run", "one", "--junit", "-"}, "<?xml"},
		{"run --json-events", []string{"run", "one", "--json-events", "-"}, `{"Time":`},
		{"all --json", []string{"all", "--evidence", "", "--json", "-"}, "{"},
		{"report -o", []string{"report", "-o", "-"}, "<!DOCTYPE html>"},
		{"scorecard --json", []string{"scorecard", "--json", "-"}, "{\n  \"columns\""},
		{"scorecard --markdown", []string{"scorecard", "--markdown", "-"}, "**grpc-go 1.85.0**\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r fakeRuns
			a, stdout, _ := testApp(t, r.fake("one", cases.GroupEvidence, true))
			writeTree(t, map[string]string{"evidence/output.txt": "CASE one PASS\n1 passed, 0 failed\n", "evidence/grpc/output.txt": card})
			if code, errText := command(a, tt.args...); code != exitOK {
				t.Fatalf("exit code %d, want %d; stderr %s", code, exitOK, errText)
			}
			if _, err := os.Stat("-"); err == nil {
				t.Errorf("wrote a file named -")
			}
			if got := stdout.String(); !strings.HasPrefix(got, tt.want) {
				t.Errorf("stdout starts %q, want %q", got[:min(len(got), 80)], tt.want)
			}
		})
	}
}

// TestScorecardBothOnStdout: --json - and --markdown - together is a
// usage error, before anything is written.
func TestScorecardBothOnStdout(t *testing.T) {
	a, stdout, _ := testApp(t)
	code, errText := command(a, "scorecard", "--json", "-", "--markdown", "-")
	if code != exitError || !strings.Contains(errText, "would both write to stdout") {
		t.Errorf("exit %d, stderr %q; want %d and 'would both write to stdout'", code, errText, exitError)
	}
	if stdout.Len() > 0 {
		t.Errorf("stdout %q, want nothing", stdout.String())
	}
}
