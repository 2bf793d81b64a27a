//go:build !grpcgo_pre163

package main

import "google.golang.org/grpc"

// newClient is grpc.NewClient: a channel that resolves target with
// grpc-go's default resolver (dns) and connects on its first call.
func newClient(target string, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	return grpc.NewClient(target, opts...)
}
