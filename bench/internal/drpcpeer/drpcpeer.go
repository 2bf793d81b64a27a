// Package drpcpeer serves and calls the workload over storj.io/drpc
// without protoc: a hand-written Description with one unary method and an
// Encoding that passes []byte through untouched, so messages are the same
// bytes the other systems send.
//
// A drpc connection carries one RPC at a time (a second Invoke waits for
// the first to end); drpc's answer to concurrency is a pool of
// connections. A Conn here is one connection, and a caller that wants G
// calls in flight dials G of them.
package drpcpeer

import (
	"context"
	"fmt"
	"net"

	"storj.io/drpc"
	"storj.io/drpc/drpcconn"
	"storj.io/drpc/drpcmux"
	"storj.io/drpc/drpcserver"

	"github.com/rpcbench/rpcbench/bench/internal/workload"
)

// RPC is the drpc name of the workload's get.
const RPC = "/rpcbench.bench.Bench/Get"

// Encoding is a drpc.Encoding for messages that are already bytes: a
// []byte or *[]byte is sent as it is, and a message is received into a
// *[]byte.
type Encoding struct{}

var _ drpc.Encoding = Encoding{}

func bytesOf(msg drpc.Message) ([]byte, error) {
	switch b := msg.(type) {
	case []byte:
		return b, nil
	case *[]byte:
		return *b, nil
	}
	return nil, fmt.Errorf("drpcpeer: cannot marshal %T, want []byte or *[]byte", msg)
}

// Marshal returns msg's bytes without copying them; drpc copies them
// into its write buffer (through MarshalAppend) and does not modify them.
func (Encoding) Marshal(msg drpc.Message) ([]byte, error) { return bytesOf(msg) }

// MarshalAppend appends msg's bytes to buf: drpc calls it instead of
// Marshal, so that a message is copied once, into drpc's buffer.
func (Encoding) MarshalAppend(buf []byte, msg drpc.Message) ([]byte, error) {
	b, err := bytesOf(msg)
	if err != nil {
		return nil, err
	}
	return append(buf, b...), nil
}

// Unmarshal copies buf into a new slice stored in msg, which must be a
// *[]byte: drpc reuses buf once Unmarshal returns.
func (Encoding) Unmarshal(buf []byte, msg drpc.Message) error {
	p, ok := msg.(*[]byte)
	if !ok {
		return fmt.Errorf("drpcpeer: cannot unmarshal into %T, want *[]byte", msg)
	}
	*p = append([]byte(nil), buf...)
	return nil
}

type service struct{ store *workload.Store }

// Get is registered by its method expression, (*service).Get, whose type
// tells drpcmux that the method is unary and its input a *[]byte.
func (s *service) Get(_ context.Context, req *[]byte) (*[]byte, error) {
	out, err := s.store.Get(*req)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// description is the hand-written drpc.Description of the one method.
type description struct{}

func (description) NumMethods() int { return 1 }

func (description) Method(n int) (string, drpc.Encoding, drpc.Receiver, any, bool) {
	if n != 0 {
		return "", nil, nil, nil, false
	}
	recv := func(srv any, ctx context.Context, in1, _ any) (drpc.Message, error) {
		return srv.(*service).Get(ctx, in1.(*[]byte))
	}
	return RPC, Encoding{}, recv, (*service).Get, true
}

// Server serves the workload's get from a fresh workload.Store.
type Server struct {
	s *drpcserver.Server
}

// NewServer returns a drpc server, default options, answering the
// workload's get.
func NewServer() (*Server, error) {
	mux := drpcmux.New()
	if err := mux.Register(&service{store: workload.NewStore()}, description{}); err != nil {
		return nil, fmt.Errorf("drpcpeer: %w", err)
	}
	return &Server{s: drpcserver.New(mux)}, nil
}

// Serve accepts connections on ln, each served by a goroutine of its
// own, until ctx ends, when it closes ln and returns nil once every
// connection's goroutine is done.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	return s.s.Serve(ctx, ln)
}

// Conn calls the workload's get over one drpc connection, one call at a
// time.
type Conn struct {
	c *drpcconn.Conn
}

// Dial connects to a drpc server at addr.
func Dial(ctx context.Context, addr string) (*Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("drpcpeer: %w", err)
	}
	return &Conn{c: drpcconn.New(nc)}, nil
}

// Call makes one unary get and returns the answer, which the caller
// owns. A call made while another is in flight on the same Conn waits
// for it.
func (c *Conn) Call(ctx context.Context, req []byte) ([]byte, error) {
	var resp []byte
	if err := c.c.Invoke(ctx, RPC, Encoding{}, req, &resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }
