package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/rpcbench/rpcbench/internal/report"
)

// TestClosedStdoutCleansUp: `rpcbench all ... | head -1` ends the run
// once its reader has gone, as an interrupt would (exit 141, 128 plus
// SIGPIPE), and leaves neither the evidence directory's temporary run
// nor the temporary log directory behind.
func TestClosedStdoutCleansUp(t *testing.T) {
	t.Parallel()
	rpcbench, _ := buildBinaries(t)
	// Three scenarios that each start a server: the reader leaves after
	// the first line.
	sel := "^(normal_multiplex|late_response_dropped_by_id|retry_with_idempotency_key)$"
	tests := []struct {
		name string
		args []string
	}{
		{"evidence", []string{"all", "--run", sel, "--evidence", "ev"}},
		{"events on stdout", []string{"all", "--run", sel, "--evidence", "", "--json-events", "-"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tmp := filepath.Join(dir, "tmp")
			if err := os.Mkdir(tmp, 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.CommandContext(t.Context(), rpcbench, tt.args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stdout = w
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			w.Close()
			if _, err := bufio.NewReader(r).ReadString('\n'); err != nil {
				t.Fatalf("first line: %v; stderr %s", err, &stderr)
			}
			r.Close() // as head -1 does
			err = cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 141 {
				t.Errorf("rpcbench: %v (exit code %d), want exit code 141; stderr %s", err, cmd.ProcessState.ExitCode(), &stderr)
			}
			left, _ := filepath.Glob(filepath.Join(dir, "ev", report.RunPrefix+"*"))
			logs, _ := filepath.Glob(filepath.Join(tmp, "*"))
			if left = append(left, logs...); len(left) > 0 {
				t.Errorf("left behind %v; stderr %s", left, &stderr)
			}
		})
	}
}

// TestClosedStdoutIsSilent: a command whose stdout's reader has gone
// exits 141 and says nothing about it, as `list | head -1` would from a
// process that SIGPIPE killed.
func TestClosedStdoutIsSilent(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer w.Close()
	var stderr bytes.Buffer
	if code := execute(t.Context(), []string{"list"}, w, &stderr); code != 141 || stderr.Len() > 0 {
		t.Errorf("exit %d, stderr %q; want 141 and nothing", code, &stderr)
	}
}
