// Package transport is what rpcserver's two sibling transports,
// internal/server (rpcbench's own wire) and internal/grpcwire (gRPC),
// share: the Handler contract they serve requests through, with whose
// memory a request's payload and an answer are, and the accept loop,
// TCP socket tuning, sleep, configuration error and rate-limited log of
// a limit's refusals (LimitLog) each would otherwise write again.
package transport
