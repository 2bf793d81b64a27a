// Command grpcgo is rpcbench's adapter for grpc-go.
//
// Without arguments it is the client-under-test adapter: it speaks
// adapters/PROTOCOL.md (rpcbench-adapter/1) on stdin and stdout and makes
// each call once through grpc-go's generated Bank client, configured only
// by what the call's channel carries. It never retries or judges.
//
// With the argument "serve" it is the server-under-test adapter: it
// speaks adapters/SERVER-PROTOCOL.md (rpcbench-server/1) and serves the
// Bank service with grpc.NewServer() and no options on a loopback port;
// the protocol, bank and event lines are adapters/serverkit's.
//
// grpc-go's own logs go to stderr.
package main

import (
	"os"

	"github.com/rpcbench/rpcbench/adapters/serverkit"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		os.Exit(serverkit.Run(os.Stdin, os.Stdout, os.Stderr, stack))
	}
	os.Exit(run(os.Stdin, os.Stdout, os.Stderr))
}
