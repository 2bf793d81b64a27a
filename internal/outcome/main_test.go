package outcome

import (
	"testing"

	"github.com/rpcbench/rpcbench/internal/testexit"
)

// TestMain ends the test binary without the race runtime's second of
// sleep at exit (package testexit).
func TestMain(m *testing.M) { testexit.Exit(m.Run()) }
