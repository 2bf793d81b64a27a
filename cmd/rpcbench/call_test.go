package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/server"
	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/servertest"
	"github.com/rpcbench/rpcbench/internal/trace"
)

// healthy are flags that keep a healthy local answer from timing out,
// even under the race detector on a loaded machine (as
// servertest.ClientConfig does). A test's own flags come after them, and
// the last value of a flag wins.
var healthy = []string{"--attempt-timeout", "2s", "--timeout", "5s"}

// callArgs returns the arguments of rpcbench call ADDR with healthy's
// flags before args.
func callArgs(addr string, args ...string) []string {
	return append(append([]string{"call", addr}, healthy...), args...)
}

// deadAddr returns a loopback address nothing listens on: a port the
// kernel just handed out and that was closed again.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// callLines checks text line by line against patterns, each a regular
// expression that must match its whole line.
func callLines(t *testing.T, stream, text string, patterns []string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if text == "" {
		lines = nil
	}
	if len(lines) != len(patterns) {
		t.Errorf("%s has %d lines, want %d:\n%s", stream, len(lines), len(patterns), text)
		return
	}
	for i, p := range patterns {
		if !regexp.MustCompile("^(?:" + p + ")$").MatchString(lines[i]) {
			t.Errorf("%s line %d = %q, want it to match %q", stream, i+1, lines[i], p)
		}
	}
}

