package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tests here run the repository's run.sh in a temporary clone of
// its own, beside a fake build.sh and a fake bin/rpcbench, so that a
// whole run takes milliseconds and each group's outcome is the test's.

// fakeBuild records that it ran.
const fakeBuild = `#!/usr/bin/env bash
echo build >>"$RUNSH_FAKE/builds.log"
`

// fakeRPCBench stands in for rpcbench all. It records its arguments,
// says on the started FIFO which group it runs, and leaves its spec's
// summary line where the real one would: in output.txt, renamed into
// place (commit), in a new .rpcbench-run-* directory (abandon, as a run
// that skipped scenarios or was interrupted does), or nowhere (none, as
// a run that stopped before its first scenario). A run of mode wait
// waits for SIGINT or SIGTERM and is then abandoned, exiting 128 plus the
// signal, as rpcbench does.
const fakeRPCBench = `#!/usr/bin/env bash
set -eu
group= prev=
for a in "$@"; do
  if [ "$prev" = --group ]; then group=$a; fi
  prev=$a
done
echo "$*" >>"$RUNSH_FAKE/runs.log"
if [ -e /proc/self/fd/9 ]; then echo "$group" >>"$RUNSH_FAKE/fd9.log"; fi
summary='1 passed, 0 failed' mode=commit code=0
if [ -f "$RUNSH_FAKE/spec-$group" ]; then . "$RUNSH_FAKE/spec-$group"; fi
sig=
trap 'sig=INT' INT
trap 'sig=TERM' TERM
echo "$group" >"$RUNSH_FAKE/started"
if [ "$mode" = wait ]; then
  # The signal that reaches the group ends the sleep at once.
  while [ -z "$sig" ]; do sleep 1 || true; done
  mode=abandon
  case $sig in INT) code=130 ;; TERM) code=143 ;; esac
fi
dir=evidence/$group
if [ "$group" = evidence ]; then dir=evidence; fi
mkdir -p "$dir"
case $mode in
  commit)
    rm -rf "$dir"/.rpcbench-run-*
    printf 'CASE x PASS\n%s\n' "$summary" >"$dir/output.txt.new"
    mv "$dir/output.txt.new" "$dir/output.txt"
    ;;
  abandon)
    rm -rf "$dir"/.rpcbench-run-*
    tmp=$(mktemp -d "$dir/.rpcbench-run-XXXXXX")
    printf 'CASE x PASS\n%s\n' "$summary" >"$tmp/output.txt"
    ;;
esac
exit "$code"
`

// runshGroups are run.sh's groups, in its order.
var runshGroups = []string{"evidence", "robustness", "hostile", "durability", "chaos", "governance", "network", "grpc", "proxy", "deploy"}

// runshClone is a temporary clone holding run.sh and the fakes.
type runshClone struct {
	dir string
	// ctl holds the fakes' specs and records and the started FIFO.
	ctl string
	// started receives each group whose fake rpcbench has started.
	started chan string
}

