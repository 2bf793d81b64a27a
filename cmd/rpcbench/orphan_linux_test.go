package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/report"
)

// TestNoOrphans runs the real rpcbench against the real rpcserver, stops
// it mid-run while a server is up, and checks that no rpcserver outlives
// it by more than a second. An interrupted rpcbench stops its server
// itself (the scenario's cleanup sends SIGINT); a killed one cannot, and
// relies on the kernel: internal/scenario starts each server with
// Pdeathsig=SIGKILL.
func TestNoOrphans(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binaries")
	}
	rpcbench, rpcserver := buildBinaries(t)
	tests := []struct {
		name string
		sig  syscall.Signal
		// group sends sig to rpcbench's whole process group, servers
		// included, as a terminal's Ctrl-C does.
		group bool
		// wantCode is rpcbench's exit code; 0 means killed by sig.
		wantCode int
	}{
		{"SIGINT", syscall.SIGINT, false, exitInterrupted},
		{"SIGTERM", syscall.SIGTERM, false, 128 + int(syscall.SIGTERM)},
		{"SIGKILL", syscall.SIGKILL, false, 0},
		{"Ctrl-C", syscall.SIGINT, true, exitInterrupted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testNoOrphans(t, rpcbench, rpcserver, tt.sig, tt.group, tt.wantCode)
		})
	}
}

