// Package grpcpeer serves and calls the workload over grpc-go without
// protoc: a hand-written ServiceDesc with one unary method and a codec that
// passes []byte through untouched, so messages are the same bytes the
// other systems send.
package grpcpeer

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"

	"github.com/rpcbench/rpcbench/bench/internal/workload"
)

// FullMethod is the grpc method name of the workload's get.
const FullMethod = "/rpcbench.bench.Bench/Get"

// Codec is an encoding.CodecV2 for messages that are already bytes: a
// []byte or *[]byte is sent as it is, and a message is received into a
// *[]byte.
type Codec struct{}

var _ encoding.CodecV2 = Codec{}

// Name is the content subtype: "application/grpc+rpcbench-raw".
func (Codec) Name() string { return "rpcbench-raw" }

// Marshal wraps v's bytes without copying them; grpc must not modify them,
// and does not.
func (Codec) Marshal(v any) (mem.BufferSlice, error) {
	switch b := v.(type) {
	case []byte:
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	case *[]byte:
		return mem.BufferSlice{mem.SliceBuffer(*b)}, nil
	}
	return nil, fmt.Errorf("grpcpeer: cannot marshal %T, want []byte or *[]byte", v)
}

// Unmarshal copies data into a new slice stored in v, which must be a
// *[]byte: grpc frees data when Unmarshal returns.
func (Codec) Unmarshal(data mem.BufferSlice, v any) error {
	p, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("grpcpeer: cannot unmarshal into %T, want *[]byte", v)
	}
	*p = data.Materialize()
	return nil
}

// getter is the service's handler type, checked by grpc.RegisterService.
type getter interface {
	Get(ctx context.Context, req []byte) ([]byte, error)
}

type service struct{ store *workload.Store }

func (s *service) Get(_ context.Context, req []byte) ([]byte, error) {
	return s.store.Get(req)
}

func getHandler(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
	var req []byte
	if err := dec(&req); err != nil {
		return nil, err
	}
	s := srv.(getter)
	if interceptor == nil {
		return s.Get(ctx, req)
	}
	info := &grpc.UnaryServerInfo{Server: srv, FullMethod: FullMethod}
	return interceptor(ctx, req, info, func(ctx context.Context, req any) (any, error) {
		return s.Get(ctx, req.([]byte))
	})
}

var serviceDesc = grpc.ServiceDesc{
	ServiceName: "rpcbench.bench.Bench",
	HandlerType: (*getter)(nil),
	Methods:     []grpc.MethodDesc{{MethodName: "Get", Handler: getHandler}},
	Metadata:    "hand-written; no .proto",
}

// NewServer returns a grpc server, default options but the codec, that
// answers the workload's get from a fresh workload.Store.
func NewServer() *grpc.Server {
	s := grpc.NewServer(grpc.ForceServerCodecV2(Codec{}))
	s.RegisterService(&serviceDesc, &service{store: workload.NewStore()})
	return s
}

// Client calls the workload's get over one *grpc.ClientConn.
type Client struct {
	cc *grpc.ClientConn
}

// Dial returns a Client for addr, default options but plaintext and the
// codec. Like grpc.NewClient it connects on first use.
func Dial(addr string) (*Client, error) {
	cc, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(Codec{})))
	if err != nil {
		return nil, fmt.Errorf("grpcpeer: %w", err)
	}
	return &Client{cc: cc}, nil
}

// Call makes one unary get and returns the answer, which the caller owns.
func (c *Client) Call(ctx context.Context, req []byte) ([]byte, error) {
	var resp []byte
	if err := c.cc.Invoke(ctx, FullMethod, req, &resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.cc.Close() }
