//go:build grpcgo_pre163

package main

import "google.golang.org/grpc"

// newClient is grpc.Dial, the only constructor grpc-go had before 1.63
// added grpc.NewClient: unlike NewClient it resolves target with the
// passthrough resolver and starts connecting at once, which is what a
// program on those releases gets. internal/stackbuild sets the build
// tag grpcgo_pre163 for them; nothing else does.
func newClient(target string, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	return grpc.Dial(target, opts...)
}
