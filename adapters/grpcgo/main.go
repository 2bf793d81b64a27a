// Command grpcgo is rpcbench's adapter for grpc-go.
//
// Without arguments it is the client-under-test adapter: it speaks
// adapters/PROTOCOL.md (rpcbench-adapter/1) on stdin and stdout and makes
// each call once through grpc-go's generated Bank client, configured only
// by what the call's channel carries. It never retries or judges; the
// protocol session is adapters/gokit/clientkit's.
//
// With the argument "serve" it is the server-under-test adapter: it
// speaks adapters/SERVER-PROTOCOL.md (rpcbench-server/1) and serves the
// Bank service with grpc.NewServer() and no options on a loopback port;
// the protocol, bank and event lines are adapters/gokit/serverkit's.
//
// grpc-go's own logs go to stderr.
package main

import (
	"os"

	"github.com/rpcbench/rpcbench/adapters/gokit"
)

func main() {
	os.Exit(gokit.Main(clientStack, serverStack))
}
