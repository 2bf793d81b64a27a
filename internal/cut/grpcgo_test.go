package cut_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/cut"
)

// grpcGoBin returns the built grpc-go adapter, or skips the test saying
// how to build it; with RPCBENCH_REQUIRE_ADAPTERS=1 it fails instead.
func grpcGoBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv(cut.EnvGRPCGo)
	if bin == "" {
		bin = filepath.Join("..", "..", "bin", cut.GRPCGoBin)
	}
	if _, err := os.Stat(bin); err != nil {
		msg := "no grpc-go adapter at " + bin + ": build it with ./build.sh (or set " + cut.EnvGRPCGo + ")"
		if cut.Required() {
			t.Fatal(msg + " (" + cut.EnvRequire + "=1)")
		}
		t.Skip(msg)
	}
	return bin
}

// TestGRPCGoAdapterHandshake: the built grpc-go adapter answers init
// with grpc-go at the version adapters/grpcgo/go.mod pins and its
// capabilities, answers shutdown, and exits cleanly. Its calls are
// tested against the gRPC fault server by the grpc scenarios, and
// against grpc-go's own server in adapters/grpcgo.
func TestGRPCGoAdapterHandshake(t *testing.T) {
	bin := grpcGoBin(t)
	mod, err := os.ReadFile(filepath.Join("..", "..", "adapters", "grpcgo", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	pin := regexp.MustCompile(`google\.golang\.org/grpc v(\S+)`).FindSubmatch(mod)
	if pin == nil {
		t.Fatal("adapters/grpcgo/go.mod pins no google.golang.org/grpc")
	}
	a, err := cut.Start(context.Background(), cut.Spec{Bin: bin, Scenario: t.Name(), Stderr: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	info := a.Info()
	want := cut.Capabilities{RetryPolicy: true, Hedging: false, Throttling: true, TransparentRetry: true, Keepalive: true, Pushback: true, WaitForReady: true}
	if diff := cmp.Diff(want, info.Caps); diff != "" {
		t.Errorf("capabilities (-want +got):\n%s", diff)
	}
	if info.Stack != "grpc-go" || info.Version != string(pin[1]) {
		t.Errorf("got %s %s, want grpc-go %s (is %s stale? ./build.sh)", info.Stack, info.Version, pin[1], bin)
	}
	if err := a.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	gone(t, a.PID())
}

// testWriter sends an adapter's stderr to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("adapter: %s", p)
	return len(p), nil
}
