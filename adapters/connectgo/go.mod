module github.com/rpcbench/rpcbench/adapters/connectgo

go 1.26.0

require (
	connectrpc.com/connect v1.21.1
	google.golang.org/protobuf v1.36.12
)

require github.com/rpcbench/rpcbench/adapters/serverkit v0.0.0

// serverkit is the server mode's half shared with adapters/grpcgo, from
// this tree: it is never published.
replace github.com/rpcbench/rpcbench/adapters/serverkit => ../serverkit