// TestCall drives `rpcbench call` through the real command tree against
// a real in-process server.
func TestCall(t *testing.T) {
	tests := []struct {
		name   string
		faults []string
		// args follow "call ADDR"; deadSep, when set, puts an address
		// nothing listens on before the server's, separated by it.
		args     []string
		deadSep  string
		wantCode int
		wantOut  []string // stdout, line patterns
		wantLog  []string // stderr, line patterns
		// counters are the server's counters after the call.
		counters map[string]int64
	}{
		{
			name:     "ok get",
			args:     []string{"get", "account=a", "--idempotent"},
			wantCode: exitOK,
			wantOut:  []string{`account=a balance=1000 budget=\d+ exec=0 replayed=false`},
			wantLog: []string{
				`a1 RESPONSE status=OK id=1 budget=\d+ class=FINAL`,
				`status=OK attempts=1 stop=final elapsed=\S+`,
			},
			counters: map[string]int64{"exec.get": 1},
		},
		{
			name:     "keyless debit unanswered is unknown after one attempt",
			faults:   []string{"kind=noreply method=debit count=1"},
			args:     []string{"debit", "account=a amount=10", "--attempt-timeout", "200ms"},
			wantCode: exitUnknown,
			wantLog: []string{
				`a1 TIMEOUT err="context deadline exceeded" id=1 budget=\d+ class=OUTCOME_UNKNOWN`,
				`status=UNKNOWN attempts=1 stop=outcome_unknown_not_retryable elapsed=\S+ err="context deadline exceeded"`,
				`UNKNOWN: the request may or may not have executed; find out whether it did before re-sending it, and send a debit with --key so that the client can retry it safely`,
			},
			// It did execute: UNKNOWN is the truth, and not re-sending it
			// kept it to once.
			counters: map[string]int64{"exec.debit": 1, "requests.debit": 1},
		},
		{
			// A get is safe to repeat: the fix is --idempotent, not a key.
			name:     "keyless get unanswered is unknown, and the hint says --idempotent",
			faults:   []string{"kind=noreply method=get count=1"},
			args:     []string{"get", "account=a", "--attempt-timeout", "200ms"},
			wantCode: exitUnknown,
			wantLog: []string{
				`a1 TIMEOUT err="context deadline exceeded" id=1 budget=\d+ class=OUTCOME_UNKNOWN`,
				`status=UNKNOWN attempts=1 stop=outcome_unknown_not_retryable elapsed=\S+ err="context deadline exceeded"`,
				`UNKNOWN: the request may or may not have executed; a get is safe to repeat: re-send it, with --idempotent so that the client retries it by itself`,
			},
		},
		{
			name:   "keyed debit unanswered is retried and replayed",
			faults: []string{"kind=noreply method=debit count=1"},
			// The retry must be answered within one attempt: a generous
			// attempt timeout keeps a loaded machine from adding a third.
			args:     []string{"debit", "account=a amount=10", "--key", "k1", "--attempt-timeout", "1s"},
			wantCode: exitOK,
			wantOut:  []string{`account=a balance=990 budget=\d+ exec=1 replayed=true`},
			wantLog: []string{
				`a1 TIMEOUT err="context deadline exceeded" id=1 budget=\d+ class=OUTCOME_UNKNOWN backoff=\d+ms`,
				`a2 RESPONSE status=OK id=2 budget=\d+ class=FINAL`,
				`status=OK attempts=2 stop=final elapsed=\S+`,
			},
			counters: map[string]int64{"exec.debit": 1, "requests.debit": 2, "dedup_hits": 1},
		},
		{
			name:     "idempotent get unanswered is retried",
			faults:   []string{"kind=noreply method=get count=1"},
			args:     []string{"get", "account=a", "--idempotent", "--attempt-timeout", "1s"},
			wantCode: exitOK,
			wantOut:  []string{`account=a balance=1000 budget=\d+ exec=0 replayed=false`},
			wantLog: []string{
				`a1 TIMEOUT err="context deadline exceeded" id=1 budget=\d+ class=OUTCOME_UNKNOWN backoff=\d+ms`,
				`a2 RESPONSE status=OK id=2 budget=\d+ class=FINAL`,
				`status=OK attempts=2 stop=final elapsed=\S+`,
			},
			counters: map[string]int64{"exec.get": 2},
		},
		{
			name:     "bad payload is INVALID_ARGUMENT",
			args:     []string{"debit", "account=a"},
			wantCode: exitFailed,
			wantOut:  []string{`amount must be a positive integer`},
			wantLog: []string{
				`a1 RESPONSE status=INVALID_ARGUMENT id=1 budget=\d+ class=FINAL`,
				`status=INVALID_ARGUMENT attempts=1 stop=final elapsed=\S+`,
			},
			counters: map[string]int64{"exec.debit": 0},
		},
		{
			name:     "insufficient funds is APP_ERROR",
			args:     []string{"debit", "account=a amount=5000"},
			wantCode: exitFailed,
			wantOut:  []string{`insufficient funds`},
			wantLog: []string{
				`a1 RESPONSE status=APP_ERROR id=1 budget=\d+ class=FINAL`,
				`status=APP_ERROR attempts=1 stop=final elapsed=\S+`,
			},
		},
		{
			name:     "unavailable is retried, whatever the call",
			faults:   []string{"kind=unavailable method=debit count=1"},
			args:     []string{"debit", "account=a amount=10", "--jitter", "0"},
			wantCode: exitOK,
			wantOut:  []string{`account=a balance=990 budget=\d+ exec=1 replayed=false`},
			wantLog: []string{
				`a1 RESPONSE status=UNAVAILABLE id=1 budget=\d+ class=NOT_EXECUTED backoff=20ms`,
				`a2 RESPONSE status=OK id=2 budget=\d+ class=FINAL`,
				`status=OK attempts=2 stop=final elapsed=\S+`,
			},
			counters: map[string]int64{"exec.debit": 1},
		},
		{
			name:     "unavailable every time runs out of retries",
			faults:   []string{"kind=unavailable method=get"},
			args:     []string{"get", "account=a", "--retries", "1", "--jitter", "0"},
			wantCode: exitFailed,
			// client.Result keeps no payload from an answer that is not
			// FINAL, so "injected unavailable" cannot be shown.
			wantOut: nil,
			wantLog: []string{
				`a1 RESPONSE status=UNAVAILABLE id=1 budget=\d+ class=NOT_EXECUTED backoff=20ms`,
				`a2 RESPONSE status=UNAVAILABLE id=2 budget=\d+ class=NOT_EXECUTED`,
				`status=UNAVAILABLE attempts=2 stop=max_attempts elapsed=\S+`,
			},
			counters: map[string]int64{"exec.get": 0},
		},
		{
			name:     "fails over from a dead address",
			deadSep:  ",",
			args:     []string{"get", "account=a", "--jitter", "0"},
			wantCode: exitOK,
			wantOut:  []string{`account=a balance=1000 budget=\d+ exec=0 replayed=false`},
			wantLog: []string{
				`a1 CONNECT_FAILED err=".*connection refused" id=0 budget=\d+ class=NOT_SENT backoff=20ms addr=127\.0\.0\.1:\d+`,
				`a2 RESPONSE status=OK id=1 budget=\d+ class=FINAL addr=127\.0\.0\.1:\d+`,
				`status=OK attempts=2 stop=final elapsed=\S+`,
			},
		},
		{
			// "a:1, b:2" as a person types it: the space is not part of
			// the second address.
			name:     "fails over from a dead address, a space after the comma",
			deadSep:  ", ",
			args:     []string{"get", "account=a", "--jitter", "0"},
			wantCode: exitOK,
			wantOut:  []string{`account=a balance=1000 budget=\d+ exec=0 replayed=false`},
			wantLog: []string{
				`a1 CONNECT_FAILED err=".*connection refused" id=0 budget=\d+ class=NOT_SENT backoff=20ms addr=127\.0\.0\.1:\d+`,
				`a2 RESPONSE status=OK id=1 budget=\d+ class=FINAL addr=127\.0\.0\.1:\d+`,
				`status=OK attempts=2 stop=final elapsed=\S+`,
			},
		},
		{
			name:     "ctl.fault adds a rule",
			args:     []string{"ctl.fault", "kind=noreply count=1"},
			wantCode: exitOK,
			wantOut:  []string{`kind=noreply count=1`},
			wantLog: []string{
				`a1 RESPONSE status=OK id=1 budget=\d+ class=FINAL`,
				`status=OK attempts=1 stop=final elapsed=\S+`,
			},
		},
		{
			name:     "ctl.fault refuses a bad rule",
			args:     []string{"ctl.fault", "kind=meteor"},
			wantCode: exitFailed,
			wantOut:  []string{`server: fault "kind=meteor": .*`},
			wantLog: []string{
				`a1 RESPONSE status=INVALID_ARGUMENT id=1 budget=\d+ class=FINAL`,
				`status=INVALID_ARGUMENT attempts=1 stop=final elapsed=\S+`,
			},
		},
		{
			name:     "ctl.ping answers nothing",
			args:     []string{"ctl.ping"},
			wantCode: exitOK,
			wantLog: []string{
				`a1 RESPONSE status=OK id=1 budget=\d+ class=FINAL`,
				`status=OK attempts=1 stop=final elapsed=\S+`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, addr := servertest.Start(t, server.DefaultConfig(), tt.faults...)
			if tt.deadSep != "" {
				addr = deadAddr(t) + tt.deadSep + addr
			}
			var stdout, stderr bytes.Buffer
			code := execute(context.Background(), callArgs(addr, tt.args...), &stdout, &stderr)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d\nstderr:\n%s", code, tt.wantCode, stderr.String())
			}
			callLines(t, "stdout", stdout.String(), tt.wantOut)
			callLines(t, "stderr", stderr.String(), tt.wantLog)
			for name, want := range tt.counters {
				// An execution the client gave up on may be counted
				// after the call returns.
				servertest.WaitCounter(t, srv, name, want)
				if got := servertest.Counter(t, srv, name); got != want {
					t.Errorf("server counter %s = %d, want %d", name, got, want)
				}
			}
		})
	}
}

