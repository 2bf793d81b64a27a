package hostile

import (
	"os"
	"testing"

	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/scenario/scenariotest"
)

func TestMain(m *testing.M) {
	os.Exit(scenariotest.Main(m, Cases()))
}

// TestCases lists every scenario of the group as a subtest of the same
// name, and leaves each to the group's run (rpcbench all --group
// hostile): together they take about 25 s of floods, trickles and idle
// holds, more than go test -race ./... can spare within its 3 minutes.
func TestCases(t *testing.T) {
	scenariotest.Cases(t, Cases(), func(scenario.Case) bool { return true })
}
