package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/rpcbench/rpcbench/internal/conform"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/server"
	"github.com/rpcbench/rpcbench/internal/servertest"
)

// noLeaks fails the test if it leaves goroutines behind. Called first, its
// check runs after every later cleanup, the servers' included.
func noLeaks(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}

// junitReport is the part of a JUnit file a CI system reads.
type junitReport struct {
	Suites []struct {
		Name     string `xml:"name,attr"`
		Tests    int    `xml:"tests,attr"`
		Failures int    `xml:"failures,attr"`
		Cases    []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
			} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// readJUnit parses path and returns its one suite's failure messages by
// test case name ("" for a case that passed).
func readJUnit(t *testing.T, path string) (name string, tests, failures int, cases map[string]string) {
	t.Helper()
	var r junitReport
	if err := xml.Unmarshal([]byte(readFile(t, path)), &r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(r.Suites) != 1 {
		t.Fatalf("%s has %d test suites, want 1", path, len(r.Suites))
	}
	s := r.Suites[0]
	cases = map[string]string{}
	for _, c := range s.Cases {
		cases[c.Name] = ""
		if c.Failure != nil {
			cases[c.Name] = c.Failure.Message
		}
	}
	return s.Name, s.Tests, s.Failures, cases
}

// checkLines returns stdout's CHECK lines by check name, verdict and
// detail, and its last line.
func checkLines(t *testing.T, stdout string) (map[string][2]string, string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	out := map[string][2]string{}
	for _, l := range lines[:len(lines)-1] {
		f := strings.SplitN(l, " ", 4)
		if len(f) < 3 || f[0] != "CHECK" {
			t.Fatalf("stdout line %q is not a CHECK line", l)
		}
		out[f[1]] = [2]string{f[2], strings.Join(f[3:], "")}
	}
	return out, lines[len(lines)-1]
}

// TestConformRealServer: the project's own server passes every check;
// the exit status is 0 and the JUnit file records no failure.
func TestConformRealServer(t *testing.T) {
	noLeaks(t)
	_, addr := servertest.Start(t, server.DefaultConfig())
	junit := filepath.Join(t.TempDir(), "conform.xml")
	var stdout, stderr bytes.Buffer
	code := execute(context.Background(), []string{"conform", addr, "--junit", junit}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitOK, stdout.String(), stderr.String())
	}
	lines, summary := checkLines(t, stdout.String())
	n := len(conform.Checks()) - 1 // drain_finishes_taken runs with --drain only
	if len(lines) != n {
		t.Errorf("%d CHECK lines, want %d:\n%s", len(lines), n, stdout.String())
	}
	for name, l := range lines {
		if l[0] != report.Pass.String() {
			t.Errorf("CHECK %s %s %s, want PASS", name, l[0], l[1])
		}
	}
	if want := "11 passed, 0 failed"; summary != want {
		t.Errorf("summary %q, want %q", summary, want)
	}
	if !strings.Contains(stderr.String(), "conform: checked "+addr) {
		t.Errorf("stderr = %q, want it to name the address checked", stderr.String())
	}
	suite, tests, failures, cases := readJUnit(t, junit)
	if suite != "conform" || tests != n || failures != 0 || len(cases) != n {
		t.Errorf("JUnit suite %q tests=%d failures=%d cases=%d, want %q, %d, 0, %d", suite, tests, failures, len(cases), "conform", n, n)
	}
}

// TestConformFaultyServer: a server that answers every debit UNAVAILABLE
// fails exactly the checks that need a debit to execute; the exit status
// is 1, and each failure is in the JUnit file with its detail as message.
func TestConformFaultyServer(t *testing.T) {
	noLeaks(t)
	_, addr := servertest.Start(t, server.DefaultConfig(), "kind=unavailable method=debit")
	junit := filepath.Join(t.TempDir(), "conform.xml")
	var stdout, stderr bytes.Buffer
	code := execute(context.Background(), []string{"conform", addr, "--junit", junit}, &stdout, &stderr)
	if code != exitFailed {
		t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitFailed, stdout.String(), stderr.String())
	}
	lines, summary := checkLines(t, stdout.String())
	wantFailed := map[string]bool{
		"bad_frame_closes_connection":  true,
		"expired_keeps_key_free":       true,
		"idempotent_replay":            true,
		"key_reuse_refused":            true,
		"duplicate_waits_for_original": true,
	}
	gotFailed := map[string]bool{}
	for name, l := range lines {
		if l[0] == report.Fail.String() {
			gotFailed[name] = true
		}
	}
	if diff := cmp.Diff(wantFailed, gotFailed); diff != "" {
		t.Errorf("failed checks (-want +got):\n%s\nstdout:\n%s", diff, stdout.String())
	}
	if want := "6 passed, 5 failed"; summary != want {
		t.Errorf("summary %q, want %q", summary, want)
	}
	if want := "injected unavailable"; !strings.Contains(lines["idempotent_replay"][1], want) {
		t.Errorf("idempotent_replay detail %q, want it to say %q", lines["idempotent_replay"][1], want)
	}

	_, tests, failures, cases := readJUnit(t, junit)
	if tests != len(lines) || failures != len(wantFailed) {
		t.Errorf("JUnit tests=%d failures=%d, want %d, %d", tests, failures, len(lines), len(wantFailed))
	}
	for name, l := range lines {
		want := ""
		if l[0] == report.Fail.String() {
			want = l[1]
		}
		if got, ok := cases[name]; !ok || got != want {
			t.Errorf("JUnit case %s: failure message %q (present %t), want %q", name, got, ok, want)
		}
	}
}