// TestCallControl pokes a server the way a person would: a fault added
// with ctl.fault fires on the next call, and ctl.stats prints counters a
// program can read.
func TestCallControl(t *testing.T) {
	_, addr := servertest.Start(t, server.DefaultConfig())
	call := func(args ...string) (code int, stdout, stderr string) {
		var out, errOut bytes.Buffer
		code = execute(context.Background(), callArgs(addr, args...), &out, &errOut)
		return code, out.String(), errOut.String()
	}

	if code, out, log := call("ctl.fault", "kind=noreply method=debit count=1"); code != exitOK || out != "kind=noreply method=debit count=1\n" {
		t.Fatalf("ctl.fault: exit code %d, stdout %q, want 0 and the rule\nstderr:\n%s", code, out, log)
	}
	code, out, log := call("debit", "account=c amount=1", "--attempt-timeout", "200ms")
	if code != exitUnknown || out != "" || !strings.Contains(log, "a1 TIMEOUT") {
		t.Errorf("debit after the fault: exit code %d, stdout %q, want %d, no payload and a timeout\nstderr:\n%s", code, out, exitUnknown, log)
	}

	code, out, log = call("ctl.stats")
	if code != exitOK {
		t.Fatalf("ctl.stats: exit code %d, want 0\nstderr:\n%s", code, log)
	}
	c, err := serverapi.ParseCounters([]byte(strings.TrimSuffix(out, "\n")))
	if err != nil {
		t.Fatalf("ctl.stats printed %q: %v", out, err)
	}
	if c.FaultsFired != 1 || c.ExecDebit != 1 {
		t.Errorf("ctl.stats: faults_fired=%d exec.debit=%d, want 1 and 1", c.FaultsFired, c.ExecDebit)
	}

	if code, out, log := call("ctl.clear"); code != exitOK || out != "" {
		t.Errorf("ctl.clear: exit code %d, stdout %q, want 0 and nothing\nstderr:\n%s", code, out, log)
	}
}