func testNoOrphans(t *testing.T, rpcbench, rpcserver string, sig syscall.Signal, group bool, wantCode int) {
	t.Helper()
	dir := t.TempDir()
	stdout, stderr := createFile(t, filepath.Join(dir, "stdout")), createFile(t, filepath.Join(dir, "stderr"))

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	// Scenarios that keep their server up for most of their half second
	// or so, repeated for far longer than the test waits.
	cmd := exec.CommandContext(ctx, rpcbench, "run", "--server", rpcserver, "--count", "100",
		"late_response_dropped_by_id", "deadline_server_skips_expired")
	// Files, not pipes: Wait then returns when rpcbench exits, not when
	// the last holder of a pipe (a surviving server) closes it.
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// Its temporary directories go to the test's own, so that a killed
	// rpcbench, which cannot remove them, leaves nothing behind.
	tmp := t.TempDir()
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	// A process group of its own lets the test send Ctrl-C's signal, and
	// lets Cancel kill rpcbench and its servers together should the test
	// fail while rpcbench runs.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	// Servers that outlived rpcbench are found by their binary, which
	// is this test's own.
	t.Cleanup(func() {
		for _, pid := range running(rpcserver) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	logs := func() string {
		out, _ := os.ReadFile(stdout.Name())
		errs, _ := os.ReadFile(stderr.Name())
		return fmt.Sprintf("rpcbench stdout:\n%s\nrpcbench stderr:\n%s", out, errs)
	}

	// Polling is the only way to learn that a child is up.
	server, err := awaitServing(cmd.Process.Pid, serverName, 20*time.Second)
	if err != nil {
		t.Fatalf("%v\n%s", err, logs())
	}
	if !server.alive() {
		// It ended between the scan and now; the run goes on, but this
		// test wants a server up when the signal lands.
		if server, err = awaitServing(cmd.Process.Pid, serverName, 20*time.Second); err != nil {
			t.Fatalf("%v\n%s", err, logs())
		}
	}
	target := cmd.Process.Pid
	if group {
		target = -pgid
	}
	if err := syscall.Kill(target, sig); err != nil {
		t.Fatalf("kill %d %v: %v", target, sig, err)
	}
	signalled := time.Now()

	// An interrupted run stops after the current scenario has cleaned up,
	// which takes well under a second; allow a few.
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatalf("rpcbench still running 5s after %v\n%s", sig, logs())
	}
	died := time.Now()
	t.Logf("rpcbench exited %v after %v; server pid %d", died.Sub(signalled).Round(time.Millisecond), sig, server.pid)

	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case wantCode == 0 && !(ws.Signaled() && ws.Signal() == sig):
		t.Errorf("rpcbench exit status %v, want killed by %v", cmd.ProcessState, sig)
	case wantCode != 0 && cmd.ProcessState.ExitCode() != wantCode:
		t.Errorf("rpcbench exit code %d, want %d\n%s", cmd.ProcessState.ExitCode(), wantCode, logs())
	}
	if wantCode != 0 {
		// The passes so far are on record, parseable and summarized.
		out, _ := os.ReadFile(stdout.Name())
		lines, err := report.ReadOutput(strings.NewReader(string(out)))
		if err != nil || !strings.HasSuffix(string(out), report.Summary(lines)+"\n") {
			t.Errorf("stdout does not end in the summary of its CASE lines (%v)\n%s", err, logs())
		}
	}

	// No rpcserver of ours may outlive rpcbench by more than a second:
	// neither the one seen running nor any other started from rpcserver.
	deadline := died.Add(time.Second)
	for {
		alive := server.alive()
		others := running(rpcserver)
		if !alive && len(others) == 0 {
			t.Logf("no rpcserver left (checked %v after rpcbench exited)", time.Since(died).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("1s after rpcbench exited: server pid %d alive %v; processes running %s: %v\n%s",
				server.pid, alive, rpcserver, others, logs())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if sig == syscall.SIGKILL {
		checkSwept(t, rpcbench, rpcserver, tmp)
	}
}

// checkSwept checks that the temporary directories a killed rpcbench
// left in tmp are there, and that the next rpcbench run removes them at
// its start, saying so in one line.
func checkSwept(t *testing.T, rpcbench, rpcserver, tmp string) {
	t.Helper()
	left, _ := filepath.Glob(filepath.Join(tmp, "*"))
	if len(left) == 0 {
		t.Fatalf("the killed rpcbench left nothing in its TMPDIR %s: it could not have removed its directories", tmp)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	next := exec.CommandContext(ctx, rpcbench, "run", "--server", rpcserver, "normal_multiplex")
	next.Env = append(os.Environ(), "TMPDIR="+tmp)
	var stderr strings.Builder
	next.Stderr = &stderr
	next.WaitDelay = 5 * time.Second
	if err := next.Run(); err != nil {
		t.Fatalf("the next rpcbench run: %v\n%s", err, stderr.String())
	}
	var said string
	for line := range strings.SplitSeq(stderr.String(), "\n") {
		if strings.HasPrefix(line, "rpcbench: removed what killed runs left: ") {
			said = line
		}
	}
	for _, d := range left {
		if !strings.Contains(said, d) {
			t.Errorf("the next run did not say it removed %s; its stderr:\n%s", d, stderr.String())
		}
	}
	if now, _ := filepath.Glob(filepath.Join(tmp, "*")); len(now) != 0 {
		t.Errorf("after the next run, its TMPDIR holds %v, want nothing: the killed run left %v", now, left)
	}
}

func createFile(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// proc identifies one process: a pid together with its start time, so
// that a pid reused by a later process is not mistaken for it.
type proc struct {
	pid       int
	startTime string
}

// procStat holds the fields of /proc/PID/stat that the test reads.
type procStat struct {
	comm      string
	state     byte
	ppid      int
	startTime string
}

// readStat reads /proc/PID/stat. Its second field, the command name in
// parentheses, may itself hold spaces and parentheses, so the fields
// after it are found from the last ')'.
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	s := string(b)
	lp, rp := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if lp < 0 || rp < lp {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	// Fields 3 (state) onwards; see proc(5).
	rest := strings.Fields(s[rp+1:])
	if len(rest) < 20 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	ppid, err := strconv.Atoi(rest[1])
	if err != nil {
		return procStat{}, fmt.Errorf("/proc/%d/stat: ppid %q", pid, rest[1])
	}
	return procStat{comm: s[lp+1 : rp], state: rest[0][0], ppid: ppid, startTime: rest[19]}, nil
}

// alive reports whether p still runs. A zombie counts as gone: it runs no
// code and holds no memory, sockets or files, only its exit status. Once
// rpcbench has died, its servers are re-parented to the nearest subreaper
// or to PID 1, which reaps them; but in a container PID 1 may never call
// wait, and a killed server then stays a zombie for good.
func (p proc) alive() bool {
	st, err := readStat(p.pid)
	if err != nil {
		return false // gone (or, while it exits, unreadable)
	}
	return st.startTime == p.startTime && st.state != 'Z' && st.state != 'X'
}

// pids lists the processes in /proc.
func pids() []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// awaitServing waits for a child of parent called comm that has accepted
// a connection, and returns it. Two sockets (the listener and an accepted
// connection) mean the server is past its announce line: a server killed
// while starting up could die of writing that line into the pipe of a
// dead parent, which would hide whether anything else would stop it.
func awaitServing(parent int, comm string, timeout time.Duration) (proc, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, pid := range pids() {
			st, err := readStat(pid)
			if err == nil && st.ppid == parent && st.comm == comm && st.state != 'Z' && sockets(pid) >= 2 {
				return proc{pid, st.startTime}, nil
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return proc{}, fmt.Errorf("no %s child of pid %d with a connection within %v", comm, parent, timeout)
}

// sockets counts the open sockets of pid.
func sockets(pid int) int {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, _ := os.ReadDir(dir)
	n := 0
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && strings.HasPrefix(target, "socket:") {
			n++
		}
	}
	return n
}

// running lists the live processes executing the binary at path. A
// zombie has no executable left to name, so it is not listed.
func running(path string) []int {
	var out []int
	for _, pid := range pids() {
		// Other users' processes are unreadable, and are not ours.
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && exe == path {
			out = append(out, pid)
		}
	}
	return out
}
