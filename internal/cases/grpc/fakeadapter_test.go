package grpc

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rpcbench/rpcbench/internal/cases/judge"
	"github.com/rpcbench/rpcbench/internal/cut"
	"github.com/rpcbench/rpcbench/internal/fakestack"
	"github.com/rpcbench/rpcbench/internal/pins"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/scenario/scenariotest"
)

// TestJudgeCatchesFakeAdapters: the grpc group's judge fails a stack that
// misbehaves. An adapter that makes every call twice by itself is caught
// on exec_at_most_once, by the server's count of executions; one that
// answers OK for calls it never made is caught on ok_only_if_executed,
// the server having executed nothing. Neither violation is pinned, so
// each case FAILs, and never for another reason.
func TestJudgeCatchesFakeAdapters(t *testing.T) {
	var real string
	if a := scenariotest.Env.Adapters[judge.StackGRPCGo].Client; len(a) > 0 {
		real = a[0]
	}
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
		{fakestack.Twice, "grpc_refused_stream_grpcgo_default", "exec_at_most_once:=violated"},
		{fakestack.Twice, "grpc_noreply_within_deadline_grpcgo_retry", "exec_at_most_once:=violated"},
		{fakestack.Liar, "grpc_goaway_below_grpcgo_default", "ok_only_if_executed:=violated"},
		{fakestack.Liar, "grpc_unavailable_before_exec_grpcgo_retry", "ok_only_if_executed:=violated"},
	}
	for _, tt := range tests {
		t.Run(tt.mode+"/"+tt.scenario, func(t *testing.T) {
			t.Setenv(fakestack.EnvAdapter, tt.mode)
			t.Setenv(fakestack.EnvReal, real)
			// A test binary built with -race sleeps 1s at exit, past the
			// harness's bound for an adapter to exit once its stdin ends.
			t.Setenv("GORACE", "atexit_sleep_ms=0")
			c, ok := scenario.Registry(Cases()).Lookup(tt.scenario)
			if !ok {
				t.Fatalf("no scenario %s", tt.scenario)
			}
			e := scenariotest.Env
			e.Adapters = map[string]scenario.Adapter{judge.StackGRPCGo: scenario.BinAdapter(self)}
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
	t.Setenv(fakestack.EnvAdapter, fakestack.NoRetry)
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	e := scenariotest.Env
	e.Adapters = map[string]scenario.Adapter{judge.StackGRPCGo: scenario.BinAdapter(self)}
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
