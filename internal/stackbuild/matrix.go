package stackbuild

// Release is one release of the compatibility matrix.
type Release struct {
	Ref Ref
	// Why it is in the matrix: the change it is the first or last
	// release of.
	Why string
}

// Matrix is the releases each adapter is known to build and run against
// (RPCBENCH_STACKBUILD=1 go test ./internal/stackbuild builds and
// probes every one), oldest first per stack. A release not here may
// well work; one here is tested.
func Matrix() []Release {
	return matrix
}

var matrix = []Release{
	{Ref{"grpc-go", "v1.60.1"}, "the oldest supported: before grpc.NewClient (the adapter dials with grpc.Dial, tag grpcgo_pre163) and before SupportPackageIsVersion9 (bankpb's protoc-gen-go-grpc 1.3.0 code, tag grpcgo_pre164)"},
	{Ref{"grpc-go", "v1.63.2"}, "the first with grpc.NewClient (dns resolver, idle until the first call); still the 1.3.0 generated code"},
	{Ref{"grpc-go", "v1.64.1"}, "the first that takes the shipped generated code (SupportPackageIsVersion9): no build tags from here on"},
	{Ref{"grpc-go", "v1.71.1"}, "the last whose pick_first is the old balancer by default (GRPC_EXPERIMENTAL_ENABLE_NEW_PICK_FIRST defaults to false)"},
	{Ref{"grpc-go", "v1.72.2"}, "the first whose pick_first is the new one (a subchannel per address) by default"},
	{Ref{"grpc-go", "v1.80.0"}, "the new pick_first with no switch back (the variable is gone)"},
	{Ref{"grpc-go", "v1.85.0"}, "the shipped release"},
	{Ref{"grpc-js", "1.8.22"}, "the oldest supported, the last 1.8: its Server serves only after start() (adapters/grpcjs/compat.js)"},
	{Ref{"grpc-js", "1.9.15"}, "the last before 1.10, whose Server serves on bindAsync alone"},
	{Ref{"grpc-js", "1.10.11"}, "the first that serves without start() (deprecated from here)"},
	{Ref{"grpc-js", "1.12.6"}, "between 1.10 and the shipped release"},
	{Ref{"grpc-js", "1.14.7"}, "the shipped release (its committed package-lock.json)"},
	{Ref{"grpcio", "1.51.1"}, "the shipped release: Debian 12's python3-grpcio under /usr/bin/python3, the adapter as it is"},
	{Ref{"grpcio", "1.58.3"}, "the last whose unacknowledged keepalive ping ends the connection after grpc.keepalive_timeout_ms"},
	{Ref{"grpcio", "1.59.3"}, "the first where it takes grpc.http2.ping_timeout_ms instead (60 s by default; adapters/grpcio/README.md)"},
	{Ref{"grpcio", "1.70.0"}, "between"},
	{Ref{"grpcio", "1.85.3"}, "the newest PyPI release with a wheel for Python 3.11"},
	{Ref{"connect-go", "v1.19.0"}, "the oldest supported: the first with connect.NewClientContext, which the adapter reads the response headers through"},
	{Ref{"connect-go", "v1.21.1"}, "the shipped release"},
}
