package pgcluster

import "os"

// The environment variables this package reads; the package doc says what
// each one means.
const (
	EnvDSN     = "RPCBENCH_PG_DSN"
	EnvBin     = "RPCBENCH_PG_BIN"
	EnvRequire = "RPCBENCH_REQUIRE_PG"
)

// Required reports whether RPCBENCH_REQUIRE_PG is "1": a run that needs
// PostgreSQL and cannot have it must then fail, not skip.
func Required() bool { return os.Getenv(EnvRequire) == "1" }
