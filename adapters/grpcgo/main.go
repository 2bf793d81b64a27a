// Command grpcgo is rpcbench's client-under-test adapter for grpc-go: it
// speaks adapters/PROTOCOL.md (rpcbench-adapter/1) on stdin and stdout
// and makes each call once through grpc-go's generated Bank client,
// configured only by what the call's channel carries. It never retries or
// judges; grpc-go's own logs go to stderr.
package main

import "os"

func main() {
	os.Exit(run(os.Stdin, os.Stdout, os.Stderr))
}
