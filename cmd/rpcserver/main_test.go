package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/serverapi"
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
		{"bad workers", []string{"-workers", "0"}, "rpcserver: -workers 0 must be at least 1"},
		{"bad max-out-bytes", []string{"-max-out-bytes", "10"}, "rpcserver: -max-out-bytes 10 must be at least"},
		{"stray argument", []string{"extra"}, "unexpected arguments"},
		{"bad crash point", []string{"-crash", "during-lunch"}, "want before-commit or after-commit"},
		{"zero lease", []string{"-dedup-lease", "0s"}, "must be at least 1ms"},
		{"sub-millisecond lease", []string{"-dedup-lease", "500us"}, "must be at least 1ms"},
		{"TTL within the lease", []string{"-dedup-ttl", "1s", "-dedup-lease", "2s"}, "longer than it"},
		{"percent in a sqlite path", []string{"-store", "sqlite:/tmp/x%41.db"}, "without ?, # or %"},
		{"unknown store", []string{"-store", "mysql://x"}, "want memory | sqlite:PATH"},
		{"fault for an unknown method", []string{"-fault", "kind=late method=nosuch"}, `server: fault "kind=late method=nosuch": unknown method "nosuch" (want get, debit or echo)`},
		{"negative chunk window", []string{"-chunk-window", "-1s"}, "rpcserver: -chunk-window -1s must not be negative"},
		{"negative chunk window in chunk mode", []string{"-chunk", "-chunk-window", "-1s"}, "rpcserver: -chunk-window -1s must not be negative"},
		{"zero chunk window in chunk mode", []string{"-chunk", "-chunk-window", "0s"}, "rpcserver: -chunk-window 0s must be positive in chunk mode"},
		{"negative start delay", []string{"-start-delay", "-1s"}, "rpcserver: -start-delay -1s must not be negative (0 binds at once)"},
		{"negative write timeout", []string{"-write-timeout", "-1s"}, "rpcserver: -write-timeout -1s must be positive"},
		{"zero read timeout", []string{"-read-timeout", "0s"}, "rpcserver: -read-timeout 0s must be positive"},
		{"negative keepalive", []string{"-keepalive", "-1s"}, "rpcserver: -keepalive -1s must not be negative (0 turns keepalive off)"},
		{"negative lease", []string{"-dedup-lease", "-1s"}, "must be at least 1ms"},
		{"negative TTL", []string{"-dedup-ttl", "-1s"}, "longer than it"},
		{"grpc-max-streams without -grpc", []string{"-grpc-max-streams", "8"}, "rpcserver: -grpc-max-streams needs -grpc"},
		{"max-out-total without -grpc", []string{"-max-out-total", "8"}, "rpcserver: -max-out-total needs -grpc"},
		{"zero grpc-max-streams", []string{"-grpc", "-grpc-max-streams", "0"}, "rpcserver: -grpc-max-streams 0 must be between 1 and 4294967295"},
		{"huge grpc-max-streams", []string{"-grpc", "-grpc-max-streams", "4294967296"}, "rpcserver: -grpc-max-streams 4294967296 must be between 1 and 4294967295"},
		{"zero max-out-total", []string{"-grpc", "-max-out-total", "0"}, "rpcserver: -max-out-total 0 must be at least 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			// An address that cannot be bound, so that arguments wrongly
			// accepted make run fail at once, with exit 1, instead of
			// serving until the test times out.
			args := append([]string{"-addr", "127.0.0.1:-1"}, tt.args...)
			if got := run(args, &stdout, &stderr); got != 2 {
				t.Errorf("exit code = %d, want 2", got)
			}
			// One line saying what is wrong, then where to read more: the
			// whole -h text would bury the error, which a program that
			// started rpcserver quotes from the end of its stderr.
			lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
			if len(lines) != 2 || !strings.HasPrefix(lines[0], "rpcserver: ") || strings.HasPrefix(lines[0], "rpcserver: usage") ||
				!strings.Contains(lines[0], tt.want) || lines[1] != usageHint {
				t.Errorf("stderr got %q, want \"rpcserver: ...%s...\\n%s\\n\"", stderr.String(), tt.want, usageHint)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout = %q, want nothing", stdout.String())
			}
		})
	}
}

