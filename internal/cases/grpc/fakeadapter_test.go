package grpc

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rpcbench/rpcbench/internal/cases/judge"
	"github.com/rpcbench/rpcbench/internal/cut"
	"github.com/rpcbench/rpcbench/internal/pins"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/scenario/scenariotest"
)

// The fake adapters that show the grpc group's judge failing a stack that
// misbehaves where a real one cannot be made to: the test binary, started
// with envFakeAdapter set, speaks the client-under-test protocol itself.
const (
	envFakeAdapter = "RPCBENCH_FAKE_ADAPTER"
	// envFakeReal is the real grpc-go adapter the "twice" fake forwards
	// its calls to.
	envFakeReal = "RPCBENCH_FAKE_REAL"
	// fakeTwice makes every call twice through the real adapter and
	// answers the second result: an adapter that retries by itself.
	fakeTwice = "twice"
	// fakeLiar answers every call OK with a made-up reply, calling
	// nothing.
	fakeLiar = "liar"
	// fakeNoRetry is fakeLiar declaring no retry policy: a harness that
	// ran a retry configuration on it anyway would be told OK for a
	// debit the server never saw.
	fakeNoRetry = "noretry"
)

// fakeAdapterMain is the fake adapter's main: it reads the harness's
// lines on stdin and writes its own on stdout, until shutdown.
func fakeAdapterMain(mode string) int {
	out := json.NewEncoder(os.Stdout)
	var mu sync.Mutex // guards out
	send := func(v any) {
		mu.Lock()
		defer mu.Unlock()
		out.Encode(v)
	}
	var real *exec.Cmd
	var realIn io.WriteCloser
	pending := map[int64]chan json.RawMessage{}
	var pmu sync.Mutex
	if mode == fakeTwice {
		real = exec.Command(os.Getenv(envFakeReal))
		real.Stderr = os.Stderr
		realIn, _ = real.StdinPipe()
		realOut, _ := real.StdoutPipe()
		if err := real.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer real.Wait()
		go func() {
			sc := bufio.NewScanner(realOut)
			sc.Buffer(nil, cut.MaxLine)
			for sc.Scan() {
				var m struct {
					Type string
					ID   int64
				}
				json.Unmarshal(sc.Bytes(), &m)
				pmu.Lock()
				ch := pending[m.ID]
				if m.Type == "init_ok" || m.Type == "shutdown_ok" {
					ch = pending[0]
				}
				pmu.Unlock()
				if ch != nil {
					ch <- append(json.RawMessage(nil), sc.Bytes()...)
				}
			}
		}()
	}
	// forward sends line to the real adapter as id and waits for its
	// answer (id 0 waits for init_ok or shutdown_ok).
	forward := func(line map[string]any, id int64) json.RawMessage {
		ch := make(chan json.RawMessage, 1)
		pmu.Lock()
		pending[id] = ch
		pmu.Unlock()
		if id != 0 {
			line["id"] = id
		}
		b, _ := json.Marshal(line)
		realIn.Write(append(b, '\n'))
		return <-ch
	}
	var wg sync.WaitGroup
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(nil, cut.MaxLine)
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			send(map[string]any{"type": "fatal", "text": err.Error()})
			return 2
		}
		switch line["type"] {
		case "init":
			if mode == fakeTwice {
				os.Stdout.Write(append(forward(line, 0), '\n'))
				continue
			}
			send(map[string]any{"type": "init_ok", "protocol": cut.Protocol, "stack": judge.StackGRPCGo, "version": "fake-" + mode,
				"runtime": "go", "capabilities": map[string]bool{"retry_policy": mode != fakeNoRetry, "hedging": false, "throttling": true,
					"transparent_retry": true, "keepalive": true, "pushback": true, "wait_for_ready": true, "per_attempt_timeout": false}})
		case "call":
			id := int64(line["id"].(float64))
			if mode == fakeLiar || mode == fakeNoRetry {
				req, _ := line["request"].(map[string]any)
				send(map[string]any{"type": "result", "id": id, "code": "OK", "code_num": 0, "message": "",
					"response": map[string]any{"account": req["account"], "balance": "990"}, "elapsed_ms": 1, "headers": map[string]any{}, "trailers": map[string]any{}})
				continue
			}
			wg.Go(func() {
				forward(line, 2*id)
				var r map[string]any
				json.Unmarshal(forward(line, 2*id+1), &r)
				r["id"] = id
				send(r)
			})
		case "shutdown":
			wg.Wait()
			if mode == fakeTwice {
				forward(line, 0)
				realIn.Close()
			}
			send(map[string]any{"type": "shutdown_ok"})
			return 0
		}
	}
	return 0
}

