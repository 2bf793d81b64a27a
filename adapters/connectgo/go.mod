module github.com/rpcbench/rpcbench/adapters/connectgo

go 1.26.0

require (
	connectrpc.com/connect v1.21.1
	google.golang.org/protobuf v1.36.12
)

require github.com/rpcbench/rpcbench/adapters/gokit v0.0.0

require (
	github.com/google/go-cmp v0.7.0 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
	google.golang.org/grpc v1.85.0 // indirect
)

// gokit (the client and server modes' halves and the generated Bank
// code) is shared with adapters/grpcgo, from this tree: it is never
// published.
replace github.com/rpcbench/rpcbench/adapters/gokit => ../gokit
