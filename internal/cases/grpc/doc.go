// Package grpc is the grpc group: the scenarios the judge runs against each gRPC stack, client and server.
package grpc