// TestConformUsage: a usage error, an unwritable --junit file or a
// server that does not answer ctl.ping OK exits 2 without running a
// check, saying what is wrong, and leaves no JUnit file behind.
func TestConformUsage(t *testing.T) {
	noLeaks(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	junit := filepath.Join(dir, "conform.xml")
	// HTTP servers, as someone may point conform at by mistake. nginx
	// answers 400 to the first byte that cannot start a request; Go's
	// server waits for a whole request line, which a frame need not hold.
	nginx := answerOnce(t, "HTTP/1.1 400 Bad Request\r\nServer: nginx\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n<html>")
	web := httptest.NewServer(http.NotFoundHandler())
	defer web.Close()
	goHTTP := web.Listener.Addr().String()

	tests := []struct {
		name    string
		args    []string
		wantErr []string
	}{
		{"no address", []string{"conform"}, []string{"conform takes one argument, the address of the server to check (got 0)", "rpcbench conform ADDR"}},
		{"two addresses", []string{"conform", "a:1", "b:2"}, []string{"(got 2)"}},
		{"malformed address", []string{"conform", "notanaddr"}, []string{`ADDR "notanaddr": missing port in address`, "ADDR is host:port"}},
		{"port not a number", []string{"conform", "127.0.0.1:port"}, []string{`ADDR "127.0.0.1:port": port "port" is not a number from 1 to 65535`}},
		{"a list of addresses", []string{"conform", refused + "," + refused}, []string{`ADDR "` + refused + "," + refused + `": conform checks one server, not a list of 2`}},
		{"short timeout", []string{"conform", refused, "--timeout", "10ms"}, []string{"timeout 10ms must be at least 100ms"}},
		{"bad timeout", []string{"conform", refused, "--timeout", "soon"}, []string{`invalid argument "soon" for "--timeout"`}},
		{"junit not writable", []string{"conform", refused, "--junit", filepath.Join(dir, "missing", "x.xml")}, []string{"--junit " + filepath.Join(dir, "missing", "x.xml")}},
		{"refused", []string{"conform", refused, "--junit", junit, "--timeout", "1s"}, []string{"conform: " + refused + ": connection refused"}},
		{"an http server that answers", []string{"conform", nginx, "--junit", junit, "--timeout", "1s"}, []string{"conform: " + nginx + `: answered ctl.ping with bytes that look like HTTP ("HTTP/1.1 400 Bad Request"): is this an HTTP server?`}},
		{"an http server that waits", []string{"conform", goHTTP, "--junit", junit, "--timeout", "1s"}, []string{"conform: " + goHTTP + ": accepted the connection but did not answer ctl.ping within 1s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := execute(context.Background(), tt.args, &stdout, &stderr)
			if code != exitError {
				t.Errorf("exit code %d, want %d", code, exitError)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr =\n%s\nwant it to contain %q", stderr.String(), want)
				}
			}
			if strings.Contains(stdout.String(), "CHECK") {
				t.Errorf("stdout = %q, want no CHECK line", stdout.String())
			}
		})
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("%s holds %v, want nothing: no JUnit file for a run that checked nothing", dir, entries)
	}
}

