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
	{Ref{"grpc-go", "v1.63.2"}, "the first with grpc.NewClient (idle until the first call, dns resolver), still with the 1.3.0 generated code"},
	{Ref{"grpc-go", "v1.64.1"}, "the first that takes the shipped generated code (SupportPackageIsVersion9): no build tags from here on"},
	{Ref{"grpc-go", "v1.67.3"}, "the pick_first load balancer's rewrite (pickfirstleaf) exists behind an environment variable"},
	{Ref{"grpc-go", "v1.70.0"}, "a release a year before the shipped one"},
	{Ref{"grpc-go", "v1.75.1"}, ""},
	{Ref{"grpc-go", "v1.80.0"}, ""},
	{Ref{"grpc-go", "v1.85.0"}, "the shipped release"},
	{Ref{"grpc-js", "1.8.22"}, "the oldest supported, the last 1.8: its Server serves only after start() (adapters/grpcjs/compat.js)"},
	{Ref{"grpc-js", "1.9.15"}, "the last release before 1.10's server rewrite"},
	{Ref{"grpc-js", "1.10.11"}, "the first that serves on bindAsync alone (start() deprecated)"},
	{Ref{"grpc-js", "1.12.6"}, "between 1.10 and the shipped release"},
	{Ref{"grpc-js", "1.14.7"}, "the shipped release (its committed package-lock.json)"},
	{Ref{"grpcio", "1.51.1"}, "the shipped release: Debian 12's python3-grpcio under /usr/bin/python3, the adapter as it is"},
	{Ref{"grpcio", "1.62.3"}, "a PyPI wheel a year after Debian's"},
	{Ref{"grpcio", "1.70.0"}, "a PyPI wheel between"},
	{Ref{"grpcio", "1.85.3"}, "the newest PyPI release with a wheel for Python 3.11"},
	{Ref{"connect-go", "v1.19.0"}, "the oldest supported: the first with connect.NewClientContext, which the adapter reads the response headers through"},
	{Ref{"connect-go", "v1.21.1"}, "the shipped release"},
}
