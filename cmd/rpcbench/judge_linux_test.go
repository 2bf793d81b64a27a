package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/cut"
)

// walkthroughAdapter returns the adapter docs/judge-your-stack.md shows
// whole, and the same adapter with the doc's retry-once invoke planted
// in it, written outside the repository.
func walkthroughAdapter(t *testing.T) (honest, planted string) {
	t.Helper()
	doc, err := os.ReadFile("../../docs/judge-your-stack.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```python\n(.*?)```").FindAllSubmatch(doc, -1)
	if len(blocks) != 2 {
		t.Fatalf("docs/judge-your-stack.md has %d python blocks, want 2: the adapter and the retrying invoke", len(blocks))
	}
	src, retrying := string(blocks[0][1]), string(blocks[1][1])
	if n := strings.Count(src, "\n"); n > 125 {
		t.Errorf("the walkthrough's adapter is %d lines: keep it short enough to read whole", n)
	}
	start := strings.Index(src, "def invoke(")
	end := start + strings.Index(src[start:], "\n\n\ndef ")
	if start < 0 || end < start {
		t.Fatal("the walkthrough's adapter has no invoke function to plant the retry in")
	}
	bad := src[:start] + strings.TrimRight(retrying, "\n") + src[end:]
	dir := t.TempDir()
	honest, planted = filepath.Join(dir, "adapter.py"), filepath.Join(dir, "planted.py")
	for p, s := range map[string]string{honest: src, planted: bad} {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return honest, planted
}

// judgeRun runs the built rpcbench with args in dir and returns its exit
// status and output.
func judgeRun(t *testing.T, bin, dir string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("rpcbench %v: %v", args, err)
	}
	return code, out.String()
}

