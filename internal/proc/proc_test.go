package proc_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/proc"
)

func shell(t *testing.T, script string) proc.Spec {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip(err)
	}
	return proc.Spec{Bin: sh, Args: []string{"-c", script}}
}

// TestExit: how a child ended, as Exit says it, for each way it can end.
func TestExit(t *testing.T) {
	tests := []struct {
		name   string
		script string
		cancel bool // cancel the child's context once it has started
		want   proc.Exit
		text   string
		// wait is Spec.WaitDelay: long, so that a loaded machine's slow
		// SIGINT is not overtaken by the SIGKILL, except where the
		// SIGKILL is the point.
		wait time.Duration
	}{
		{"clean", "exit 0", false, proc.Exit{Code: 0}, "exited with status 0", time.Minute},
		{"status", "exit 3", false, proc.Exit{Code: 3}, "exited with status 3", time.Minute},
		{"killed itself", "kill -KILL $$", false, proc.Exit{Code: -1, Signal: syscall.SIGKILL}, "was killed (signal: killed)", time.Minute},
		{"interrupted by us", "echo up; exec sleep 60", true, proc.Exit{Code: -1, Signal: syscall.SIGINT, ByUs: true}, "was killed (signal: interrupt)", time.Minute},
		{"killed after WaitDelay", "trap '' INT; echo up; exec sleep 60", true, proc.Exit{Code: -1, Signal: syscall.SIGKILL, ByUs: true}, "was killed (signal: killed)", 100 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			spec := shell(t, tt.script)
			spec.Interrupt, spec.WaitDelay, spec.StdoutPipe = syscall.SIGINT, tt.wait, true
			p, err := proc.Start(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Stdout.Close()
			if tt.cancel {
				// The child has set its traps once it says so.
				if _, err := bufio.NewReader(p.Stdout).ReadString('\n'); err != nil {
					t.Fatal(err)
				}
				cancel()
			}
			got := p.Exit()
			if got.Code != tt.want.Code || got.Signal != tt.want.Signal || got.ByUs != tt.want.ByUs {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if got.String() != tt.text {
				t.Errorf("got %q, want %q", got.String(), tt.text)
			}
		})
	}
}

// TestStderr: the end of the child's stderr is kept even when the
// writer given for it fails, and a Stderr equal to Stdout gets both.
func TestStderr(t *testing.T) {
	spec := shell(t, "echo first >&2; echo out; echo last words >&2; exit 3")
	spec.Stderr = failingWriter{}
	p, err := proc.Start(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	p.Err()
	if got, want := p.Stderr(5), "first\nlast words"; got != want {
		t.Errorf("stderr: got %q, want %q", got, want)
	}

	// A log file gets the stderr through the copy too: its end is kept
	// (the adapters' and rpcserver's Stderr is a file in every real run).
	f, err := os.Create(t.TempDir() + "/stderr.log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	spec.Stderr = f
	if p, err = proc.Start(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
	p.Err()
	if got, want := p.Stderr(5), "first\nlast words"; got != want {
		t.Errorf("stderr to a file: kept %q, want %q", got, want)
	}
	if b, _ := os.ReadFile(f.Name()); string(b) != "first\nlast words\n" {
		t.Errorf("stderr to a file: the file holds %q", b)
	}

	var both strings.Builder
	spec.Stdout, spec.Stderr = &both, &both
	p, err = proc.Start(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	p.Err()
	if got, want := both.String(), "first\nout\nlast words\n"; got != want {
		t.Errorf("combined: got %q, want %q", got, want)
	}
}

// TestPipes: the caller's ends of the pipes reach the child, and a
// signal to a child that has exited is not an error.
func TestPipes(t *testing.T) {
	spec := shell(t, "read line; echo got $line")
	spec.StdinPipe, spec.StdoutPipe = true, true
	p, err := proc.Start(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stdout.Close()
	if _, err := p.Stdin.WriteString("hello\n"); err != nil {
		t.Fatal(err)
	}
	p.Stdin.Close()
	line, err := bufio.NewReader(p.Stdout).ReadString('\n')
	if err != nil || line != "got hello\n" {
		t.Errorf("got %q, %v, want %q", line, err, "got hello\n")
	}
	if err := p.Err(); err != nil {
		t.Errorf("exit: %v", err)
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Errorf("signal after exit: got %v, want nil", err)
	}
}

func TestStartFails(t *testing.T) {
	_, err := proc.Start(t.Context(), proc.Spec{Bin: "/nonexistent/bin", StdinPipe: true, StdoutPipe: true})
	if err == nil || !errors.Is(err, os.ErrNotExist) || !strings.HasPrefix(err.Error(), "proc: ") {
		t.Errorf("got %v, want a proc: error wrapping ErrNotExist", err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("closed") }

// TestGroupLeavesNothing: a child in a group of its own that exits
// leaving a grandchild behind takes the grandchild with it: the
// grandchild held the stdout pipe, which ends once the child is reaped.
func TestGroupLeavesNothing(t *testing.T) {
	spec := shell(t, "sleep 60 & echo started")
	spec.StdoutPipe, spec.Group = true, true
	p, err := proc.Start(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stdout.Close()
	p.Err()
	read := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(p.Stdout)
		read <- err
	}()
	select {
	case err := <-read:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the grandchild still holds stdout 10s after its parent was reaped")
	}
}
