package grpc

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/rpcbench/rpcbench/internal/cases/judge"
	"github.com/rpcbench/rpcbench/internal/fakestack"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/scenario/scenariotest"
	"github.com/rpcbench/rpcbench/internal/testexit"
)

func TestMain(m *testing.M) {
	// The test binary is also the fake adapters and servers the judge's
	// own tests start.
	if code, ok := fakestack.Main(); ok {
		os.Exit(code)
	}
	testexit.Exit(scenariotest.Main(m, Cases()))
}

// TestCases runs every scenario of the group as a subtest of the same
// name, so go test -run 'TestCases/^NAME$' selects what rpcbench run NAME
// does.
func TestCases(t *testing.T) { scenariotest.Cases(t, Cases(), leftOut) }

// leftOut reports the scenarios TestCases leaves to the group's run. It
// runs every column of rpcbench's own client, and grpc-go's client
// columns but those of goTestLeftOut (the keepalive ones wait out 11s
// each) and of the configurations of goTestLeftOutConfigs, and of the
// other columns (grpc-go's server among them) only the scenarios of
// goTestStackScenarios, so that go test sees each
// adapter work while keeping within its time: the grpc group runs them
// all (rpcbench all --group grpc, which .ci/run diffs against the
// evidence).
func leftOut(c scenario.Case) bool {
	is := func(scs []string) bool {
		return slices.ContainsFunc(scs, func(sc string) bool { return strings.HasPrefix(c.Name, sc+"_") })
	}
	if is(goTestLeftOut) {
		return true
	}
	stack, ok := c.Adapter()
	if !ok {
		return false
	}
	if stack == judge.StackGRPCGo && c.Column.Config != "" {
		return slices.Contains(goTestLeftOutConfigs, c.Column.Config) && !is(goTestStackScenarios)
	}
	return !is(goTestStackScenarios)
}

// goTestLeftOutConfigs are grpc-go's configurations TestCases leaves to
// the group's run (which .ci/run diffs against the evidence): retry's,
// and retry's policy with what the server (a key it replays) or the
// throttle adds. go test sees grpc-go's default, per-attempt and hedged
// columns, and its retry policy in goTestStackScenarios.
var goTestLeftOutConfigs = []string{"retry", "retry+key", "throttled"}

// goTestLeftOut are the grpc scenarios TestCases runs in no column: the
// keepalive ones, the throttling one, whose 20 gets against a server
// that refuses them all take 3s a column, and the server timeouts of
// 100u and 1m, which send 500 and 2000 debits a column to see races
// that are rare there.
var goTestLeftOut = []string{"grpc_silent_peer", "grpc_half_open_link", "grpc_throttling_caps_amplification",
	"grpcserver_timeout_100u", "grpcserver_timeout_1m"}

// goTestStackScenarios are the grpc scenarios TestCases runs in every
// stack's columns, client and server.
var goTestStackScenarios = []string{"grpc_concurrent_own_answers", "grpc_unavailable_after_exec", "grpcserver_timeout_1n",
	"grpcserver_cancel_stops_handler"}

// TestMutants proves the group's scenarios catch the bugs they exist
// for (RPCBENCH_MUTANTS=1).
func TestMutants(t *testing.T) { scenariotest.Mutants(t, Cases(), grpcMutants) }

// TestProxyCases runs two columns of the proxy group: grpc-go with a
// retry policy executing a debit twice when the proxy answers
// UNAVAILABLE after the server executed it, as the grpc group's pins
// say it does with the server's fault, and grpc-go recovering from the
// proxy's GOAWAY below its stream. The group's run (rpcbench all
// --group proxy, which .ci/run diffs against the evidence) runs them all.
func TestProxyCases(t *testing.T) {
	keep := []string{"proxy_unavailable_after_exec_grpcgo_retry", "proxy_goaway_below_grpcgo_default"}
	scenariotest.Cases(t, ProxyCases(), func(c scenario.Case) bool { return !slices.Contains(keep, c.Name) })
}
