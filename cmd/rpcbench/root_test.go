package main

import (
	"bytes"
	"context"
	"runtime"
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
		{"unknown command", []string{"bogus"}, exitError, []string{`unknown command "bogus"`, "valid commands: all, call, chaos, completion, conform, diff, help, judge, list, matrix, proxy, report, run, scorecard, target, version"}, "unknown command"},
		{"misspelt command", []string{"lst"}, exitError, []string{"did you mean list?"}, "unknown command"},
		{"unknown flag", []string{"all", "--bogus"}, exitError, []string{"unknown flag: --bogus", "--group string"}, "unknown flag"},
		{"unknown persistent flag value", []string{"--color", "sometimes", "list"}, exitError, []string{`invalid argument "sometimes"`, "auto, always, never"}, "invalid argument"},
		{"run without names", []string{"run"}, exitError, []string{"at least one scenario name", "rpcbench run NAME..."}, "at least one"},
		{"all with an argument", []string{"all", "extra"}, exitError, []string{`all takes no arguments (got "extra")`, "rpcbench run extra"}, "takes no arguments"},
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
		{"completion for an unknown shell", []string{"completion", "tcsh"}, exitError, []string{`unknown shell "tcsh"`, "valid shells: bash, fish, powershell, zsh"}, "unknown shell"},
		{"completion without a shell", []string{"completion"}, exitError, []string{"completion needs a shell"}, "needs a shell"},
		{"help on no such topic", []string{"help", "nosuch"}, exitError, []string{`no help topic "nosuch"`, "valid commands:"}, "no help topic"},
		{"list with an argument", []string{"list", "extra"}, exitError, []string{`list takes no arguments (got "extra")`, "rpcbench run NAME"}, "takes no arguments"},
		{"version with an argument", []string{"version", "x"}, exitError, []string{`unknown command "x" for "rpcbench version"`}, "unknown command"},
		{"help", []string{"help"}, exitOK, nil, ""},
		{"help on a topic", []string{"help", "run"}, exitOK, nil, ""},
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
		{"call outcome unknown", errUnknownOutcome, exitUnknown},
		{"usage", usageErrorf("", "bad"), exitError},
		{"other", context.DeadlineExceeded, exitError},
	}
	for _, tt := range tests {
		if got := exitCode(tt.err); got != tt.want {
			t.Errorf("%s: exitCode = %d, want %d", tt.name, got, tt.want)
		}
	}
}

// TestVersion: version and --version print the module version, the
// commit and the Go version.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var stdout, stderr bytes.Buffer
		if code := execute(context.Background(), args, &stdout, &stderr); code != exitOK {
			t.Errorf("%v: exit %d: %s", args, code, stderr.String())
		}
		if got := stdout.String(); !strings.HasPrefix(got, "rpcbench ") || !strings.Contains(got, " commit ") || !strings.Contains(got, runtime.Version()) {
			t.Errorf("%v printed %q, want rpcbench VERSION commit COMMIT %s", args, got, runtime.Version())
		}
	}
}

// TestExamples: every command's help has an Examples section.
func TestExamples(t *testing.T) {
	a, _, _ := testApp(t)
	for _, c := range newRootCmd(a).Commands() {
		if c.IsAvailableCommand() && c.Name() != "help" && c.Example == "" {
			t.Errorf("rpcbench %s has no examples", c.Name())
		}
	}
}
