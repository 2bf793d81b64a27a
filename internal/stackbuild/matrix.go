package stackbuild

// Release is one release of the compatibility matrix.
type Release struct {
	Ref Ref
	// Why it is in the matrix: the change it is the first or last
	// release of.
	Why string
	// Judged: rpcbench matrix judges it; the others are built and
	// probed by this package's tests alone, to keep the judged matrix
	// within CI's time and evidence's size.
	Judged bool
}

// Matrix is the releases each adapter is known to build and run against
// (RPCBENCH_STACKBUILD=1 go test ./internal/stackbuild builds and
// probes every one), oldest first per stack. A release not here may
// well work; one here is tested.
func Matrix() []Release {
	return matrix
}

var matrix = []Release{
	{Ref{"grpc-go", "v1.60.1"}, "the oldest supported: before grpc.NewClient (the adapter dials with grpc.Dial, tag grpcgo_pre163) and before SupportPackageIsVersion9 (bankpb's protoc-gen-go-grpc 1.3.0 code, tag grpcgo_pre164)", true},
	{Ref{"grpc-go", "v1.63.2"}, "the first with grpc.NewClient (dns resolver, idle until the first call); still the 1.3.0 generated code", true},
	{Ref{"grpc-go", "v1.64.1"}, "the first that takes the shipped generated code (SupportPackageIsVersion9): no build tags from here on", true},
	{Ref{"grpc-go", "v1.71.1"}, "the last whose pick_first is the old balancer by default (GRPC_EXPERIMENTAL_ENABLE_NEW_PICK_FIRST defaults to false)", false},
	{Ref{"grpc-go", "v1.72.2"}, "the first whose pick_first is the new one (a subchannel per address) by default", true},
	{Ref{"grpc-go", "v1.80.0"}, "the new pick_first with no switch back (the variable is gone)", true},
	{Ref{"grpc-go", "v1.85.0"}, "the shipped release", true},
	{Ref{"grpc-js", "1.8.22"}, "the oldest supported, the last 1.8: its Server serves only after start() (adapters/grpcjs/compat.js)", true},
	{Ref{"grpc-js", "1.10.11"}, "the first that serves without start() (deprecated from here); 1.9.15 is the last that needs it", false},
	{Ref{"grpc-js", "1.12.3"}, "the last that reports a connection lost after the request went out as CANCELLED, which no retry policy retries", true},
	{Ref{"grpc-js", "1.12.4"}, "the first that reports it UNAVAILABLE (grpc/grpc-node#2862), which a retry policy on UNAVAILABLE retries", true},
	{Ref{"grpc-js", "1.14.7"}, "the shipped release (its committed package-lock.json)", true},
	{Ref{"grpcio", "1.51.1"}, "the shipped release: Debian 12's python3-grpcio under /usr/bin/python3, the adapter as it is", true},
	{Ref{"grpcio", "1.58.3"}, "the last whose unacknowledged keepalive ping ends the connection after grpc.keepalive_timeout_ms", true},
	{Ref{"grpcio", "1.59.3"}, "the first where it takes grpc.http2.ping_timeout_ms instead (60 s by default; adapters/grpcio/README.md)", true},
	{Ref{"grpcio", "1.70.0"}, "between", false},
	{Ref{"grpcio", "1.85.3"}, "the newest PyPI release with a wheel for Python 3.11", true},
	{Ref{"connect-go", "v1.19.0"}, "the oldest supported: the first with connect.NewClientContext, which the adapter reads the response headers through", false},
	{Ref{"connect-go", "v1.21.0"}, "the last that reports a TCP reset of the connection as UNAVAILABLE every time", true},
	{Ref{"connect-go", "v1.21.1"}, "the shipped release, and the first that reports a TCP reset as CANCELED in some calls", true},
}
