package hostile

import (
	"testing"

	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/scenario/scenariotest"
)

// TestCases lists every scenario of the group as a subtest of the same
// name, and leaves each to the group's run (rpcbench all --group
// hostile): together they take about 25 s of floods, trickles and idle
// holds, more than go test -race ./... can spare within its 3 minutes.
// So there is no TestMain either: it would build an rpcserver that no
// subtest starts.
func TestCases(t *testing.T) {
	scenariotest.Cases(t, Cases(), func(scenario.Case) bool { return true })
}
