package load

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rpcbench/rpcbench/bench/internal/grpcpeer"
	"github.com/rpcbench/rpcbench/bench/internal/netrpcpeer"
	"github.com/rpcbench/rpcbench/bench/internal/rawwire"
	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
)

// System keys, as -systems takes them.
const (
	KeyRPCBench   = "rpcbench"
	KeyGRPC       = "grpc"
	KeyNetRPC     = "netrpc"
	KeyPerRequest = "per-request"
	KeyRaw        = "raw"
)

// Server kinds: which process a system's client talks to.
const (
	serverRPC    = "rpcserver"
	serverGRPC   = "grpc"
	serverNetRPC = "netrpc"
	serverRaw    = "raw"
)

// Client is one system's client: one connection (or, for per-request, one
// dialer) that every goroutine of a row shares.
type Client interface {
	// Call makes one get with payload req and returns the answer's
	// payload. An error is a call that did not end OK.
	Call(ctx context.Context, req []byte) ([]byte, error)
	Close() error
}

// retryCounter is implemented by clients that may retry inside Call, so a
// row can report how many of its OK calls needed more than one attempt.
type retryCounter interface {
	Retried() int64
}

// System is one row kind of the table.
type System struct {
	Key  string
	Name string // as printed in the table
	// Server is the kind of server process the client talks to.
	Server string
	// CallsDiv divides Options.N and Options.Warmup for this system, for
	// one too slow to run the full count.
	CallsDiv int
	Dial     func(ctx context.Context, addr string) (Client, error)
}

// Systems returns every system, in the table's row order.
func Systems() []System {
	return []System{
		{Key: KeyRPCBench, Name: "rpcbench", Server: serverRPC, CallsDiv: 1, Dial: dialRPCBench(false)},
		{Key: KeyGRPC, Name: "grpc-go", Server: serverGRPC, CallsDiv: 1, Dial: dialGRPC},
		{Key: KeyNetRPC, Name: "net/rpc", Server: serverNetRPC, CallsDiv: 1, Dial: dialNetRPC},
		{Key: KeyPerRequest, Name: "rpcbench-per-request", Server: serverRPC, CallsDiv: 10, Dial: dialRPCBench(true)},
		{Key: KeyRaw, Name: "raw-floor", Server: serverRaw, CallsDiv: 1, Dial: dialRaw},
	}
}

// selectSystems returns the systems named by keys (or table names), in
// the order given; none means all.
func selectSystems(keys []string) ([]System, error) {
	all := Systems()
	if len(keys) == 0 {
		return all, nil
	}
	var out []System
	seen := map[string]bool{}
	for _, k := range keys {
		found := false
		for _, s := range all {
			if k == s.Key || k == s.Name {
				if !seen[s.Key] {
					out = append(out, s)
					seen[s.Key] = true
				}
				found = true
			}
		}
		if !found {
			var valid []string
			for _, s := range all {
				valid = append(valid, s.Key)
			}
			return nil, fmt.Errorf("%w: unknown system %q, want one of %s", ErrOptions, k, strings.Join(valid, ","))
		}
	}
	return out, nil
}

// RPCBenchConfig is the client configuration of the rpcbench rows: the
// defaults, with timeouts long enough that no call times out under load.
func RPCBenchConfig(connPerCall bool) client.Config {
	cfg := client.DefaultConfig()
	cfg.AttemptTimeout = 5 * time.Second
	cfg.Deadline = 10 * time.Second
	cfg.ConnPerCall = connPerCall
	return cfg
}

type rpcbenchClient struct {
	c       *client.Client
	retried atomic.Int64
}

func dialRPCBench(connPerCall bool) func(context.Context, string) (Client, error) {
	return func(_ context.Context, addr string) (Client, error) {
		c, err := client.New(addr, RPCBenchConfig(connPerCall))
		if err != nil {
			return nil, err
		}
		return &rpcbenchClient{c: c}, nil
	}
}

// StatusError is a call rpcbench ended with a status other than OK.
type StatusError struct {
	Status  proto.Status
	Payload string
	Err     error // the last attempt's error, if there was no answer
}

func (e *StatusError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("rpcbench: %v: %v", e.Status, e.Err)
	}
	return fmt.Sprintf("rpcbench: %v: %q", e.Status, e.Payload)
}

func (e *StatusError) Unwrap() error { return e.Err }

func (c *rpcbenchClient) Call(ctx context.Context, req []byte) ([]byte, error) {
	r := c.c.Do(ctx, client.Call{Method: bank.MethodGet, Idempotent: true, Payload: req})
	if r.Attempts > 1 {
		c.retried.Add(1)
	}
	if r.Status != proto.StatusOK {
		return nil, &StatusError{Status: r.Status, Payload: string(r.Payload), Err: r.Err}
	}
	return r.Payload, nil
}

func (c *rpcbenchClient) Close() error   { return c.c.Close() }
func (c *rpcbenchClient) Retried() int64 { return c.retried.Load() }

func dialGRPC(_ context.Context, addr string) (Client, error) {
	return grpcpeer.Dial(addr)
}

func dialNetRPC(ctx context.Context, addr string) (Client, error) {
	return netrpcpeer.Dial(ctx, addr)
}

func dialRaw(ctx context.Context, addr string) (Client, error) {
	return rawwire.Dial(ctx, addr)
}
