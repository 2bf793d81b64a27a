package pgtest_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/rpcbench/rpcbench/internal/pgcluster/pgtest"
	"github.com/rpcbench/rpcbench/internal/testexit"
)

// TestMain stops the shared cluster after the tests, then fails the
// package if any goroutine is left, the one waiting on postgres included.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(pgtest.Main(m), goleak.Cleanup(testexit.Exit))
}
