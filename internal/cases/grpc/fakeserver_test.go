package grpc

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/rpcbench/rpcbench/internal/cases/judge"
	"github.com/rpcbench/rpcbench/internal/fakestack"
	"github.com/rpcbench/rpcbench/internal/outcome"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/scenario/scenariotest"
)

// TestServerAdapterErrors: a server adapter that names another stack
// than its column's, dies mid-scenario, or reports two execs in one
// handler, is an ERROR naming it, never a pass or a finding.
func TestServerAdapterErrors(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	e := scenariotest.Env
	e.Adapters = map[string]scenario.Adapter{judge.StackGRPCGo: scenario.BinAdapter(self)}
	for _, tt := range []struct{ mode, scenario, want string }{
		{fakestack.SrvOtherStack, "grpcserver_timeout_0n", "serves grpc-js, not grpc-go"},
		{fakestack.SrvCrash, "grpcserver_timeout_0n", "exited before shutdown_ok"},
		{fakestack.SrvExecTwice, "grpcserver_timeout_597h", "a second exec of call"},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			t.Setenv(fakestack.EnvServer, tt.mode)
			c, ok := scenario.Registry(Cases()).Lookup(tt.scenario + "_grpcgo")
			if !ok {
				t.Fatalf("no scenario %s_grpcgo", tt.scenario)
			}
			e.LogDir = t.TempDir()
			line := c.Run(context.Background(), e)
			s := report.Format(line)
			if line.Verdict != report.Error || !strings.Contains(s, tt.want) || !strings.Contains(s, self) {
				t.Errorf("got %s, want an ERROR naming %s and saying %q", s, self, tt.want)
			}
		})
	}
}

// TestLateHandlerNotPassed: a server that answers a debit before its
// handler runs, and runs it after the judgement read the record, is not
// passed unjudged: the case fails, naming the handler that came late.
func TestLateHandlerNotPassed(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	t.Setenv(fakestack.EnvServer, fakestack.SrvLate)
	e := scenariotest.Env
	e.Adapters = map[string]scenario.Adapter{judge.StackGRPCGo: scenario.BinAdapter(self)}
	e.LogDir = t.TempDir()
	c, _ := scenario.Registry(Cases()).Lookup("grpcserver_timeout_0n_grpcgo")
	line := c.Run(context.Background(), e)
	s := report.Format(line)
	if line.Verdict != report.Fail || !strings.Contains(s, "after the judgement read the record") {
		t.Errorf("got %s, want a FAIL saying a handler came after the judgement", s)
	}
}

// TestServerJudgeCatches: each fake server's one bug is caught by the
// row made for it, and the fake without a bug passes the same
// scenarios, so that what catches a bug is the bug.
func TestServerJudgeCatches(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	e := scenariotest.Env
	e.Adapters = map[string]scenario.Adapter{judge.StackGRPCGo: scenario.BinAdapter(self)}
	for _, tt := range []struct {
		mode, scenario, row string
	}{
		{fakestack.SrvExpired, "grpcserver_timeout_0n", judge.InvSrvExpired},
		{fakestack.SrvNoCancel, "grpcserver_cancel_stops_handler", judge.InvSrvCancel},
		{fakestack.SrvPhantom, "grpcserver_timeout_597h", judge.InvSrvLogBank},
	} {
		for _, mode := range []string{tt.mode, fakestack.SrvGood} {
			t.Run(mode+"/"+tt.scenario, func(t *testing.T) {
				t.Setenv(fakestack.EnvServer, mode)
				c, ok := scenario.Registry(Cases()).Lookup(tt.scenario + "_grpcgo")
				if !ok {
					t.Fatalf("no scenario %s_grpcgo", tt.scenario)
				}
				e.LogDir = t.TempDir()
				line := c.Run(context.Background(), e)
				s := report.Format(line)
				t.Log(s)
				o, verdict := outcome.Violated, report.Fail
				if mode == fakestack.SrvGood {
					o, verdict = outcome.Holds, report.Pass
				}
				want := report.FormatField(report.Field{Key: tt.row, Value: o.String(), Kind: report.Outcome})
				if !strings.Contains(s, " "+want) || line.Verdict != verdict {
					t.Errorf("got %s, want %s and %s", s, want, verdict)
				}
			})
		}
	}
}
