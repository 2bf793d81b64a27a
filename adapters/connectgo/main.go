// Command connectgo is rpcbench's client-under-test adapter for
// connect-go: it speaks adapters/PROTOCOL.md (rpcbench-adapter/1) on
// stdin and stdout and makes each call once through connect-go's
// generated Bank client in its gRPC protocol (connect.WithGRPC), over
// net/http's own HTTP/2 cleartext transport, configured only by what the
// call's channel carries. It never retries or judges; whatever net/http
// replays by itself is part of what the column shows. Its own logs go
// to stderr.
package main

import "os"

func main() {
	os.Exit(run(os.Stdin, os.Stdout, os.Stderr))
}