func newRunshClone(t *testing.T) *runshClone {
	t.Helper()
	c := &runshClone{dir: t.TempDir(), ctl: t.TempDir(), started: make(chan string, len(runshGroups))}
	script, err := os.ReadFile("../../run.sh")
	if err != nil {
		t.Fatal(err)
	}
	writeExec(t, filepath.Join(c.dir, "run.sh"), string(script))
	writeExec(t, filepath.Join(c.dir, "build.sh"), fakeBuild)
	if err := os.Mkdir(filepath.Join(c.dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeExec(t, filepath.Join(c.dir, "bin", "rpcbench"), fakeRPCBench)

	fifo := filepath.Join(c.ctl, "started")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// Open for reading and writing, the FIFO never blocks a fake that
	// opens it to write, and never reads EOF between fakes.
	f, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	go func() {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			c.started <- sc.Text()
		}
	}()
	return c
}

func writeExec(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}

// spec sets what the fake rpcbench of group does.
func (c *runshClone) spec(t *testing.T, group, summary, mode string, code int) {
	t.Helper()
	s := fmt.Sprintf("summary='%s' mode=%s code=%d\n", summary, mode, code)
	if err := os.WriteFile(filepath.Join(c.ctl, "spec-"+group), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// lines returns the lines of the control file name; none if it is
// missing.
func (c *runshClone) lines(name string) []string {
	b, err := os.ReadFile(filepath.Join(c.ctl, name))
	if err != nil {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// runshRun is one run.sh running in its own process group, as a shell
// starts a command in the foreground, so that the test can send it the
// terminal's Ctrl-C.
type runshRun struct {
	cmd            *exec.Cmd
	stdout, stderr *os.File
	exited         chan struct{}
}

func (c *runshClone) start(t *testing.T, args ...string) *runshRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	dir := t.TempDir()
	r := &runshRun{
		stdout: createFile(t, filepath.Join(dir, "stdout")),
		stderr: createFile(t, filepath.Join(dir, "stderr")),
		exited: make(chan struct{}),
	}
	r.cmd = exec.CommandContext(ctx, filepath.Join(c.dir, "run.sh"), args...)
	r.cmd.Stdout, r.cmd.Stderr = r.stdout, r.stderr
	r.cmd.Env = append(os.Environ(), "RUNSH_FAKE="+c.ctl)
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r.cmd.Cancel = func() error { return syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL) }
	r.cmd.WaitDelay = 5 * time.Second
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r.cmd.Wait()
		close(r.exited)
	}()
	t.Cleanup(func() {
		syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		<-r.exited
	})
	return r
}

// wait waits for run.sh to exit and returns its exit code, after
// checking that no process of its group outlived it.
func (r *runshRun) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-r.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("run.sh still running after 30s\n%s", r.output())
	}
	if err := syscall.Kill(-r.cmd.Process.Pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("a process of run.sh's group outlived it (kill -0: %v)", err)
	}
	return r.cmd.ProcessState.ExitCode()
}

func (r *runshRun) output() string {
	out, _ := os.ReadFile(r.stdout.Name())
	errs, _ := os.ReadFile(r.stderr.Name())
	return fmt.Sprintf("run.sh stdout:\n%s\nrun.sh stderr:\n%s", out, errs)
}

// awaitStarted waits for the fake rpcbench of group to start.
func (c *runshClone) awaitStarted(t *testing.T, r *runshRun, group string) {
	t.Helper()
	for {
		select {
		case g := <-c.started:
			if g == group {
				return
			}
		case <-r.exited:
			t.Fatalf("run.sh exited before group %s started\n%s", group, r.output())
		case <-time.After(30 * time.Second):
			t.Fatalf("group %s not started after 30s\n%s", group, r.output())
		}
	}
}

// TestRunShStopsOnSignal: one Ctrl-C (SIGINT to run.sh's process group)
// while the first group runs ends the whole run, exiting 130, with the
// next group never started and no process left; likewise SIGTERM, 143.
// The total counts the interrupted group's summary.
func TestRunShStopsOnSignal(t *testing.T) {
	tests := []struct {
		name     string
		sig      syscall.Signal
		wantCode int
	}{
		{"Ctrl-C", syscall.SIGINT, 130},
		{"SIGTERM to the group", syscall.SIGTERM, 143},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newRunshClone(t)
			c.spec(t, "evidence", "3 passed, 0 failed, 1 interrupted", "wait", 0)
			r := c.start(t)
			c.awaitStarted(t, r, "evidence")
			if err := syscall.Kill(-r.cmd.Process.Pid, tt.sig); err != nil {
				t.Fatal(err)
			}
			if got := r.wait(t); got != tt.wantCode {
				t.Errorf("run.sh exit code %d, want %d\n%s", got, tt.wantCode, r.output())
			}
			if got, want := c.lines("runs.log"), []string{"all --group evidence"}; !slices.Equal(got, want) {
				t.Errorf("fake rpcbench ran %q, want %q: the run went on after the signal\n%s", got, want, r.output())
			}
			out := readFile(t, r.stdout.Name())
			if want := "== total over 1 of 10 groups: 3 passed, 0 failed, 1 interrupted\n"; out != want {
				t.Errorf("stdout %q, want %q\n%s", out, want, r.output())
			}
		})
	}
}

