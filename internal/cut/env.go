package cut

import "os"

// GRPCGoBin is the file name ./build.sh gives the grpc-go adapter
// (adapters/grpcgo), in the bin directory beside rpcbench and rpcserver.
const GRPCGoBin = "adapter-grpcgo"

// The environment variables this package reads.
const (
	// EnvRequire set to "1" says a missing adapter binary must fail a
	// run, not skip it; .ci/run sets it.
	EnvRequire = "RPCBENCH_REQUIRE_ADAPTERS"
	// EnvGRPCGo is the grpc-go adapter's path, for tests; unset, they
	// look in the repository's bin/.
	EnvGRPCGo = "RPCBENCH_ADAPTER_GRPCGO"
)

// Required reports whether RPCBENCH_REQUIRE_ADAPTERS is "1".
func Required() bool { return os.Getenv(EnvRequire) == "1" }
