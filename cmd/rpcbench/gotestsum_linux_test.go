package main

import (
	"bytes"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"gotest.tools/gotestsum/testjson"
)

// TestGotestsumPipeline runs the pipeline of docs/cli.md as written,
// `gotestsum --raw-command -- bin/rpcbench all --json-events -`, on the
// real binaries: gotestsum reads the command's stdout as the event
// stream and counts every line of its stderr as an error, so a green run
// must end with every scenario passed and no error. It runs a selection
// of the evidence group (the group's scenarios run in its own package's
// TestCases): enough of them for the stream's interleaving to matter.
func TestGotestsumPipeline(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the evidence group: not with -short")
	}
	rpcbench, _ := buildBinaries(t)
	t.Chdir(t.TempDir())
	var stdout, stderr bytes.Buffer
	const sel = `^(late_|retry_|negative_control_|idempotency_|unknown_|close_after|half_written|invalid_frame)`
	names, err := exec.CommandContext(t.Context(), rpcbench, "list", "--group", "evidence", "--names").Output()
	if err != nil {
		t.Fatalf("rpcbench list: %v", err)
	}
	want := 0
	for _, name := range strings.Fields(string(names)) {
		if regexp.MustCompile(sel).MatchString(name) {
			want++
		}
	}
	cmd := exec.CommandContext(t.Context(), rpcbench, "all", "--run", sel, "--evidence", "", "--json-events", "-")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	exec, err := testjson.ScanTestOutput(testjson.ScanConfig{Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		t.Fatalf("gotestsum cannot read the stream: %v", err)
	}
	if runErr != nil || len(exec.Failed()) > 0 {
		t.Fatalf("rpcbench all: %v, %d tests failed: %v", runErr, len(exec.Failed()), exec.Failed())
	}
	if n := exec.Total(); n != want || want < 8 {
		t.Errorf("gotestsum counted %d tests, want the %d of the selection", n, want)
	}
	if errs := exec.Errors(); len(errs) > 0 {
		t.Errorf("gotestsum counted %d errors on a green run, want 0:\n%s", len(errs), strings.Join(errs, "\n"))
	}
}
