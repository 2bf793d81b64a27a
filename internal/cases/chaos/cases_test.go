package chaos

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
// does.
func TestCases(t *testing.T) {
	scenariotest.Cases(t, Cases(), func(c scenario.Case) bool { return slices.Contains(goTestGroupOnly, c.Name) })
}

// goTestGroupOnly are the scenarios TestCases leaves to the group's run:
// the seeds after the first, 18 s between them, whose checker
// internal/chaos's tests cover.
var goTestGroupOnly = []string{"chaos_seed2_sqlite", "chaos_seed3_postgres_two_servers"}

// TestMutants proves the group's scenarios catch the bugs they exist
// for (RPCBENCH_MUTANTS=1).
func TestMutants(t *testing.T) { scenariotest.Mutants(t, Cases(), chaosMutants) }