// TestJudgeUserAdapter judges the walkthrough's adapter, a grpcio client
// written outside the repository, end to end with no change to rpcbench:
// its column is in the evidence and the scorecard; --write-expect writes
// what the first run saw and a second run with those pins passes; a pin
// moved to where the invariant holds fails as stale; the adapter with a
// retry planted in it double-executes a debit, by the server's log, and
// fails; a pins file naming no scenario and a configuration that is not
// JSON are usage errors before anything runs; an adapter that does not
// speak the protocol is an ERROR naming it.
func TestJudgeUserAdapter(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-c", "import grpc").Run(); err != nil {
		if cut.Required() {
			t.Fatalf("Debian's python3-grpcio: %v; %s=1 demands it", err, cut.EnvRequire)
		}
		t.Skip("no grpcio for /usr/bin/python3: apt-get install python3-grpcio")
	}
	bin, _ := buildBinaries(t)
	honest, planted := walkthroughAdapter(t)
	dir := t.TempDir()
	sel := []string{"--run", "^grpc_close_after_exec_", "--config", "default", "--config", "retry", "--color", "never"}
	judgeArgs := func(extra ...string) []string {
		return append(append(append([]string{"judge", "--client"}, sel...), extra...), "--", "/usr/bin/python3")
	}

	code, out := judgeRun(t, bin, dir, append(judgeArgs("--write-expect", "pins.txt", "--summary", "summary.md"), honest)...)
	if code != 1 || !strings.Contains(out, "CASE grpc_close_after_exec_myclient_retry FAIL") || !strings.Contains(out, "executions=2") {
		t.Fatalf("first run: exit %d, want 1 with the retry column's double execution unpinned:\n%s", code, out)
	}
	pinsText := readFile(t, filepath.Join(dir, "pins.txt"))
	if !regexp.MustCompile(`(?m)^retry +grpc_close_after_exec +exec_at_most_once +# TODO`).MatchString(pinsText) || strings.Contains(pinsText, "default ") {
		t.Fatalf("pins.txt: want the retry column's exec_at_most_once alone:\n%s", pinsText)
	}
	ev := readFile(t, filepath.Join(dir, "rpcbench-judge", "output.txt"))
	if !strings.Contains(ev, "CASE grpc_close_after_exec_myclient_default PASS scenario=grpc_close_after_exec stack=my-client config=default") {
		t.Errorf("the evidence has no my-client column:\n%s", ev)
	}
	if env := readFile(t, filepath.Join(dir, "rpcbench-judge", "env.txt")); !strings.Contains(env, "my-client") {
		t.Errorf("env.txt does not name the judged adapter:\n%s", env)
	}
	if s := readFile(t, filepath.Join(dir, "summary.md")); !strings.Contains(s, "## rpcbench judge: FAILED") || !strings.Contains(s, "grpc_close_after_exec_myclient_retry") {
		t.Errorf("summary.md:\n%s", s)
	}
	if code, out := judgeRun(t, bin, dir, "scorecard", "rpcbench-judge", "--color", "never"); code != 0 || !strings.Contains(out, "my-client") {
		t.Errorf("scorecard of the judge's evidence: exit %d, want the my-client column:\n%s", code, out)
	}

	code, out = judgeRun(t, bin, dir, append(judgeArgs("--expect", "pins.txt", "--evidence", ""), honest)...)
	if code != 0 || !strings.Contains(out, "CASE grpc_close_after_exec_myclient_retry FINDING") {
		t.Fatalf("second run with the pins written: exit %d, want 0 and a FINDING:\n%s", code, out)
	}

	code, out = judgeRun(t, bin, dir, append(judgeArgs("--expect", "pins.txt", "--evidence", ""), planted)...)
	if code != 1 || !regexp.MustCompile(`CASE grpc_close_after_exec_myclient_default FAIL .*executions=2 .*exec_at_most_once:=violated`).MatchString(out) {
		t.Fatalf("the planted retry: exit %d, want 1 with the default column executed twice:\n%s", code, out)
	}

	stale := regexp.MustCompile(`(?m)^retry( +grpc_close_after_exec)`).ReplaceAllString(pinsText, "default$1")
	if stale == pinsText {
		t.Fatalf("could not move the pin in:\n%s", pinsText)
	}
	if err := os.WriteFile(filepath.Join(dir, "stale.txt"), []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out = judgeRun(t, bin, dir, append(judgeArgs("--expect", "stale.txt", "--evidence", ""), honest)...)
	if code != 1 || !strings.Contains(out, "stale pin: stale.txt:") {
		t.Fatalf("a stale pin: exit %d, want 1 naming it:\n%s", code, out)
	}

	bad := map[string]string{
		"unknown.txt": "retry grpc_no_such_scenario exec_at_most_once # x\n",
		"config.json": "{\n  \"name\": \"x\",\n  \"retries\": 3\n}\n",
	}
	for name, text := range bad {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out = judgeRun(t, bin, dir, append(judgeArgs("--expect", "unknown.txt", "--evidence", ""), honest)...)
	if code != 2 || !strings.Contains(out, `unknown.txt:1: no grpc scenario "grpc_no_such_scenario"`) || strings.Contains(out, "CASE") {
		t.Errorf("a pin naming no scenario: exit %d, want 2 naming the file and line before any case:\n%s", code, out)
	}
	code, out = judgeRun(t, bin, dir, "judge", "--client", "--config", "config.json", "--evidence", "", "--", "/usr/bin/python3", honest)
	if code != 2 || !strings.Contains(out, `config.json:3: unknown key "retries"`) || strings.Contains(out, "CASE") {
		t.Errorf("a configuration with an unknown key: exit %d, want 2 naming the file and line:\n%s", code, out)
	}
	code, out = judgeRun(t, bin, dir, "judge", "--client", "--evidence", "", "--", "/bin/sh", "-c", "read x; echo not-json; echo 'my adapter broke' >&2")
	if code != 1 || !strings.Contains(out, "ERROR") || !strings.Contains(out, "/bin/sh -c") || !strings.Contains(out, "my adapter broke") || strings.Contains(out, "PASS") {
		t.Errorf("an adapter that breaks the protocol: exit %d, want 1, an ERROR naming it and its stderr:\n%s", code, out)
	}
}

// TestJudgeConfigAndServer judges the shipped grpc-go adapter as a
// user's: in the walkthrough's configuration that retries CANCELLED and
// INTERNAL too, a debit executes twice after the resets that surface as
// those codes, under that configuration's own column, where the built-in
// retry column executes it once; with the pins --write-expect wrote,
// they are findings. Its serve mode, given as --server, is judged beside
// rpcserver.
func TestJudgeConfigAndServer(t *testing.T) {
	st := cut.Stacks()[0]
	adapter, _, err := st.Find(t.Context(), filepath.Join("..", "..", "bin"))
	if err != nil {
		if cut.Required() {
			t.Fatalf("%v; %s=1 demands it", err, cut.EnvRequire)
		}
		t.Skip(err)
	}
	bin, _ := buildBinaries(t)
	dir := t.TempDir()
	cfg, err := filepath.Abs("../../docs/judge-your-stack/retry-cancelled.json")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"judge", "--client", "--config", "retry", "--config", cfg, "--run", "^grpc_rst_(cancel|protocol|internal)_after_exec_",
		"--evidence", "", "--color", "never"}
	code, out := judgeRun(t, bin, dir, append(args, "--write-expect", "pins.txt", "--", adapter)...)
	for _, sc := range []string{"grpc_rst_cancel_after_exec", "grpc_rst_protocol_after_exec", "grpc_rst_internal_after_exec"} {
		if !regexp.MustCompile(`CASE `+sc+`_grpcgo_retrycancelled FAIL .*config=retry-cancelled .*executions=2 .*exec_at_most_once:=violated`).MatchString(out) ||
			!regexp.MustCompile(`CASE `+sc+`_grpcgo_retry \S+ .*executions=1 .*exec_at_most_once:=holds`).MatchString(out) {
			t.Errorf("%s: want two executions under retry-cancelled and one under retry", sc)
		}
	}
	if code != 1 || t.Failed() {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	written := readFile(t, filepath.Join(dir, "pins.txt"))
	reasoned := strings.ReplaceAll(written, "TODO: why grpc-go does this", "retryableStatusCodes has the code a reset after execution surfaces as")
	if err := os.WriteFile(filepath.Join(dir, "pins.txt"), []byte(reasoned), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out = judgeRun(t, bin, dir, append(args, "--expect", "pins.txt", "--write-expect", "again.txt", "--", adapter)...)
	if code != 0 || strings.Count(out, "_grpcgo_retrycancelled FINDING") != 3 {
		t.Fatalf("with the pins written: exit %d, want 0 and three findings:\n%s", code, out)
	}
	if again := readFile(t, filepath.Join(dir, "again.txt")); strings.Contains(again, "# TODO") || strings.Count(again, "retryableStatusCodes has") != strings.Count(reasoned, "retryableStatusCodes has") {
		t.Errorf("--write-expect with --expect: want each pin's reason kept:\n%s", again)
	}
	// A run narrowed to retry rewrites retry's pins and keeps the others.
	narrow := []string{"judge", "--client", "--config", "retry", "--run", "^grpc_rst_(cancel|protocol|internal)_after_exec_", "--evidence", "", "--color", "never",
		"--expect", "again.txt", "--write-expect", "narrow.txt", "--", adapter}
	if code, out := judgeRun(t, bin, dir, narrow...); code != 0 {
		t.Fatalf("a narrowed run: exit %d:\n%s", code, out)
	}
	if n := readFile(t, filepath.Join(dir, "narrow.txt")); strings.Count(n, "retry-cancelled ") != 3 {
		t.Errorf("a run narrowed to retry dropped retry-cancelled's pins:\n%s", n)
	}

	code, out = judgeRun(t, bin, dir, "judge", "--server", "--run", "^grpcserver_cancel_stops_handler_", "--evidence", "", "--color", "never", "--", adapter, "serve")
	if code != 0 || !strings.Contains(out, "CASE grpcserver_cancel_stops_handler_rpcserver PASS") || !strings.Contains(out, "CASE grpcserver_cancel_stops_handler_grpcgo PASS") {
		t.Fatalf("--server: exit %d, want rpcserver's column and the adapter's:\n%s", code, out)
	}
}

// TestActionScript runs the GitHub Action's judge step (action/judge.sh)
// as action.yml runs it, on the walkthrough's adapter with the action's
// inputs as INPUT_* variables: it passes with a pins file, and writes
// the Markdown summary to $GITHUB_STEP_SUMMARY. Every input action.yml
// declares reaches the script or the install step.
func TestActionScript(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-c", "import grpc").Run(); err != nil {
		if cut.Required() {
			t.Fatalf("Debian's python3-grpcio: %v; %s=1 demands it", err, cut.EnvRequire)
		}
		t.Skip("no grpcio for /usr/bin/python3: apt-get install python3-grpcio")
	}
	action := readFile(t, "../../action.yml")
	script, err := filepath.Abs("../../action/judge.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(action, `"$GITHUB_ACTION_PATH/action/judge.sh"`) {
		t.Errorf("action.yml does not run action/judge.sh")
	}
	text := readFile(t, script)
	for _, m := range regexp.MustCompile(`(?m)^  ([a-z]+):\n    description:`).FindAllStringSubmatch(action, -1) {
		in := m[1]
		if in == "version" {
			if !strings.Contains(action, "${{ inputs.version }}") {
				t.Errorf("input version is not used")
			}
			continue
		}
		env := "INPUT_" + strings.ToUpper(in)
		if !strings.Contains(action, env+": ${{ inputs."+in+" }}") || !strings.Contains(text, env) {
			t.Errorf("input %s does not reach action/judge.sh as %s", in, env)
		}
	}
	bin, _ := buildBinaries(t)
	honest, _ := walkthroughAdapter(t)
	dir := t.TempDir()
	pinsFile := filepath.Join(dir, "pins.txt")
	if err := os.WriteFile(pinsFile, []byte("retry grpc_close_after_exec exec_at_most_once  # the policy retries UNAVAILABLE, which a closed connection surfaces as\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	summary := filepath.Join(dir, "summary.md")
	cmd := exec.CommandContext(t.Context(), script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "RPCBENCH="+bin, "GITHUB_STEP_SUMMARY="+summary,
		"INPUT_CLIENT=/usr/bin/python3 "+honest, "INPUT_CONFIGS=\n  default\nretry  \n", "INPUT_EXPECT="+pinsFile,
		"INPUT_RUN=^grpc_close_after_exec_", "INPUT_EVIDENCE=ev")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("action/judge.sh: %v\n%s", err, out)
	}
	s := readFile(t, summary)
	if !strings.Contains(s, "## rpcbench judge: passed") || !strings.Contains(s, "my-client") || !strings.Contains(s, "client configurations: default, retry") {
		t.Errorf("the job summary:\n%s", s)
	}
	if _, err := os.Stat(filepath.Join(dir, "ev", "output.txt")); err != nil {
		t.Errorf("no evidence where INPUT_EVIDENCE says: %v", err)
	}
}
