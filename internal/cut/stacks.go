package cut

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// Stack is a client stack the grpc group judges through an adapter.
type Stack struct {
	// Name is the stack as its adapter's init_ok names it.
	Name string
	// Bin is the file name ./build.sh gives its adapter in the bin
	// directory, beside rpcbench and rpcserver.
	Bin string
	// Env is the variable that overrides the adapter's path.
	Env string
	// Get says how to get what the adapter needs on a developer's
	// machine.
	Get string
	// PingsAlways: the library's keepalive pings whether or not a call
	// is in flight, so its keepalive configurations permit pings
	// without a stream (connect-go: Go's HTTP/2 transport's
	// ReadIdleTimeout).
	PingsAlways bool
}

// StackGRPCGo is grpc-go's stack name, as its adapter's init_ok names
// it.
const StackGRPCGo = "grpc-go"

// Stacks returns the client stacks, in scorecard order.
func Stacks() []Stack {
	return []Stack{
		{Name: StackGRPCGo, Bin: GRPCGoBin, Env: EnvGRPCGo,
			Get: "./build.sh builds it (it needs the module proxy for google.golang.org/grpc)"},
		{Name: "grpc-js", Bin: "adapter-grpcjs", Env: "RPCBENCH_ADAPTER_GRPCJS",
			Get: "apt-get install nodejs npm, then ./build.sh (it runs npm ci in adapters/grpcjs)"},
		{Name: "grpcio", Bin: "adapter-grpcio", Env: "RPCBENCH_ADAPTER_GRPCIO",
			Get: "apt-get install python3-grpcio python3-protobuf (Debian's, run by /usr/bin/python3), then ./build.sh"},
		{Name: "connect-go", Bin: "adapter-connectgo", Env: "RPCBENCH_ADAPTER_CONNECTGO",
			Get: "./build.sh builds it (it needs the module proxy for connectrpc.com/connect)", PingsAlways: true},
	}
}

// StackNames returns the names of Stacks, in order.
func StackNames() []string {
	var names []string
	for _, s := range Stacks() {
		names = append(names, s.Name)
	}
	return names
}

// Path returns the stack's adapter: $Env when set, else Bin in binDir.
func (s Stack) Path(binDir string) string {
	if p := os.Getenv(s.Env); p != "" {
		return p
	}
	return filepath.Join(binDir, s.Bin)
}

// Find returns the stack's adapter in binDir (or $Env) once it has
// answered init as the stack, with what it said of itself. The error
// says what is missing and how to get it.
func (s Stack) Find(ctx context.Context, binDir string) (string, Info, error) {
	path, err := filepath.Abs(s.Path(binDir))
	if err != nil {
		return "", Info{}, err
	}
	fi, err := os.Stat(path)
	if err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return "", Info{}, fmt.Errorf("no %s adapter at %s: %s, or set %s", s.Name, path, s.Get, s.Env)
	}
	info, err := Probe(ctx, path)
	if err != nil {
		return "", Info{}, fmt.Errorf("the %s adapter does not start: %v; %s", s.Name, err, s.Get)
	}
	if info.Stack != s.Name {
		return "", Info{}, fmt.Errorf("the adapter at %s says it is %q, not %s", path, info.Stack, s.Name)
	}
	return path, info, nil
}

// Probe starts the adapter at bin, takes its init_ok and shuts it down.
func Probe(ctx context.Context, bin string) (Info, error) {
	a, err := Start(ctx, Spec{Bin: bin, Scenario: "probe"})
	if err != nil {
		return Info{}, err
	}
	info := a.Info()
	if err := a.Close(); err != nil {
		return info, err
	}
	return info, nil
}

// Has reports whether c includes the capability of that name, as
// PROTOCOL.md spells it (retry_policy, hedging, ...); an unknown name
// is never had.
func (c Capabilities) Has(name string) bool {
	switch name {
	case CapRetryPolicy:
		return c.RetryPolicy
	case CapHedging:
		return c.Hedging
	case CapThrottling:
		return c.Throttling
	case CapTransparentRetry:
		return c.TransparentRetry
	case CapKeepalive:
		return c.Keepalive
	case CapPushback:
		return c.Pushback
	case CapWaitForReady:
		return c.WaitForReady
	case CapPerAttempt:
		return c.PerAttempt
	}
	return false
}

// Missing returns those of names that c lacks, in order.
func (c Capabilities) Missing(names ...string) []string {
	return slices.DeleteFunc(slices.Clone(names), c.Has)
}

// The capabilities' names, as init_ok spells them.
const (
	CapRetryPolicy      = "retry_policy"
	CapHedging          = "hedging"
	CapThrottling       = "throttling"
	CapTransparentRetry = "transparent_retry"
	CapKeepalive        = "keepalive"
	CapPushback         = "pushback"
	CapWaitForReady     = "wait_for_ready"
	CapPerAttempt       = "per_attempt_timeout"
)

// CapNames are every capability's name, as init_ok spells them.
var CapNames = []string{CapRetryPolicy, CapHedging, CapThrottling, CapTransparentRetry, CapKeepalive, CapPushback, CapWaitForReady, CapPerAttempt}
