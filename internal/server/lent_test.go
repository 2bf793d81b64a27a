package server_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/server"
	"github.com/rpcbench/rpcbench/internal/servertest"
)

// TestLentAnswersInOrder: echoes, whose answers are the requests' own
// memory and, from writevMin bytes on, written from where they lie, come
// back whole, and in order from the reader, among answers copied into the output buffer
// (gets, small echoes), when one read brings them all and the reader
// runs them, and through the workers (a fault rule, for a method never
// called, keeps the reader from running them). The sizes straddle
// writevMin and reach the largest payload a frame carries.
func TestLentAnswersInOrder(t *testing.T) {
	maxPayload := proto.MaxFrameLen - 23 - len(bank.MethodEcho)
	sizes := []int{0, 10, 2047, 2048, 2049, 3000, 16 << 10, 40000, maxPayload}
	for _, tt := range paths {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, addr := servertest.Start(t, server.DefaultConfig(), tt.faults...)
			rc := servertest.Dial(t, addr)
			var frames []proto.Frame
			var want [][]byte
			for round := range 3 {
				for i, n := range sizes {
					id := uint64(len(frames) + 1)
					if i%3 == 2 {
						frames = append(frames, servertest.Request(id, bank.MethodGet, "account=a"))
						want = append(want, nil)
						id++
					}
					p := make([]byte, n)
					for k := range p {
						p[k] = byte(k*7 + int(id) + round)
					}
					f := servertest.Request(id, bank.MethodEcho, "")
					f.Payload = p
					frames = append(frames, f)
					want = append(want, p)
				}
			}
			// One write of every request: they arrive in few reads and
			// their answers are queued together.
			rc.SendBytes(servertest.Encode(t, frames...))
			// The reader answers in order; workers, several at once, in
			// any order.
			byID := map[uint64]proto.Frame{}
			if tt.faults != nil {
				ids := make([]uint64, len(frames))
				for i, f := range frames {
					ids[i] = f.ID
				}
				byID = rc.RecvByID(ids...)
			}
			for i, f := range frames {
				got, ok := byID[f.ID]
				if !ok {
					got = rc.Recv()
				}
				if got.ID != f.ID || got.Status != proto.StatusOK {
					t.Fatalf("answer %d: got id %d %v %.40q, want id %d OK", i, got.ID, got.Status, got.Payload, f.ID)
				}
				if want[i] != nil && !bytes.Equal(got.Payload, want[i]) {
					t.Fatalf("echo id %d of %d bytes: got %d bytes, differing at %s", f.ID, len(want[i]), len(got.Payload), firstDiff(got.Payload, want[i]))
				}
			}
		})
	}
}

// paths are the two ways a business request is run: on its connection's
// reader, and, when any fault rule is configured (here one for a method
// never called), through the workers.
var paths = []struct {
	name   string
	faults []string
}{
	{"reader", nil},
	{"workers", []string{"kind=unavailable method=debit count=1"}},
}

func firstDiff(a, b []byte) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprint(i)
		}
	}
	return "the end of the shorter"
}

// TestRecycledPayloadsUnderLoad: many echoes of sizes across the pool's
// classes, from several clients at once, each answer compared with its
// request byte for byte. A request payload's memory goes back to the
// pool when its answer no longer needs it; were it recycled while its
// answer still waited to be written, a later request decoded into it
// would change that answer. Half the clients' connections run their
// requests on the reader, half through the workers.
func TestRecycledPayloadsUnderLoad(t *testing.T) {
	for _, tt := range paths {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, addr := servertest.Start(t, server.DefaultConfig(), tt.faults...)
			const clients, goroutines, calls = 3, 8, 150
			var wg sync.WaitGroup
			errs := make(chan error, clients*goroutines)
			for ci := range clients {
				c := servertest.NewClient(t, addr, servertest.ClientConfig())
				for g := range goroutines {
					wg.Go(func() {
						rng := rand.New(rand.NewPCG(uint64(ci), uint64(g)))
						for i := range calls {
							p := make([]byte, 1+rng.IntN(40000))
							for k := range p {
								p[k] = byte(rng.Uint32())
							}
							r := c.Do(context.Background(), client.Call{Method: bank.MethodEcho, Idempotent: true, Payload: p})
							if r.Status != proto.StatusOK || !bytes.Equal(r.Payload, p) {
								errs <- fmt.Errorf("client %d goroutine %d call %d: echo of %d bytes: got %v, %d bytes (differing at %s)",
									ci, g, i, len(p), r.Status, len(r.Payload), firstDiff(r.Payload, p))
								return
							}
						}
					})
				}
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}