// TestRunFailures: what stops rpcserver before it listens is reported in
// one line, naming the flag, saying once what failed, with exit 1.
func TestRunFailures(t *testing.T) {
	dir := t.TempDir()
	missing := dir + "/missing-dir"
	tests := []struct {
		name string
		args []string
		want string // all of stderr
	}{
		{"store in a missing directory", []string{"-store", "sqlite:" + missing + "/bank.db"},
			"rpcserver: -store: bank: sqlite " + missing + "/bank.db: unable to open database file (14); the directory " + missing + " does not exist, create it first\n"},
		{"log in a missing directory", []string{"-log", missing + "/server.log"},
			"rpcserver: -log: open " + missing + "/server.log: no such file or directory\n"},
		{"profile in a missing directory", []string{"-log", dir + "/server.log", "-cpuprofile", missing + "/cpu.pprof"},
			"rpcserver: -cpuprofile: open " + missing + "/cpu.pprof: no such file or directory\n"},
		{"address that cannot be bound", []string{"-log", dir + "/server.log", "-addr", "127.0.0.1:-1"},
			"rpcserver: -addr: listen tcp: address -1: invalid port\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if got := run(tt.args, &stdout, &stderr); got != 1 {
				t.Errorf("exit code: got %d, want 1", got)
			}
			if got := stderr.String(); got != tt.want || stdout.Len() != 0 {
				t.Errorf("got stdout %q, stderr %q; want no stdout, stderr %q", stdout.String(), got, tt.want)
			}
		})
	}
}

// TestHelpText: the -h text has no slips such as an unmatched bracket or
// quote, line by line.
func TestHelpText(t *testing.T) {
	var stderr bytes.Buffer
	if got := run([]string{"-h"}, io.Discard, &stderr); got != 0 {
		t.Errorf("exit code: got %d, want 0", got)
	}
	for _, line := range strings.Split(stderr.String(), "\n") {
		depth := map[rune]int{}
		for _, r := range line {
			switch r {
			case '(', '[', '{':
				depth[r]++
			case ')':
				depth['(']--
			case ']':
				depth['[']--
			case '}':
				depth['{']--
			case '"':
				depth['"'] ^= 1
			}
		}
		for r, n := range depth {
			if n != 0 {
				t.Errorf("%q: unmatched %c", line, r)
			}
		}
	}
}

// TestHelpListsFaults: -h lists the fault kinds and their keys, and exits
// 0.
func TestHelpListsFaults(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if got := run([]string{"-h"}, &stdout, &stderr); got != 0 {
		t.Errorf("exit code = %d, want 0", got)
	}
	for _, want := range []string{"-workers", "kind=KIND", "late", "sleep", "unavailable", "noreply", "close", "partial", "badmagic", "unavailable_after_exec", "method=NAME", "one of get, debit, echo", "count=N", "delay=D", "retry_after=D", "never"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("-h does not mention %q:\n%s", want, stderr.String())
		}
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
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), serverapi.AnnouncePrefix)
	if !ok {
		t.Fatalf("announce line = %q, want prefix %q", line, serverapi.AnnouncePrefix)
	}
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial announced address %q: %v", addr, err)
	}
	nc.Close()
	go io.Copy(io.Discard, pr)

	// The counters rpcserver reports are exactly the ones the contract
	// names: a counter renamed on either side fails here.
	c, err := client.New(addr, client.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	r := c.Do(context.Background(), client.Call{Method: serverapi.MethodStats, Idempotent: true})
	c.Close()
	if r.Status != proto.StatusOK {
		t.Fatalf("%s: %v %v", serverapi.MethodStats, r.Status, r.Err)
	}
	if _, err := serverapi.ParseCounters(r.Payload); err != nil {
		t.Errorf("%s answer does not decode: %v", serverapi.MethodStats, err)
	}

	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	awaitExit0(t, done, "SIGTERM")
	evs := readLog(t, logPath)
	var got []string
	for _, e := range evs {
		switch e.Name {
		case serverapi.EventListen:
			got = append(got, e.Name+" "+e.Text(serverapi.KeyAddr))
			if !strings.Contains(e.Text(serverapi.KeyConfig), "kind=noreply method=debit count=1") {
				t.Errorf("%s config %q lacks the fault rule", e.Name, e.Text(serverapi.KeyConfig))
			}
		case serverapi.EventSignal:
			got = append(got, e.Name+" "+e.Text(serverapi.KeySignal))
		}
	}
	want := []string{serverapi.EventListen + " " + addr, serverapi.EventSignal + " terminated"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LISTEN and SIGNAL events (-want +got):\n%s", diff)
	}
}

// readLog decodes the events of the log at path.
func readLog(t *testing.T, path string) []serverapi.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	evs, err := serverapi.ReadEvents(f)
	if err != nil {
		t.Fatalf("the log does not decode as events: %v", err)
	}
	return evs
}

// awaitExit0 waits for run's exit code on done, after what ended it, and
// fails unless it is 0 within 10s.
func awaitExit0(t *testing.T, done <-chan int, after string) {
	t.Helper()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit code after %s = %d, want 0", after, code)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("server did not exit after %s", after)
	}
}
