package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	t.Parallel()
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

// TestScorecardOnTerminal: on a 120-column terminal the scorecard is
// coloured and no line is wider than the terminal; with NO_COLOR set, or
// piped, it is plain.
func TestScorecardOnTerminal(t *testing.T) {
	evidence, err := filepath.Abs("../../evidence/grpc")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		noColor string
		tty     bool
		colour  bool
	}{{"terminal", "", true, true}, {"NO_COLOR", "1", true, false}, {"piped", "", false, false}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("TERM", "xterm")
			t.Setenv("NO_COLOR", tt.noColor)
			var got bytes.Buffer
			a := &app{Err: io.Discard}
			done := make(chan struct{})
			if tt.tty {
				master, tty := openPTY(t)
				a.Out = tty
				go func() { io.Copy(&got, master); close(done) }()
			} else {
				a.Out = &got
				close(done)
			}
			if err := runScorecard(&scorecardOptions{app: a, Evidence: evidence}); err != nil {
				t.Fatal(err)
			}
			if f, ok := a.Out.(*os.File); ok {
				f.Close() // the copy ends once the terminal is closed
			}
			<-done
			text := got.String()
			if has := strings.Contains(text, "\x1b[31;1mVIOLATED"); has != tt.colour {
				t.Errorf("coloured VIOLATED: got %t, want %t", has, tt.colour)
			}
			width := 100 // report.TerminalWidth's when not a terminal
			if tt.tty {
				width = 120
			}
			plain := regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(strings.ReplaceAll(text, "\r\n", "\n"), "")
			for _, l := range strings.Split(plain, "\n") {
				if n := len([]rune(l)); n > width {
					t.Errorf("%d columns, wider than %d: %q", n, width, l)
				}
			}
			if !strings.Contains(plain, "grpc-go 1.85.0") || !strings.Contains(plain, "connect-go 1.21.1") {
				t.Errorf("no table per stack:\n%s", plain)
			}
		})
	}
}
