package deploy

import (
	"slices"
	"testing"

	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/scenario/scenariotest"
	"github.com/rpcbench/rpcbench/internal/testexit"
)

func TestMain(m *testing.M) {
	testexit.Exit(scenariotest.Main(m, Cases()))
}

// TestCases runs every scenario of the group as a subtest of the same
// name, so go test -run 'TestCases/^NAME$' selects what rpcbench run NAME
// does, but those of goTestLeftOut.
func TestCases(t *testing.T) {
	scenariotest.Cases(t, Cases(), func(c scenario.Case) bool { return slices.Contains(goTestLeftOut, c.Name) })
}

// goTestLeftOut are the scenarios TestCases leaves to the group's run
// (rpcbench all --group deploy, which .ci/run diffs against the
// evidence), to keep go test within its time: the PostgreSQL variant of
// the kill-without-drain negative control (5s), whose SQLite variant
// shows the same control here.
var goTestLeftOut = []string{"negative_control_kill_without_drain_postgres"}

// TestMutants proves the group's scenarios catch the bugs they exist
// for (RPCBENCH_MUTANTS=1).
func TestMutants(t *testing.T) {
	scenariotest.Mutants(t, Cases(), slices.Concat(deployMutants, deployLBMutants))
}
