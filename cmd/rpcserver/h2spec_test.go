package main

import (
	"bufio"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/cut"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// envH2Spec is h2spec's path for TestH2Spec; unset, it looks in the
// repository's bin/, where ./build.sh puts it.
const envH2Spec = "RPCBENCH_H2SPEC"

// knownFailures is the file of the h2spec tests rpcserver -grpc does not
// pass, each with its reason.
var knownFailures = filepath.Join("..", "..", "internal", "grpcwire", "h2spec-known-failures.txt")

// TestH2Spec runs h2spec (every test of its http2, hpack and generic
// suites) against rpcserver -grpc and holds its results to
// internal/grpcwire/h2spec-known-failures.txt: a test failing that the
// file does not list fails, and so does a listed one that passes (the
// entry is stale: delete it). Every run's failures are printed with
// h2spec's own report of what it expected.
func TestH2Spec(t *testing.T) {
	bin := h2specBin(t)
	known, err := readKnown(knownFailures)
	if err != nil {
		t.Fatal(err)
	}
	addr := startGRPCServer(t)
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(t.TempDir(), "h2spec.xml")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// -o 1: a test waits at most 1 s for what it expects. The server
	// answers each in milliseconds, so only a failing test waits it out.
	cmd := exec.CommandContext(ctx, bin, "-h", "127.0.0.1", "-p", port, "-P", "/rpcbench.bank.v1.Bank/Get", "-o", "1", "-j", report)
	cmd.Cancel = func() error { return cmd.Process.Kill() }
	cmd.WaitDelay = 5 * time.Second
	out, runErr := cmd.CombinedOutput()
	// h2spec exits 1 when a test fails: the report says which.
	got, err := readReport(report)
	if err != nil {
		t.Fatalf("h2spec wrote no report (%v): %v\n%s", runErr, err, out)
	}
	if len(got) == 0 {
		t.Fatalf("h2spec ran no test (%v)\n%s", runErr, out)
	}
	bad := false
	for _, id := range sortedIDs(got) {
		r := got[id]
		reason, listed := known[id]
		switch {
		case r.outcome == outcomePass && listed:
			t.Errorf("%s (%s) passes, but %s lists it (%q): delete the stale entry", id, r.desc, knownFailures, reason)
		case r.outcome == outcomeFail && !listed:
			t.Errorf("%s (%s) fails: %s", id, r.desc, r.detail)
			bad = true
		case r.outcome == outcomeSkip:
			t.Errorf("%s (%s) was skipped: h2spec could not run it against this server", id, r.desc)
		}
	}
	for id, reason := range known {
		if _, ran := got[id]; !ran {
			t.Errorf("%s lists %s (%q), which h2spec did not run", knownFailures, id, reason)
		}
	}
	if bad {
		t.Logf("h2spec's output:\n%s", out)
	}
}

// h2specBin returns h2spec's path, or skips the test saying how to build
// it; with RPCBENCH_REQUIRE_ADAPTERS=1 (CI, which builds bin/ first) it
// fails instead.
func h2specBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv(envH2Spec)
	if bin == "" {
		bin = filepath.Join("..", "..", "bin", "h2spec")
	}
	if _, err := os.Stat(bin); err != nil {
		msg := "no h2spec at " + bin + ": build it with ./build.sh (or set " + envH2Spec + ")"
		if cut.Required() {
			t.Fatal(msg + " (" + cut.EnvRequire + "=1)")
		}
		t.Skip(msg)
	}
	return bin
}

// startGRPCServer runs rpcserver -grpc in-process, as TestGRPCMode does,
// and returns its address; the cleanup stops it with SIGTERM and waits.
func startGRPCServer(t *testing.T) string {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "server.log")
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"-log", logPath, "-grpc"}, pw, io.Discard)
		pw.Close()
	}()
	t.Cleanup(func() {
		syscall.Kill(os.Getpid(), syscall.SIGTERM)
		awaitExit0(t, done, "SIGTERM")
	})
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), serverapi.AnnouncePrefix)
	if !ok {
		t.Fatalf("announce line = %q, want prefix %q", line, serverapi.AnnouncePrefix)
	}
	return addr
}

// outcome is one h2spec test's result.
type outcome string

const (
	outcomePass outcome = "pass"
	outcomeFail outcome = "fail"
	outcomeSkip outcome = "skip"
)

// result is one h2spec test's outcome, its description and, for a
// failure, what h2spec expected and saw.
type result struct {
	outcome outcome
	desc    string
	detail  string
}

// junit is the part of h2spec's JUnit report (-j) the test reads: one
// testsuite per section ("http2/5.1"), its testcases in h2spec's order,
// so the nth is the test h2spec names SECTION/n (as its own spec
// arguments do: h2spec http2/5.1/3).
type junit struct {
	Suites []struct {
		Package string `xml:"package,attr"`
		Cases   []struct {
			Desc    string    `xml:"classname,attr"`
			Error   *xmlText  `xml:"error"`
			Failure *xmlText  `xml:"failure"`
			Skipped *struct{} `xml:"skipped"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

type xmlText struct {
	Text string `xml:",chardata"`
}

// readReport decodes h2spec's JUnit report into results by test ID.
func readReport(path string) (map[string]result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var j junit
	if err := xml.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	got := make(map[string]result)
	for _, s := range j.Suites {
		for i, c := range s.Cases {
			r := result{outcome: outcomePass, desc: c.Desc}
			switch {
			case c.Error != nil:
				r.outcome, r.detail = outcomeFail, failureText(c.Error.Text)
			case c.Failure != nil:
				r.outcome, r.detail = outcomeFail, failureText(c.Failure.Text)
			case c.Skipped != nil:
				r.outcome = outcomeSkip
			}
			got[s.Package+"/"+strconv.Itoa(i+1)] = r
		}
	}
	return got, nil
}

// failureText puts a failure's text from the report, the frames h2spec
// expected a line each and then the one it got, as got X, want Y.
func failureText(text string) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	last := len(lines) - 1
	if last == 0 {
		return lines[0]
	}
	return "got " + lines[last] + ", want " + strings.Join(lines[:last], " or ")
}

// readKnown reads the known-failures file: one test ID and its reason
// a line; blank lines and lines starting with # are comments.
func readKnown(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	known := make(map[string]string)
	for n, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, reason, _ := strings.Cut(line, " ")
		reason = strings.TrimSpace(reason)
		switch {
		case strings.Count(id, "/") < 2:
			return nil, fmt.Errorf("%s:%d: %q is not an h2spec test ID (http2/5.1.2/1)", path, n+1, id)
		case reason == "":
			return nil, fmt.Errorf("%s:%d: %s has no reason", path, n+1, id)
		case known[id] != "":
			return nil, fmt.Errorf("%s:%d: %s listed twice", path, n+1, id)
		}
		known[id] = reason
	}
	return known, nil
}

// sortedIDs returns the IDs of got in order.
func sortedIDs(got map[string]result) []string {
	ids := make([]string, 0, len(got))
	for id := range got {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
