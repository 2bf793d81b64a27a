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
}