// TestCallJSON checks the --json object: every field present, nothing on
// stderr.
func TestCallJSON(t *testing.T) {
	_, addr := servertest.Start(t, server.DefaultConfig(), "kind=unavailable method=get count=1")
	var stdout, stderr bytes.Buffer
	code := execute(context.Background(), callArgs(addr, "get", "account=j", "--json", "--jitter", "0"), &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit code %d, want 0\nstderr:\n%s", code, stderr.String())
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr = %q, want nothing", stderr.String())
	}
	// Every field must be there: decode into a map first.
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(stdout.Bytes(), &raw); err != nil {
		t.Fatalf("stdout is not a JSON object: %v\n%s", err, stdout.String())
	}
	for _, k := range []string{"status", "payload", "stop", "elapsed_ms", "error", "attempts"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("field %q missing from %s", k, stdout.String())
		}
	}
	dec := json.NewDecoder(&stdout)
	dec.DisallowUnknownFields()
	var got callJSON
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("decoding stdout: %v", err)
	}

	// Volatile values: checked against bounds, then cleared.
	if got.ElapsedMs <= 0 {
		t.Errorf("elapsed_ms = %v, want > 0", got.ElapsedMs)
	}
	for i, a := range got.Attempts {
		if a.BudgetMs < 1 || a.BudgetMs > 2000 {
			t.Errorf("attempt %d budget_ms = %d, want in [1,2000]", i+1, a.BudgetMs)
		}
		if a.Start.IsZero() || a.End.Before(a.Start) {
			t.Errorf("attempt %d from %v to %v, want a span", i+1, a.Start, a.End)
		}
		got.Attempts[i].BudgetMs, got.Attempts[i].Start, got.Attempts[i].End = 0, time.Time{}, time.Time{}
	}
	if !strings.HasPrefix(got.Payload, "account=j balance=1000 budget=") {
		t.Errorf("payload = %q, want account=j balance=1000 ...", got.Payload)
	}
	got.ElapsedMs, got.Payload = 0, ""
	want := callJSON{
		Status: "OK",
		Stop:   "final",
		Attempts: []trace.Record{
			{Client: 1, Call: 1, Attempt: 1, Method: "get", Outcome: client.OutcomeResponse, Status: "UNAVAILABLE", Class: client.ClassNotExecuted, ID: 1, BackoffMs: 20, Addr: addr},
			{Client: 1, Call: 1, Attempt: 2, Method: "get", Outcome: client.OutcomeResponse, Status: "OK", Class: client.ClassFinal, ID: 2, Addr: addr},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("--json (-want +got):\n%s", diff)
	}
}

// TestCallStdin reads the payload from In when it is "-", byte for byte.
func TestCallStdin(t *testing.T) {
	_, addr := servertest.Start(t, server.DefaultConfig())
	a, stdout, stderr := testApp(t)
	o := &callOptions{
		app: a, In: strings.NewReader("account=s amount=7\n"),
		Addrs: []string{addr}, Method: "debit", Payload: "-", Key: "stdin-1",
		Timeout: 5e9, AttemptTimeout: 2e9, Retries: 0,
	}
	code, errText := outcome(runCall(context.Background(), o), stderr)
	if code != exitOK {
		t.Fatalf("exit code %d, want 0\nstderr:\n%s", code, errText)
	}
	callLines(t, "stdout", stdout.String(), []string{`account=s balance=993 budget=\d+ exec=1 replayed=false`})

	// The newline is part of the payload, so the same key with the
	// payload as an argument is another request.
	stdout.Reset()
	stderr.Reset()
	o.Payload = "account=s amount=7"
	code, _ = outcome(runCall(context.Background(), o), stderr)
	if code != exitFailed {
		t.Errorf("exit code %d, want %d", code, exitFailed)
	}
	if got, want := stdout.String(), "idempotency key reused with different request\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
}

