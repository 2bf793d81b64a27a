package evidence

import (
	"slices"
	"testing"

	"github.com/rpcbench/rpcbench/internal/scenario/scenariotest"
	"github.com/rpcbench/rpcbench/internal/testexit"
)

func TestMain(m *testing.M) {
	testexit.Exit(scenariotest.Main(m, Cases()))
}

// TestCases runs every scenario of the group as a subtest of the same
// name, so go test -run 'TestCases/^NAME$' selects what rpcbench run NAME
// does.
func TestCases(t *testing.T) { scenariotest.Cases(t, Cases(), nil) }

// TestMutants proves the group's scenarios catch the bugs they exist
// for (RPCBENCH_MUTANTS=1).
func TestMutants(t *testing.T) {
	scenariotest.Mutants(t, Cases(), slices.Concat(evidenceMutants, statusMutants))
}
