package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: the side a test reads, and the
// terminal a child process writes to.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ws := &unix.Winsize{Row: 40, Col: 120}
	if err := unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, ws); err != nil {
		t.Fatal(err)
	}
	return m, s
}

// TestTerminalOutput runs the real rpcbench with its stdout and stderr on
// a terminal: each scenario gets a short line (verdict, name, time, the
// checked fields within the terminal's 120 columns) and a live status
// line while it runs, which is erased; the evidence still gets the whole
// CASE lines.
func TestTerminalOutput(t *testing.T) {
	rpcbench, _ := buildBinaries(t)
	master, tty := openPTY(t)
	dir := t.TempDir()
	cmd := exec.CommandContext(t.Context(), rpcbench, "run", "late_response_dropped_by_id", "normal_multiplex", "--evidence", "ev")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TERM=xterm", "NO_COLOR=1")
	cmd.Stdout, cmd.Stderr = tty, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	// A hung rpcbench must not hang the test: the read ends when the
	// child closes the terminal (EIO), or at the latest here.
	stop := time.AfterFunc(2*time.Minute, func() { master.Close() })
	defer stop.Stop()
	var got bytes.Buffer
	io.Copy(&got, master)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("rpcbench: %v\n%s", err, &got)
	}
	text := got.String()
	if !strings.Contains(text, "[1/2] late_response_dropped_by_id") || !strings.Contains(text, "\r\x1b[K") {
		t.Errorf("no status line, or it was never erased:\n%q", text)
	}
	var short []string
	for _, l := range strings.Split(strings.ReplaceAll(text, "\r\x1b[K", "\n"), "\n") {
		l = strings.TrimRight(l, "\r")
		if strings.HasPrefix(l, "CASE ") {
			t.Errorf("a CASE line on the terminal: %q", l)
		}
		if strings.HasPrefix(l, "PASS ") {
			short = append(short, l)
			if n := len([]rune(l)); n > 120 {
				t.Errorf("%d columns on a 120-column terminal: %q", n, l)
			}
		}
	}
	if len(short) != 2 || !strings.Contains(short[0], "lateDropped==1") || strings.Contains(short[0], "~=") {
		t.Errorf("short lines %q, want two, with the checked fields and no volatile ones", short)
	}
	out, err := os.ReadFile(dir + "/ev/output.txt")
	if err != nil || !strings.Contains(string(out), "CASE late_response_dropped_by_id PASS A==DEADLINE_EXCEEDED aElapsed~=") {
		t.Errorf("evidence: %v, %q; want the whole CASE lines", err, out)
	}
}
