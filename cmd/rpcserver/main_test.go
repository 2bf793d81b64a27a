package main

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"unknown flag", []string{"-nope"}, "flag provided but not defined"},
		{"bad fault kind", []string{"-fault", "kind=explode"}, "unknown kind"},
		{"fault without kind", []string{"-fault", "count=1"}, "kind is required"},
		{"bad workers", []string{"-workers", "0"}, "Workers 0"},
		{"stray argument", []string{"extra"}, "unexpected arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if got := run(tt.args, &stdout, &stderr); got != 2 {
				t.Errorf("exit code = %d, want 2", got)
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tt.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout = %q, want nothing", stdout.String())
			}
		})
	}
}

// TestAnnounceAndShutdown runs the server in-process: it must announce a
// dialable address on stdout, log to the -log file and exit 0 on SIGTERM.
func TestAnnounceAndShutdown(t *testing.T) {
	logPath := t.TempDir() + "/server.log"
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"-log", logPath, "-fault", "kind=noreply method=debit count=1"}, pw, io.Discard)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("reading announce line: %v", err)
	}
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), AnnouncePrefix)
	if !ok {
		t.Fatalf("announce line = %q, want prefix %q", line, AnnouncePrefix)
	}
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial announced address %q: %v", addr, err)
	}
	nc.Close()
	go io.Copy(io.Discard, pr)

	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit code after SIGTERM = %d, want 0", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("server did not stop after SIGTERM")
	}
	logText, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"LISTEN addr=" + addr, "kind=noreply method=debit count=1", "SIGNAL terminated"} {
		if !strings.Contains(string(logText), want) {
			t.Errorf("log lacks %q:\n%s", want, logText)
		}
	}
}
