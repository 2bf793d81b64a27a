package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestExecuteUsage drives the real command tree: usage errors exit 2 and
// are printed once, with the valid choices.
func TestExecuteUsage(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  []string // substrings of stderr
		once     string   // must appear exactly once in stderr
	}{
		{"no command", nil, exitError, []string{"missing command", "Available Commands:"}, "missing command"},
		{"unknown command", []string{"bogus"}, exitError, []string{`unknown command "bogus"`, "valid commands: all, chaos, completion, diff, help, list, run"}, "unknown command"},
		{"misspelt command", []string{"lst"}, exitError, []string{"did you mean list?"}, "unknown command"},
		{"unknown flag", []string{"all", "--bogus"}, exitError, []string{"unknown flag: --bogus", "--group string"}, "unknown flag"},
		{"unknown persistent flag value", []string{"--color", "sometimes", "list"}, exitError, []string{`invalid argument "sometimes"`, "auto, always, never"}, "invalid argument"},
		{"run without names", []string{"run"}, exitError, []string{"at least one scenario name", "rpcbench run NAME..."}, "at least one"},
		{"all with an argument", []string{"all", "extra"}, exitError, []string{`unknown command "extra" for "rpcbench all"`}, "unknown command"},
		{"diff with three files", []string{"diff", "a", "b", "c"}, exitError, []string{"accepts at most 2 arg(s)"}, "accepts at most"},
		{"unknown group", []string{"list", "--group", "nope"}, exitError, []string{`no scenarios in group "nope"`, "valid groups:"}, "no scenarios"},
		{"count zero", []string{"all", "--count", "0"}, exitError, []string{`invalid argument "0" for "--count"`, "from 1 to 1000000", "--count N"}, "invalid argument"},
		{"count negative", []string{"run", "--count", "-3", "normal_multiplex"}, exitError, []string{`invalid argument "-3" for "--count"`}, "invalid argument"},
		{"count not a number", []string{"run", "--count", "many", "normal_multiplex"}, exitError, []string{`invalid argument "many" for "--count"`}, "invalid argument"},
		{"count over the default evidence", []string{"all", "--count", "2"}, exitError, []string{"--count 2 would replace evidence/", "--evidence DIR"}, "would replace"},
		{"chaos unknown fault", []string{"chaos", "--faults", "late,meteor"}, exitError, []string{`unknown fault "meteor"`, "late,noreply,close"}, "unknown fault"},
		{"chaos unknown store", []string{"chaos", "--store", "redis"}, exitError, []string{`store "redis": want memory, sqlite or postgres`}, "want memory"},
		{"chaos memory on two servers", []string{"chaos", "--servers", "2"}, exitError, []string{"would share nothing"}, "share nothing"},
		{"chaos naughty client", []string{"chaos", "--client", "fifo"}, exitError, []string{`client "fifo": want normal or naive`}, "want normal"},
		{"chaos too short", []string{"chaos", "--duration", "10ms"}, exitError, []string{"must be at least 1s"}, "at least 1s"},
		{"help", []string{"help"}, exitOK, nil, ""},
		{"command help", []string{"all", "--help"}, exitOK, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := execute(context.Background(), tt.args, &stdout, &stderr)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d\nstderr %s", code, tt.wantCode, stderr.String())
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr =\n%s\nwant it to contain %q", stderr.String(), want)
				}
			}
			if tt.once != "" {
				if n := strings.Count(stderr.String(), tt.once); n != 1 {
					t.Errorf("stderr says %q %d times, want once:\n%s", tt.once, n, stderr.String())
				}
			}
			if tt.wantCode == exitOK && stderr.Len() != 0 {
				t.Errorf("stderr = %q, want nothing", stderr.String())
			}
		})
	}
}

func TestExitCode(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, exitOK},
		{"failed", errFailed, exitFailed},
		{"interrupted", errInterrupted, exitInterrupted},
		{"usage", usageErrorf("", "bad"), exitError},
		{"other", context.DeadlineExceeded, exitError},
	}
	for _, tt := range tests {
		if got := exitCode(tt.err); got != tt.want {
			t.Errorf("%s: exitCode = %d, want %d", tt.name, got, tt.want)
		}
	}
}
