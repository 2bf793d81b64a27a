package hostile

import (
	"os"
	"testing"

	"github.com/rpcbench/rpcbench/internal/scenario/scenariotest"
)

func TestMain(m *testing.M) {
	os.Exit(scenariotest.Main(m, Cases()))
}

// TestCases runs every scenario of the group as a subtest of the same
// name, so go test -run 'TestCases/^NAME$' selects what rpcbench run NAME
// does.
func TestCases(t *testing.T) { scenariotest.Cases(t, Cases(), nil) }
