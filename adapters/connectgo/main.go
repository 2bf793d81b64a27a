// Command connectgo is rpcbench's adapter for connect-go.
//
// Without arguments it is the client-under-test adapter: it speaks adapters/PROTOCOL.md (rpcbench-adapter/1) on
// stdin and stdout and makes each call once through connect-go's
// generated Bank client in its gRPC protocol (connect.WithGRPC), over
// net/http's own HTTP/2 cleartext transport, configured only by what the
// call's channel carries. It never retries or judges; whatever net/http
// replays by itself is part of what the column shows. The protocol
// session is adapters/gokit/clientkit's. Its own logs go to stderr.
//
// With the argument "serve" it is the server-under-test adapter:
// it speaks adapters/SERVER-PROTOCOL.md (rpcbench-server/1) and serves the
// Bank service with connect-go's generated handler and default options
// (gRPC accepted) in an http.Server speaking only unencrypted HTTP/2, on a
// loopback port; the protocol, bank and event lines are
// adapters/gokit/serverkit's.
package main

import (
	"os"

	"github.com/rpcbench/rpcbench/adapters/gokit"
)

func main() {
	os.Exit(gokit.Main(clientStack, serverStack))
}