// TestCallInterrupted: a signal during a call prints what the call knew
// (an unknown outcome) and exits as an interrupted run does.
func TestCallInterrupted(t *testing.T) {
	srv, addr := servertest.Start(t, server.DefaultConfig(), "kind=noreply method=debit")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- execute(ctx, []string{"call", addr, "debit", "account=i amount=1", "--attempt-timeout", "1m", "--timeout", "1m"}, &stdout, &stderr)
	}()
	servertest.WaitCounter(t, srv, "faults_fired", 1) // written, executed, unanswered
	cancel(&signalError{os.Interrupt})
	code := <-done
	if code != exitInterrupted {
		t.Errorf("exit code %d, want %d", code, exitInterrupted)
	}
	callLines(t, "stderr", stderr.String(), []string{
		`a1 CANCELED err="context canceled" id=1 budget=\d+ class=OUTCOME_UNKNOWN`,
		`status=UNKNOWN attempts=1 stop=canceled elapsed=\S+ err="context canceled"`,
		`UNKNOWN: the request may or may not have executed; .*`,
		`rpcbench: interrupted: interrupt received`,
	})
}

// TestCallUsage: mistakes in the command line exit 2, say what is wrong,
// and send nothing.
func TestCallUsage(t *testing.T) {
	dead := deadAddr(t)
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no arguments", []string{"call"}, "accepts between 2 and 3 arg(s), received 0"},
		{"no method", []string{"call", dead}, "accepts between 2 and 3 arg(s), received 1"},
		{"too many arguments", []string{"call", dead, "get", "account=a", "extra"}, "accepts between 2 and 3 arg(s), received 4"},
		{"unknown flag", []string{"call", dead, "get", "--bogus"}, "unknown flag: --bogus"},
		{"bad duration", []string{"call", dead, "get", "--timeout", "soon"}, `invalid argument "soon" for "--timeout" flag`},
		{"zero timeout", []string{"call", dead, "get", "--timeout", "0"}, "--timeout 0s: must be positive"},
		{"negative attempt timeout", []string{"call", dead, "get", "--attempt-timeout", "-1s"}, "--attempt-timeout -1s: must be positive"},
		{"negative retries", []string{"call", dead, "get", "--retries", "-1"}, "--retries -1: want a whole number from 0 to"},
		{"retries not a number", []string{"call", dead, "get", "--retries", "many"}, `invalid argument "many" for "--retries" flag`},
		{"jitter out of range", []string{"call", dead, "get", "--jitter", "1"}, "--jitter 1: want a number in [0,1)"},
		{"empty address", []string{"call", dead + ",", "get"}, `ADDR "` + dead + `,": address 2 of 2 is empty`},
		{"not an address", []string{"call", "notanaddr", "get", "account=a"}, `ADDR "notanaddr": missing port in address`},
		{"no port", []string{"call", "127.0.0.1", "get", "account=a"}, `ADDR "127.0.0.1": missing port in address`},
		{"port not a number", []string{"call", "127.0.0.1:port", "get"}, `ADDR "127.0.0.1:port": port "port" is not a number from 1 to 65535`},
		{"port zero", []string{"call", "127.0.0.1:0", "get"}, `port "0" is not a number from 1 to 65535`},
		{"too many colons", []string{"call", "::1:80", "get"}, `ADDR "::1:80": too many colons in address`},
		{"second address malformed", []string{"call", dead + ",nope", "get"}, `ADDR "` + dead + `,nope": address 2 "nope": missing port in address`},
		{"valid address shown", []string{"call", "notanaddr", "get"}, "ADDR is host:port"},
		{"same address twice", []string{"call", dead + "," + dead, "get"}, "listed twice"},
		{"key too long", []string{"call", dead, "get", "--key", strings.Repeat("k", 65)}, "key length 65 outside [0,64]"},
		{"method too long", []string{"call", dead, strings.Repeat("m", 33)}, "method length 33 outside [1,32]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := execute(context.Background(), tt.args, &stdout, &stderr)
			if code != exitError {
				t.Errorf("exit code %d, want %d\nstderr:\n%s", code, exitError, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.wantErr) {
				t.Errorf("stderr =\n%s\nwant it to contain %q", stderr.String(), tt.wantErr)
			}
			if strings.Contains(stderr.String(), "a1 ") || stdout.Len() != 0 {
				t.Errorf("a call was made: stdout %q, stderr\n%s", stdout.String(), stderr.String())
			}
		})
	}
}

func TestCallHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := execute(context.Background(), []string{"call", "--help"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit code %d, want 0\nstderr:\n%s", code, stderr.String())
	}
	for _, want := range []string{"rpcbench call ADDR METHOD [PAYLOAD | -] [flags]", "Examples:", "ctl.fault", "--idempotent", "--key string", "--retries int", "--json"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("help does not contain %q:\n%s", want, stdout.String())
		}
	}
}

// TestCheckAddrs: the forms of ADDR a dial can use are kept, trimmed;
// the others say what is wrong.
func TestCheckAddrs(t *testing.T) {
	tests := []struct {
		arg     string
		want    []string
		wantErr string
	}{
		{"127.0.0.1:41234", []string{"127.0.0.1:41234"}, ""},
		{" localhost:1 ", []string{"localhost:1"}, ""},
		{"a:1, b:2", []string{"a:1", "b:2"}, ""},
		{"[::1]:65535", []string{"[::1]:65535"}, ""},
		{":41234", []string{":41234"}, ""},
		{"", nil, "empty"},
		{"a:1,,b:2", nil, "address 2 of 3 is empty"},
		{"notanaddr", nil, "missing port in address"},
		{"a:65536", nil, `port "65536" is not a number from 1 to 65535`},
		{"a:-1", nil, `port "-1" is not a number from 1 to 65535`},
		{"a:1,[::1", nil, `address 2 "[::1": missing ']' in address`},
	}
	for _, tt := range tests {
		got, err := checkAddrs(strings.Split(tt.arg, ","))
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("checkAddrs(%q): %v", tt.arg, err)
		case tt.wantErr == "" && !cmp.Equal(got, tt.want):
			t.Errorf("checkAddrs(%q) = %q, want %q", tt.arg, got, tt.want)
		case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr && !strings.HasSuffix(err.Error(), tt.wantErr)):
			t.Errorf("checkAddrs(%q) error %v, want one ending %q", tt.arg, err, tt.wantErr)
		}
	}
}

// TestUnknownHint: the advice after an UNKNOWN outcome follows the call:
// its key, its --idempotent, and whether its method is safe to repeat.
func TestUnknownHint(t *testing.T) {
	tests := []struct {
		name string
		call client.Call
		want string
	}{
		{"keyed debit", client.Call{Method: "debit", Key: "k1"}, "re-sending it with the same --key k1 is safe"},
		{"keyed unknown method", client.Call{Method: "transfer", Key: "k1"}, "same --key k1"},
		{"idempotent debit", client.Call{Method: "debit", Idempotent: true}, "declared --idempotent"},
		{"idempotent get", client.Call{Method: "get", Idempotent: true}, "declared --idempotent"},
		{"keyless get", client.Call{Method: "get"}, "a get is safe to repeat: re-send it, with --idempotent"},
		{"keyless ctl.stats", client.Call{Method: "ctl.stats"}, "a ctl.stats is safe to repeat"},
		{"keyless debit", client.Call{Method: "debit"}, "send a debit with --key"},
		{"ctl.fault", client.Call{Method: "ctl.fault"}, "only once you know it did not; if ctl.fault is safe to repeat, --idempotent"},
		{"unknown method", client.Call{Method: "transfer"}, "if transfer is safe to repeat"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := unknownHint(tt.call)
			if !strings.Contains(got, tt.want) {
				t.Errorf("got %q, want it to contain %q", got, tt.want)
			}
			// A key is the fix only for a call that had one or a debit.
			if strings.Contains(got, "--key") && tt.call.Key == "" && tt.call.Method != "debit" {
				t.Errorf("got %q, want no --key for a keyless %s", got, tt.call.Method)
			}
		})
	}
}
