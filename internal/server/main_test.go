package server_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/rpcbench/rpcbench/internal/testexit"
)

// TestMain fails the package if any test leaves a goroutine behind: every
// server and client a test starts must be closed by the time it ends.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(testexit.Exit))
}
