package proxy

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/fakestack"
	"github.com/rpcbench/rpcbench/internal/rawgrpc"
)

// BenchmarkUnary makes small unary calls (a get of the fake Bank) from G
// goroutines on one connection, straight to the upstream and through the
// proxy, and reports calls/s and the 99th percentile latency: what the
// proxy costs a judged run. Both ends run in this process, so the
// numbers compare the two paths on one machine, not a deployment.
func BenchmarkUnary(b *testing.B) {
	for _, g := range []int{8, 64} {
		for _, via := range []string{"direct", "proxy"} {
			b.Run(fmt.Sprintf("G=%d/%s", g, via), func(b *testing.B) {
				addr, stop, err := fakestack.ServeBank(fakestack.SrvGood)
				if err != nil {
					b.Fatal(err)
				}
				defer stop()
				if via == "proxy" {
					p, err := Listen("127.0.0.1:0", Config{Upstream: addr})
					if err != nil {
						b.Fatal(err)
					}
					go p.Serve()
					defer p.Close()
					addr = p.Addr()
				}
				c, err := rawgrpc.Dial(context.Background(), addr)
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				msg := rawgrpc.GetRequest("acct-B", 0, 0)
				lat := make([]time.Duration, b.N)
				var next sync.Mutex
				n := 0
				var wg sync.WaitGroup
				b.ResetTimer()
				start := time.Now()
				for range g {
					wg.Go(func() {
						for {
							next.Lock()
							i := n
							n++
							next.Unlock()
							if i >= b.N {
								return
							}
							t0 := time.Now()
							st, err := c.Open(rawgrpc.Request{Method: "Get", Timeout: "10S", Message: msg})
							if err != nil {
								b.Error(err)
								return
							}
							if r, err := st.Wait(context.Background()); err != nil || r.Outcome() != "OK" {
								b.Errorf("get: %s %v", r.Outcome(), err)
								return
							}
							lat[i] = time.Since(t0)
						}
					})
				}
				wg.Wait()
				elapsed := time.Since(start)
				b.StopTimer()
				sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			})
		}
	}
}
