// Package grpcwire is rpcserver's gRPC transport: a unary gRPC server over
// HTTP/2 cleartext (prior knowledge), written on golang.org/x/net/http2's
// Framer and hpack rather than on a gRPC library so that its faults reach
// below any library, serving a transport.Handler (the bank) as the Bank
// service of proto/rpcbench/bank/v1/bank.proto. SPEC.md is its contract.
package grpcwire
