package proto_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/proto"
)

// BenchmarkClientGet measures calls/s and allocations of G goroutines
// sharing one client connection to an in-process server over loopback.
// Allocations are the client's and the server's together; see
// BenchmarkServerAllocs and the bench/ module for the split and for
// separate processes.
func BenchmarkClientGet(b *testing.B) {
	for _, g := range []int{8, 64} {
		b.Run(fmt.Sprintf("G=%d", g), func(b *testing.B) {
			cfg := proto.DefaultServerConfig()
			cfg.Workers = 8
			srv, err := proto.NewServer(cfg)
			if err != nil {
				b.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			go srv.Serve(ln)
			defer srv.Close()
			ccfg := proto.DefaultConfig()
			ccfg.AttemptTimeout, ccfg.Deadline = 5*time.Second, 5*time.Second
			c, err := proto.NewClient(ln.Addr().String(), ccfg)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			calls := make([]proto.Call, 64)
			for i := range calls {
				calls[i] = proto.Call{Method: proto.MethodGet, Idempotent: true, Payload: fmt.Appendf(nil, "account=acct-%d", i)}
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
