package client_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/server"
	"github.com/rpcbench/rpcbench/internal/servertest"
)

// BenchmarkClientGet measures calls/s and allocations of G goroutines
// sharing one client connection to an in-process server over loopback.
// Allocations are the client's and the server's together; see
// BenchmarkServeGet (internal/server), BenchmarkExecuteGet
// (internal/bank) and the bench/ module for the split and for separate
// processes.
func BenchmarkClientGet(b *testing.B) {
	for _, g := range []int{8, 64} {
		b.Run(fmt.Sprintf("G=%d", g), func(b *testing.B) {
			cfg := server.DefaultConfig()
			cfg.Workers = 8
			_, addr := servertest.Start(b, cfg)
			ccfg := client.DefaultConfig()
			ccfg.AttemptTimeout, ccfg.Deadline = 5*time.Second, 5*time.Second
			c := servertest.NewClient(b, addr, ccfg)
			calls := make([]client.Call, 64)
			for i := range calls {
				calls[i] = client.Call{Method: bank.MethodGet, Idempotent: true, Payload: fmt.Appendf(nil, "account=acct-%d", i)}
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			var mu sync.Mutex
			next := 0
			for w := range g {
				wg.Go(func() {
					for i := w; ; i++ {
						mu.Lock()
						if next >= b.N {
							mu.Unlock()
							return
						}
						next++
						mu.Unlock()
						if r := c.Do(ctx, calls[i%len(calls)]); r.Status != proto.StatusOK {
							b.Errorf("status %v: %v %v %+v", r.Status, r.Err, r.Log, c.Stats())
							return
						}
					}
				})
			}
			wg.Wait()
		})
	}
}
