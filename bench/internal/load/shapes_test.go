package load

import (
	"context"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/bench/internal/workload"
)

// TestRunShapes runs drpc and every row of the shapes of load for real,
// servers in their own processes, with a few calls, and checks that
// every call got the right answer (each 16 KiB echo equal to its
// request), that the payload bytes add up, and that rpcserver held the
// idle row's connections. It asserts nothing about speed.
func TestRunShapes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and spawns the servers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	o := DefaultOptions()
	o.Systems = []string{KeyRPCBench, KeyDRPC, KeyRaw, GroupShapes}
	o.N, o.Warmup, o.Rounds, o.G = 600, 60, 2, []int{8, 64}
	rep, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	type rowID struct {
		key string
		g   int
	}
	want := []rowID{
		{KeyRPCBench, 8}, {KeyDRPC, 8}, {KeyRaw, 8}, {KeyRPCBench16k, 8}, {KeyRaw16k, 8},
		{KeyRPCBench, 64}, {KeyDRPC, 64}, {KeyRaw, 64}, {KeyIdle, 64}, {KeyRPCBench16k, 64}, {KeyRaw16k, 64},
		{KeyRPCBench64, 512}, {KeyRaw64, 512},
	}
	var got []rowID
	for _, r := range rep.Rows {
		got = append(got, rowID{r.Key, r.G})
	}
	if len(got) != len(want) {
		t.Fatalf("rows: got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d: got %v, want %v", i, got[i], want[i])
		}
	}
	for _, r := range rep.Rows {
		calls := int64(o.Rounds * o.N)
		if r.TotalCalls != calls || r.NonOK != 0 || r.ExecErrors != 0 {
			t.Errorf("%s G=%d: got %d non-OK of %d calls (first: %s; %s), want 0 of %d", r.System, r.G, r.NonOK, r.TotalCalls, r.FirstError, r.FirstExecError, calls)
		}
		if r.CallsPerSec <= 0 || r.MBPerSec <= 0 || r.P50us <= 0 || r.P99us < r.P50us {
			t.Errorf("%s G=%d: got calls/s %v MB/s %v p50 %vµs p99 %vµs, want positive and ordered", r.System, r.G, r.CallsPerSec, r.MBPerSec, r.P50us, r.P99us)
		}
		if r.VsFloor <= 0 || r.VsRPCBench <= 0 {
			t.Errorf("%s G=%d: got vs rpcbench %v, vs floor %v, want both: every shape's rows ran", r.System, r.G, r.VsRPCBench, r.VsFloor)
		}
	}
	for _, s := range rep.Samples {
		switch s.System {
		case KeyRPCBench16k, KeyRaw16k:
			if want := s.Calls * 2 * workload.EchoSize; s.Bytes != want {
				t.Errorf("%s G=%d round %d: got %d payload bytes, want %d: every call a 16 KiB request and answer", s.System, s.G, s.Round, s.Bytes, want)
			}
		case KeyIdle:
			if s.ConnsOpen < idleConns+1 {
				t.Errorf("%s round %d: rpcserver had %d connections open, want at least %d", s.System, s.Round, s.ConnsOpen, idleConns+1)
			}
		}
	}
}

// TestRunConnsMemory runs the conns-memory measurement for real, with
// few connections, and checks that each server has a point per count
// and that the KiB per connection are computed from the RSS. It asserts
// nothing about the figures.
func TestRunConnsMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and spawns the servers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	o := DefaultOptions()
	o.Systems = []string{KeyConnsMemory}
	o.MemoryConns = []int{20, 50}
	rep, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 0 {
		t.Errorf("got %d rows, want none: conns-memory alone runs no row", len(rep.Rows))
	}
	if len(rep.ConnsMemory) != 2 || rep.ConnsMemory[0].Server != "rpcserver" || rep.ConnsMemory[1].Server != "raw-floor" {
		t.Fatalf("got %+v, want rpcserver and raw-floor", rep.ConnsMemory)
	}
	for _, cm := range rep.ConnsMemory {
		if len(cm.Skipped) != 0 {
			t.Errorf("%s: skipped %v, want nothing skipped at 50 connections", cm.Server, cm.Skipped)
		}
		if len(cm.Points) != 3 {
			t.Fatalf("%s: got points %+v, want 0, 20, 50", cm.Server, cm.Points)
		}
		rss0 := cm.Points[0].RSSKiB
		for i, pt := range cm.Points {
			if wantN := []int{0, 20, 50}[i]; pt.Conns != wantN {
				t.Errorf("%s point %d: got %d connections, want %d", cm.Server, i, pt.Conns, wantN)
			}
			if pt.RSSKiB <= 0 {
				t.Errorf("%s at %d: got RSS %d KiB, want positive", cm.Server, pt.Conns, pt.RSSKiB)
			}
			want := 0.0
			if pt.Conns > 0 {
				want = float64(pt.RSSKiB-rss0) / float64(pt.Conns)
			}
			if pt.PerConnKiB != want {
				t.Errorf("%s at %d: got %v KiB per connection, want (%d-%d)/%d = %v", cm.Server, pt.Conns, pt.PerConnKiB, pt.RSSKiB, rss0, pt.Conns, want)
			}
		}
	}
}
