package grpcwire

import "fmt"

// Code is a gRPC status code (grpc/grpc doc/statuscodes.md), as the
// grpc-status trailer carries it.
type Code uint32

// The codes the server sends.
const (
	OK                 Code = 0
	Canceled           Code = 1
	Unknown            Code = 2
	InvalidArgument    Code = 3
	DeadlineExceeded   Code = 4
	FailedPrecondition Code = 9
	ResourceExhausted  Code = 8
	Unimplemented      Code = 12
	Internal           Code = 13
	Unavailable        Code = 14
)

var codeNames = map[Code]string{
	OK:                 "OK",
	Canceled:           "CANCELLED",
	Unknown:            "UNKNOWN",
	InvalidArgument:    "INVALID_ARGUMENT",
	DeadlineExceeded:   "DEADLINE_EXCEEDED",
	FailedPrecondition: "FAILED_PRECONDITION",
	ResourceExhausted:  "RESOURCE_EXHAUSTED",
	Unimplemented:      "UNIMPLEMENTED",
	Internal:           "INTERNAL",
	Unavailable:        "UNAVAILABLE",
}

func (c Code) String() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return fmt.Sprintf("UNKNOWN_CODE_%d", uint32(c))
}
