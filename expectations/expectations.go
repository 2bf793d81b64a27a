// Package expectations holds what each client stack the grpc scenario
// group judges is known to do: one file per stack, STACK.txt, each line
// a violation pinned with its reason (internal/pins). The files are
// embedded in rpcbench, so that a run judges against the pins it was
// built with.
package expectations

import "embed"

// Files are the expectations files, by name: "grpc-go.txt", and those
// of the stacks at other releases, "releases/grpc-go@1.60.1.txt".
//
//go:embed *.txt releases
var Files embed.FS
