package pgcluster

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/rpcbench/rpcbench/internal/testexit"
)

// TestMain fails the package if any test leaves a goroutine behind: every
// cluster a test starts, or fails to start, must leave none waiting on a
// postgres process. Started with helperEnv set, the binary is instead an
// owner of a database and a directory for testLeftovers to kill.
func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(ownerHelper())
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(testexit.Exit))
}