// TestJudgeCatchesFakeAdapters: the grpc group's judge fails a stack that
// misbehaves. An adapter that makes every call twice by itself is caught
// on exec_at_most_once, by the server's count of executions; one that
// answers OK for calls it never made is caught on ok_only_if_executed,
// the server having executed nothing. Neither violation is pinned, so
// each case FAILs, and never for another reason.
func TestJudgeCatchesFakeAdapters(t *testing.T) {
	real := scenariotest.Env.Adapters[judge.StackGRPCGo]
	if real == "" {
		if cut.Required() {
			t.Fatalf("%s; %s=1 demands it", scenariotest.AdapterSkip, cut.EnvRequire)
		}
		t.Skip(scenariotest.AdapterSkip)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		mode, scenario, want string
	}{
		{fakeTwice, "grpc_refused_stream_grpcgo_default", "exec_at_most_once:=violated"},
		{fakeTwice, "grpc_noreply_within_deadline_grpcgo_retry", "exec_at_most_once:=violated"},
		{fakeLiar, "grpc_goaway_below_grpcgo_default", "ok_only_if_executed:=violated"},
		{fakeLiar, "grpc_unavailable_before_exec_grpcgo_retry", "ok_only_if_executed:=violated"},
	}
	for _, tt := range tests {
		t.Run(tt.mode+"/"+tt.scenario, func(t *testing.T) {
			t.Setenv(envFakeAdapter, tt.mode)
			t.Setenv(envFakeReal, real)
			// A test binary built with -race sleeps 1s at exit, past the
			// harness's bound for an adapter to exit once its stdin ends.
			t.Setenv("GORACE", "atexit_sleep_ms=0")
			c, ok := scenario.Registry(Cases()).Lookup(tt.scenario)
			if !ok {
				t.Fatalf("no scenario %s", tt.scenario)
			}
			e := scenariotest.Env
			e.Adapters = map[string]string{judge.StackGRPCGo: self}
			line := c.Run(context.Background(), e)
			s := report.Format(line)
			t.Log(s)
			if line.Verdict != report.Fail || !strings.Contains(s, tt.want) || !strings.Contains(s, "pins no such violation") {
				t.Errorf("got %s\nwant FAIL with %s, an unpinned violation", s, tt.want)
			}
		})
	}
}

// TestCapabilityGating: a stack whose adapter declares no retry policy
// is not run in the configurations that need one: the case is N/A, with
// every invariant unsupported, saying what the stack lacks, and starts
// no server. Run on the fake that answers OK for calls it never makes,
// a case that ran anyway would fail ok_only_if_executed; in the default
// configuration, which needs nothing, it does.
func TestCapabilityGating(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(envFakeAdapter, fakeNoRetry)
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	e := scenariotest.Env
	e.Adapters = map[string]string{judge.StackGRPCGo: self}
	for _, tt := range []struct {
		name    string
		verdict report.Verdict
		want    []string
	}{
		{"grpc_unavailable_before_exec_grpcgo_retry", report.NotApplicable, []string{"unsupported=[grpc-go lacks retry_policy]", "exec_at_most_once:=unsupported", "ok_only_if_executed:=unsupported", "recovers:=unsupported"}},
		{"grpc_throttling_caps_amplification_grpcgo_throttled", report.NotApplicable, []string{"unsupported=[grpc-go lacks retry_policy]", "amplification_capped:=unsupported"}},
		{"grpc_unavailable_before_exec_grpcgo_default", report.Fail, []string{"ok_only_if_executed:=violated"}},
	} {
		c, ok := scenario.Registry(Cases()).Lookup(tt.name)
		if !ok {
			t.Fatalf("no scenario %s", tt.name)
		}
		dir := t.TempDir()
		e.LogDir = dir
		line := c.Run(context.Background(), e)
		s := report.Format(line)
		t.Log(s)
		if line.Verdict != tt.verdict {
			t.Errorf("%s: %v, want %v: %s", tt.name, line.Verdict, tt.verdict, s)
		}
		for _, w := range tt.want {
			if !strings.Contains(s, w) {
				t.Errorf("%s: %s lacks %s", tt.name, s, w)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, report.NoServerNote(c.Name))); tt.verdict == report.NotApplicable && err != nil {
			t.Errorf("%s: unsupported, yet it started a server (no no-server note: %v)", tt.name, err)
		}
	}
}

// TestExpectationsFiles: every committed expectations file reads, each pin
// naming a grpc scenario, one of its stack's configurations and an
// invariant; a pin naming another stack's configuration is refused.
func TestExpectationsFiles(t *testing.T) {
	for _, stack := range append([]string{judge.StackRPCBench}, cut.StackNames()...) {
		p, err := grpcSuite().LoadPins(stack)
		if err != nil {
			t.Errorf("%s: %v", stack, err)
			continue
		}
		if len(p.All()) == 0 {
			t.Errorf("%s pins nothing", stack)
		}
	}
	if err := grpcSuite().KnownPin(judge.StackGRPCGo)(pins.Key{Config: "client", Scenario: "grpc_close_after_exec", Invariant: judge.InvExecOnce}); err == nil {
		t.Errorf("a grpc-go pin on rpcbench's configuration was accepted")
	}
}
