//go:build grpcgo_pre163

package serverkittest

import "google.golang.org/grpc"

// newClient is grpc.Dial, for grpc-go before 1.63 had grpc.NewClient
// (the build tag grpcgo_pre163, as adapters/grpcgo's), so that the
// adapter's tests run against those releases too.
func newClient(target string, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	return grpc.Dial(target, opts...)
}