// TestRunShLock: a second run.sh in the clone while the first runs is
// refused with exit 2 before its build starts, naming the first's pid
// and the lock; the lock is not handed to the children, and once the
// first has ended the next run goes ahead. In a git clone the lock is in
// the git directory, out of git status.
func TestRunShLock(t *testing.T) {
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("no flock here: run.sh runs without its lock")
	}
	tests := []struct {
		name string
		git  bool
		// lock is the lock's path as the refusal names it, relative to
		// the clone.
		lock string
	}{
		{"plain directory", false, ".run.lock"},
		{"git clone", true, ".git/rpcbench-run.lock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newRunshClone(t)
			if tt.git {
				gitIn(t, c.dir, "init", "-q")
			}
			c.spec(t, "evidence", "1 passed, 0 failed, 1 interrupted", "wait", 0)
			first := c.start(t)
			c.awaitStarted(t, first, "evidence")

			second := c.start(t)
			select {
			case g := <-c.started:
				t.Fatalf("the second run.sh was not refused: it started group %s\n%s", g, second.output())
			case <-second.exited:
			}
			if got := second.wait(t); got != 2 {
				t.Errorf("second run.sh exit code %d, want 2\n%s", got, second.output())
			}
			msg := readFile(t, second.stderr.Name())
			if want := fmt.Sprintf("pid %d", first.cmd.Process.Pid); !strings.Contains(msg, want) || !strings.Contains(msg, tt.lock) {
				t.Errorf("second run.sh's stderr does not name the first (%s) and the lock (%s):\n%s", want, tt.lock, msg)
			}
			if got := c.lines("builds.log"); len(got) != 1 {
				t.Errorf("build.sh ran %d times, want 1: the second run built before it was refused", len(got))
			}
			if tt.git {
				if st := gitIn(t, c.dir, "status", "--porcelain", "--untracked-files=all"); strings.Contains(st, "lock") {
					t.Errorf("git status shows the lock:\n%s", st)
				}
			}

			if err := syscall.Kill(-first.cmd.Process.Pid, syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			if got := first.wait(t); got != 130 {
				t.Errorf("first run.sh exit code %d, want 130\n%s", got, first.output())
			}
			if got := c.lines("fd9.log"); len(got) > 0 {
				t.Errorf("the lock's descriptor was open in the fake rpcbench of %q", got)
			}

			os.Remove(filepath.Join(c.ctl, "spec-evidence"))
			third := c.start(t)
			if got := third.wait(t); got != 0 {
				t.Errorf("run.sh after the first ended: exit code %d, want 0\n%s", got, third.output())
			}
		})
	}
}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git here")
	}
	cmd := exec.CommandContext(t.Context(), "git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestRunShTotal: run.sh says "== group I of 10: GROUP" before each
// group and ends with the sum of the summary lines the groups' runs left,
// read from output.txt or from the .rpcbench-run-* directory a run that
// did not complete leaves; a group whose run left none is not counted,
// whatever earlier runs left there. The status is the last failing
// group's.
func TestRunShTotal(t *testing.T) {
	type spec struct {
		summary, mode string
		code          int
	}
	tests := []struct {
		name string
		// specs by group; a group without one passes 1 scenario.
		specs map[string]spec
		// stale are files earlier runs left, relative to the clone.
		stale     map[string]string
		wantTotal string
		wantCode  int
		wantErr   string
	}{
		{
			name: "every kind of count",
			specs: map[string]spec{
				"evidence":   {"26 passed, 0 failed", "commit", 0},
				"robustness": {"11 passed, 0 failed, 1 finding", "commit", 0},
				"durability": {"17 passed, 0 failed, 3 skipped", "abandon", 0},
				"chaos":      {"4 passed, 1 failed, 1 error", "commit", 1},
				"governance": {"11 passed, 0 failed, 2 errors, 4 findings, 2 n/a", "commit", 1},
				"network":    {"", "none", 1},
				"grpc":       {"482 passed, 0 failed, 9 skipped, 140 findings, 38 n/a", "abandon", 0},
				"deploy":     {"12 passed, 0 failed", "commit", 0},
			},
			stale: map[string]string{
				"evidence/network/output.txt":                      "9 passed, 0 failed\n",
				"evidence/network/.rpcbench-run-old/output.txt":    "7 passed, 0 failed\n",
				"evidence/durability/output.txt":                   "5 passed, 0 failed\n",
				"evidence/durability/.rpcbench-run-old/output.txt": "6 passed, 0 failed\n",
			},
			wantTotal: "== total over 9 of 10 groups: 565 passed, 1 failed, 3 errors, 12 skipped, 145 findings, 40 n/a",
			wantCode:  1,
			wantErr:   "run.sh: group network left no summary line in evidence/network: not counted in the total",
		},
		{
			name: "singular, interrupted, a count rpcbench does not print yet",
			specs: map[string]spec{
				"chaos":   {"0 passed, 0 failed, 1 error, 2 interrupted", "commit", 0},
				"network": {"0 passed, 0 failed, 1 finding, 1 n/a, 2 timed out", "commit", 0},
			},
			wantTotal: "== total over 10 groups: 8 passed, 0 failed, 1 error, 2 interrupted, 1 finding, 1 n/a, 2 timed out",
		},
		{
			name:      "all passed",
			wantTotal: "== total over 10 groups: 10 passed, 0 failed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newRunshClone(t)
			for g, s := range tt.specs {
				c.spec(t, g, s.summary, s.mode, s.code)
			}
			for path, content := range tt.stale {
				path = filepath.Join(c.dir, path)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r := c.start(t, "--color", "never")
			if got := r.wait(t); got != tt.wantCode {
				t.Errorf("exit code %d, want %d\n%s", got, tt.wantCode, r.output())
			}
			var wantRuns, wantProgress []string
			for i, g := range runshGroups {
				wantRuns = append(wantRuns, "all --group "+g+" --color never")
				wantProgress = append(wantProgress, fmt.Sprintf("== group %d of %d: %s", i+1, len(runshGroups), g))
			}
			if got := c.lines("runs.log"); !slices.Equal(got, wantRuns) {
				t.Errorf("fake rpcbench ran\n%q\nwant\n%q", got, wantRuns)
			}
			stderr := readFile(t, r.stderr.Name())
			var progress []string
			for _, l := range strings.Split(stderr, "\n") {
				if strings.HasPrefix(l, "== group ") {
					progress = append(progress, l)
				}
			}
			if !slices.Equal(progress, wantProgress) {
				t.Errorf("progress lines\n%q\nwant\n%q", progress, wantProgress)
			}
			if tt.wantErr != "" && !strings.Contains(stderr, tt.wantErr) {
				t.Errorf("stderr does not say %q\n%s", tt.wantErr, r.output())
			}
			if got, want := readFile(t, r.stdout.Name()), tt.wantTotal+"\n"; got != want {
				t.Errorf("stdout %q, want %q", got, want)
			}
		})
	}
}

// TestRunShSelection: --run makes run.sh one rpcbench all over every
// group, writing no evidence, without the per-group progress or total.
func TestRunShSelection(t *testing.T) {
	c := newRunshClone(t)
	r := c.start(t, "--run", "^late_")
	if got := r.wait(t); got != 0 {
		t.Errorf("exit code %d, want 0\n%s", got, r.output())
	}
	if got, want := c.lines("runs.log"), []string{"all --group all --evidence  --run ^late_"}; !slices.Equal(got, want) {
		t.Errorf("fake rpcbench ran %q, want %q", got, want)
	}
	if out := r.output(); strings.Contains(out, "== ") {
		t.Errorf("progress or total in a selection's run:\n%s", out)
	}
}

// TestRunShStack: --stack and --config select columns, part of a group,
// so they make run.sh one run over every group writing no evidence, as
// --run does.
func TestRunShStack(t *testing.T) {
	for _, args := range [][]string{{"--stack", "grpc-go"}, {"--config=retry"}} {
		c := newRunshClone(t)
		r := c.start(t, args...)
		if got := r.wait(t); got != 0 {
			t.Errorf("%v: exit code %d, want 0\n%s", args, got, r.output())
		}
		want := []string{"all --group all --evidence  " + strings.Join(args, " ")}
		if got := c.lines("runs.log"); !slices.Equal(got, want) {
			t.Errorf("fake rpcbench ran %q, want %q", got, want)
		}
	}
}

// TestRunShUsageError: a group that refuses its arguments (status 2, a
// mistyped flag) ends the run there, rather than printing the same usage
// error once per group.
func TestRunShUsageError(t *testing.T) {
	c := newRunshClone(t)
	c.spec(t, "evidence", "0 passed, 0 failed", "none", 2)
	r := c.start(t, "--colr", "never")
	if got := r.wait(t); got != 2 {
		t.Errorf("exit code %d, want 2\n%s", got, r.output())
	}
	if got := c.lines("runs.log"); len(got) != 1 {
		t.Errorf("fake rpcbench ran %d times (%q), want once", len(got), got)
	}
}
