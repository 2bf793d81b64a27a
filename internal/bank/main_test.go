package bank_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/rpcbench/rpcbench/internal/pgcluster/pgtest"
	"github.com/rpcbench/rpcbench/internal/testexit"
)

// TestMain fails the package if any test leaves a goroutine behind: every
// server a test starts must be closed by the time it ends. The PostgreSQL
// store's tests share one throwaway cluster, stopped at the end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(pgtest.Main(m), goleak.Cleanup(testexit.Exit))
}
