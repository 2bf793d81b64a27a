package load

import (
	"context"
	"testing"
	"time"
)

func TestGovernedConfig(t *testing.T) {
	for _, g := range []int{1, 8, 64} {
		cfg := GovernedConfig(g)
		if err := cfg.Validate(); err != nil {
			t.Fatalf("G=%d: %v", g, err)
		}
		if cfg.RetryBudget == nil || cfg.Breaker == nil {
			t.Errorf("G=%d: got retry budget %v, breaker %v, want both set", g, cfg.RetryBudget, cfg.Breaker)
		}
		if got, want := cfg.MaxInFlight, 4*g; got != want {
			t.Errorf("G=%d: MaxInFlight got %d, want %d", g, got, want)
		}
		if len(cfg.RateLimits) != 0 {
			t.Errorf("G=%d: got rate limits %v, want none: they would throttle the row", g, cfg.RateLimits)
		}
	}
}

// TestRunGoverned runs the rpcbench-governed row for real, beside the
// rpcbench row, and checks that governance refused and retried nothing:
// every call ended OK at its first attempt. It asserts nothing about
// speed.
func TestRunGoverned(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and spawns the servers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	o := DefaultOptions()
	o.Systems = []string{KeyRPCBench, KeyGoverned}
	o.N, o.Warmup, o.Rounds, o.G = 2000, 200, 2, []int{8, 64}
	rep, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(rep.Rows), len(o.G)*len(o.Systems); got != want {
		t.Fatalf("rows: got %d, want %d", got, want)
	}
	for _, r := range rep.Rows {
		calls := int64(o.Rounds * o.N)
		if r.TotalCalls != calls || r.NonOK != 0 {
			t.Errorf("%s G=%d: got %d non-OK of %d calls (first: %s), want 0 of %d", r.System, r.G, r.NonOK, r.TotalCalls, r.FirstError, calls)
		}
		if r.Retried != 0 {
			t.Errorf("%s G=%d: got %d calls retried, want 0", r.System, r.G, r.Retried)
		}
		if r.CallsPerSec <= 0 || r.P50us <= 0 || r.P99us < r.P50us {
			t.Errorf("%s G=%d: got calls/s %v p50 %vµs p99 %vµs, want positive and ordered", r.System, r.G, r.CallsPerSec, r.P50us, r.P99us)
		}
	}
}