// answerOnce serves a fresh loopback port until the test ends: each
// connection is read once, answered with answer and closed.
func answerOnce(t *testing.T, answer string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// One at a time: the test's clients take turns.
			c.Read(make([]byte, 512))
			c.Write([]byte(answer))
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// TestConformInterrupted: a run stopped by a signal exits 128 plus the
// signal and writes no summary.
func TestConformInterrupted(t *testing.T) {
	noLeaks(t)
	_, addr := servertest.Start(t, server.DefaultConfig())
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&signalError{syscall.SIGTERM})
	var stdout, stderr bytes.Buffer
	code := execute(ctx, []string{"conform", addr}, &stdout, &stderr)
	if code != 128+int(syscall.SIGTERM) {
		t.Errorf("exit code %d, want %d\nstderr:\n%s", code, 128+int(syscall.SIGTERM), stderr.String())
	}
	if strings.Contains(stdout.String(), "passed") {
		t.Errorf("stdout = %q, want no summary", stdout.String())
	}
}

// TestConformColor: a CHECK line's verdict is coloured as a CASE line's
// is, only when colour is on.
func TestConformColor(t *testing.T) {
	noLeaks(t)
	_, addr := servertest.Start(t, server.DefaultConfig())
	tests := []struct {
		mode report.ColorMode
		want string
	}{
		{report.ColorAlways, "CHECK framing_byte_by_byte \x1b[32mPASS\x1b[0m "},
		{report.ColorNever, "CHECK framing_byte_by_byte PASS "},
	}
	for _, tt := range tests {
		t.Run(tt.mode.String(), func(t *testing.T) {
			a, stdout, stderr := testApp(t)
			a.Color = tt.mode
			o := &conformOptions{app: a, Addr: addr, Timeout: conform.DefaultTimeout}
			if code, errText := outcome(runConform(context.Background(), o), stderr); code != exitOK {
				t.Fatalf("got exit code %d, want 0\nstderr:\n%s", code, errText)
			}
			if !strings.Contains(stdout.String(), tt.want) {
				t.Errorf("got stdout\n%q\nwant it to contain %q", stdout.String(), tt.want)
			}
			if tt.mode == report.ColorNever && strings.Contains(stdout.String(), "\x1b[") {
				t.Errorf("got stdout\n%q\nwant no colour", stdout.String())
			}
		})
	}
}

// TestConformJUnitStdout: --junit - writes the JUnit XML to stdout, alone,
// and the CHECK lines and summary to stderr; no file named - appears.
func TestConformJUnitStdout(t *testing.T) {
	noLeaks(t)
	_, addr := servertest.Start(t, server.DefaultConfig())
	t.Chdir(t.TempDir())
	var stdout, stderr bytes.Buffer
	code := execute(context.Background(), []string{"conform", addr, "--junit", "-"}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitOK, stdout.String(), stderr.String())
	}
	if _, err := os.Stat("-"); err == nil {
		t.Errorf("wrote a file named -")
	}
	var r junitReport
	if err := xml.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("stdout is not JUnit XML: %v\n%s", err, stdout.String())
	}
	n := len(conform.Checks()) - 1 // drain_finishes_taken runs with --drain only
	if len(r.Suites) != 1 || len(r.Suites[0].Cases) != n {
		t.Errorf("stdout holds %d suites, want 1 of %d cases:\n%s", len(r.Suites), n, stdout.String())
	}
	if got := strings.Count(stderr.String(), "CHECK "); got != n || !strings.Contains(stderr.String(), "11 passed, 0 failed") {
		t.Errorf("stderr holds %d CHECK lines, want %d and the summary:\n%s", got, n, stderr.String())
	}
}
