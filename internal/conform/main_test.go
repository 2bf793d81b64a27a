package conform

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/rpcbench/rpcbench/internal/testexit"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(testexit.Exit))
}
