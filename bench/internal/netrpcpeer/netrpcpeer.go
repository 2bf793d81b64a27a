// Package netrpcpeer serves and calls the workload over Go's net/rpc with
// its default gob codec, one connection per client.
package netrpcpeer

import (
	"context"
	"fmt"
	"net"
	"net/rpc"

	"github.com/rpcbench/rpcbench/bench/internal/workload"
)

// ServiceMethod is the net/rpc name of the workload's get.
const ServiceMethod = "Bench.Get"

// Bench is the net/rpc service.
type Bench struct {
	store *workload.Store
}

// Get answers a get payload; see workload.Store.Get.
func (b *Bench) Get(req []byte, resp *[]byte) error {
	out, err := b.store.Get(req)
	if err != nil {
		return err
	}
	*resp = out
	return nil
}

// NewServer returns a net/rpc server with Bench registered on a fresh
// workload.Store. Serve it with its Accept method.
func NewServer() (*rpc.Server, error) {
	s := rpc.NewServer()
	if err := s.RegisterName("Bench", &Bench{store: workload.NewStore()}); err != nil {
		return nil, fmt.Errorf("netrpcpeer: %w", err)
	}
	return s, nil
}

// Client calls the workload's get over one net/rpc connection.
type Client struct {
	c *rpc.Client
}

// Dial connects to a net/rpc server at addr.
func Dial(ctx context.Context, addr string) (*Client, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("netrpcpeer: %w", err)
	}
	return &Client{c: rpc.NewClient(nc)}, nil
}

// Call makes one get and returns the answer, which the caller owns. If ctx
// ends first it returns ctx's error; net/rpc then drops the late answer.
func (c *Client) Call(ctx context.Context, req []byte) ([]byte, error) {
	var resp []byte
	call := c.c.Go(ServiceMethod, req, &resp, make(chan *rpc.Call, 1))
	select {
	case <-call.Done:
		return resp, call.Error
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close closes the connection.
func (c *Client) Close() error { return c.c.Close() }
