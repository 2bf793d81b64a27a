//go:build !grpcgo_pre163

package serverkittest

import "google.golang.org/grpc"

// newClient is grpc.NewClient.
func newClient(target string, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	return grpc.NewClient(target, opts...)
}
