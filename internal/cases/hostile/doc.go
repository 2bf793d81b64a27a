// Package hostile is the hostile group: hostile peers attacking rpcserver's gRPC side, and both wires with slow and idle connections, while a well-behaved client is served.
package hostile
