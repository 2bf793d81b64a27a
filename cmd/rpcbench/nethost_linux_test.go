package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/cases"
	"github.com/rpcbench/rpcbench/internal/nethost"
	"github.com/rpcbench/rpcbench/internal/report"
)

// TestNoHostsLeftAfterKill runs the real rpcbench on a network scenario,
// SIGKILLs it while its test host is up, and checks what is left: its
// server dies with it, its namespace and link stay (nothing could remove
// them), and the next rpcbench run removes them and leaves nothing of
// its own.
func TestNoHostsLeftAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binaries")
	}
	if err := nethost.Available(); err != nil {
		if nethost.Required() {
			t.Fatalf("%v (%s=1)", err, nethost.EnvRequire)
		}
		t.Skip(err)
	}
	rpcbench, rpcserver := buildBinaries(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	t.Cleanup(func() {
		for _, pid := range running(rpcserver) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	env := append(os.Environ(), "TMPDIR="+t.TempDir())
	ofPID := func(pid int) []nethost.Leftover {
		left, err := nethost.Leftovers()
		if err != nil {
			t.Fatal(err)
		}
		var out []nethost.Leftover
		for _, l := range left {
			if l.PID == pid {
				out = append(out, l)
			}
		}
		return out
	}
	// killOne starts rpcbench, SIGKILLs it while its host is up, checks
	// that its server died with it, and returns its pid and what it left.
	killOne := func() (int, []nethost.Leftover) {
		cmd := exec.CommandContext(ctx, rpcbench, "run", "--server", rpcserver, "--count", "100", "half_open_peer_detected")
		cmd.Stdout, cmd.Stderr = createFile(t, filepath.Join(dir, "stdout")), createFile(t, filepath.Join(dir, "stderr"))
		cmd.Env = env
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Inside its host the server is still rpcbench's child: ip netns
		// exec executes it in its own place.
		server, err := awaitServing(cmd.Process.Pid, serverName, 30*time.Second)
		if err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal(err)
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		// The check is that it dies, not how fast: room for a loaded
		// machine.
		deadline := time.Now().Add(10 * time.Second)
		for server.alive() {
			if time.Now().After(deadline) {
				t.Fatalf("server pid %d in the test host outlived the killed rpcbench by 10s", server.pid)
			}
			time.Sleep(5 * time.Millisecond)
		}
		return cmd.Process.Pid, ofPID(cmd.Process.Pid)
	}
	// Another test process making its first host meanwhile would clean
	// what the killed run left before the next run could: then try again.
	var killed int
	for try := 1; ; try++ {
		var left []nethost.Leftover
		killed, left = killOne()
		if len(left) == 2 {
			break
		}
		if try == 3 {
			// Without them the check below would prove nothing.
			t.Fatalf("after SIGKILL: leftovers of pid %d %v, want its namespace and its link", killed, left)
		}
		t.Logf("after SIGKILL: leftovers of pid %d %v, cleaned by another process; again", killed, left)
	}

	next := exec.CommandContext(ctx, rpcbench, "run", "--server", rpcserver, "negative_control_no_keepalive")
	next.Env = env
	out, err := next.CombinedOutput()
	if err != nil {
		t.Fatalf("the next run: %v\n%s", err, out)
	}
	if left := ofPID(killed); len(left) > 0 {
		t.Errorf("the next run left the killed run's %v", left)
	}
	if left := ofPID(next.Process.Pid); len(left) > 0 {
		t.Errorf("the next run left its own %v", left)
	}
}

// TestNetworkSkipsWithoutRoot runs the real rpcbench on the network group
// as an unprivileged user: every scenario must be reported SKIP with the
// reason, never PASS, the run must exit 0, and no test host may appear.
func TestNetworkSkipsWithoutRoot(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binaries")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run rpcbench as another, unprivileged user")
	}
	rpcbench, rpcserver := buildBinaries(t)
	// nobody must reach the binaries and a temporary directory.
	for _, d := range []string{filepath.Dir(rpcbench), filepath.Dir(filepath.Dir(rpcbench))} {
		if d == filepath.Clean(os.TempDir()) {
			t.Fatalf("%s is the temporary directory itself: opening it to nobody would take its sticky bit", d)
		}
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tmp, err := os.MkdirTemp(filepath.Dir(rpcbench), "tmp")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	os.Chmod(tmp, 0o1777)
	before, err := nethost.Leftovers()
	if err != nil {
		t.Fatal(err)
	}

	cmd := exec.CommandContext(t.Context(), rpcbench, "all", "--group", "network", "--server", rpcserver, "--evidence", "", "--color", "never")
	cmd.Dir = tmp
	var env []string
	for _, kv := range os.Environ() {
		// CI requires test hosts; this run is about what happens without.
		if !strings.HasPrefix(kv, nethost.EnvRequire+"=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "TMPDIR="+tmp, "HOME="+tmp, "GOCACHE="+tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("rpcbench as nobody: %v, want exit 0\n%s%s", err, &out, &stderr)
	}
	lines, err := report.ReadOutput(bytes.NewReader(out.Bytes()))
	if err != nil {
		t.Fatalf("reading its output: %v\n%s", err, &out)
	}
	want := len(cases.Default().Select(cases.GroupNetwork))
	if len(lines) != want {
		t.Fatalf("got %d CASE lines, want %d\n%s", len(lines), want, &out)
	}
	for _, l := range lines {
		if why := l.Why(); l.Verdict != report.Skipped || !strings.Contains(why, "root") {
			t.Errorf("%s: got %v why=%q, want SKIP saying root is needed", l.Name, l.Verdict, why)
		}
	}
	after, err := nethost.Leftovers()
	if err != nil {
		t.Fatal(err)
	}
	if len(after) > len(before) {
		t.Errorf("test hosts appeared: before %v, after %v", before, after)
	}
}
