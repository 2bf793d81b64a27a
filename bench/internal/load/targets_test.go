package load

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestPairsPerRound: a target's ratio is taken round by round, from the
// two rows of the same round, not as a ratio of medians; MB/s targets
// compare bytes; a round one row lacks is left out; a target whose rows
// did not both run is absent.
func TestPairsPerRound(t *testing.T) {
	var systems []System
	for _, s := range Systems() {
		switch s.Key {
		case KeyRPCBench, KeyDRPC, KeyRPCBench16k, KeyRaw16k, KeyRaw:
			systems = append(systems, s)
		}
	}
	sample := func(name string, g, round int, calls, bytes int64) Sample {
		return Sample{System: name, G: g, Round: round, Calls: calls, Bytes: bytes, Elapsed: time.Second}
	}
	samples := []Sample{
		// Load moves both rows of a round together: the per-round
		// ratios are 2, 2.5 and 3, while the ratio of the medians
		// (200/90) would be 2.22.
		sample("rpcbench", 8, 1, 100, 0), sample("drpc", 8, 1, 50, 0),
		sample("rpcbench", 8, 2, 200, 0), sample("drpc", 8, 2, 80, 0),
		sample("rpcbench", 8, 3, 300, 0), sample("drpc", 8, 3, 100, 0),
		sample("rpcbench", 8, 4, 300, 0), // drpc failed to run in round 4
		// 16k: equal calls/s, different bytes.
		sample("rpcbench-16k", 8, 1, 10, 600), sample("raw-floor-16k", 8, 1, 10, 1000),
		// raw-floor ran only at G=64: no rpcbench / raw-floor pair at 8.
		sample("raw-floor", 64, 1, 400, 0),
	}
	got := pairs(Targets(), systems, samples)
	want := []Pair{
		{Target: Target{Num: KeyRPCBench, Den: KeyDRPC, G: 8, Min: 2}, Name: "rpcbench / drpc",
			Ratios: []float64{2, 2.5, 3}, Median: 2.5, Lo: 2, Hi: 3},
		{Target: Target{Num: KeyRPCBench16k, Den: KeyRaw16k, G: 8, MB: true, Min: 0.8}, Name: "rpcbench-16k / raw-floor-16k",
			Ratios: []float64{0.6}, Median: 0.6, Lo: 0.6, Hi: 0.6},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("pairs (-want +got):\n%s", diff)
	}
	if !got[0].Met() || got[1].Met() {
		t.Errorf("met: got %v and %v, want true and false", got[0].Met(), got[1].Met())
	}
}
