package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/server"
	"github.com/rpcbench/rpcbench/internal/servertest"
)

// TestDoAllocs pins what an answered call allocates one at a time, the
// in-process server's share included: the attempt log's backing array and
// the answer's payload, which the caller keeps, and the server's copy of
// the request. The Call itself must not move to the heap (it did, for
// Config.Trace's sake, traced or not).
func TestDoAllocs(t *testing.T) {
	_, addr := servertest.Start(t, server.DefaultConfig())
	cfg := client.DefaultConfig()
	cfg.AttemptTimeout, cfg.Deadline = 5*time.Second, 5*time.Second
	c := servertest.NewClient(t, addr, cfg)
	call := client.Call{Method: bank.MethodGet, Idempotent: true, Payload: []byte("account=a")}
	ctx := context.Background()
	c.Do(ctx, call) // dial outside the measurement
	n := testing.AllocsPerRun(1000, func() {
		if r := c.Do(ctx, call); r.Status != proto.StatusOK {
			t.Fatalf("status %v: %v", r.Status, r.Err)
		}
	})
	t.Logf("%.2f allocations per call", n)
	if n > 3 {
		t.Errorf("a call allocates %.2f times, want at most 3 (attempt log, answer payload, the server's copy of the request)", n)
	}
}
