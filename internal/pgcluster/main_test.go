package pgcluster

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind: every
// cluster a test starts, or fails to start, must leave none waiting on a
// postgres process.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
