package client_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/server"
	"github.com/rpcbench/rpcbench/internal/servertest"
)

// hedgeClient is servertest.ClientConfig with cfg.Hedge set to h, tuned
// further by mutate when it is not nil.
func hedgeClient(t *testing.T, addr string, h client.HedgeConfig, mutate func(*client.Config)) *client.Client {
	t.Helper()
	cfg := servertest.ClientConfig()
	cfg.Hedge = &h
	if mutate != nil {
		mutate(&cfg)
	}
	return servertest.NewClient(t, addr, cfg)
}

// TestHedgeWins: the first requests to a server are slow; a hedged get
// returns after about Delay per hedge plus a fast answer, the hedge
// winning and every earlier attempt abandoned, and the server executes
// them all, the slow ones answering late.
func TestHedgeWins(t *testing.T) {
	const delay, slow = 50 * time.Millisecond, time.Second
	tests := []struct {
		name      string
		maxHedges int
		slowCount int
	}{
		{"one_hedge", 0, 1},
		{"two_hedges", 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, addr := servertest.Start(t, server.DefaultConfig(), fmt.Sprintf("kind=sleep method=get count=%d delay=%v", tt.slowCount, slow))
			c := hedgeClient(t, addr, client.HedgeConfig{Delay: delay, MaxHedges: tt.maxHedges}, nil)
			r := c.Do(context.Background(), servertest.Get("a"))
			attempts := tt.slowCount + 1
			if r.Status != proto.StatusOK || r.Stop != client.StopFinal || r.Attempts != attempts {
				t.Fatalf("got %v, stop %q, %d attempts %v; want OK, final, %d attempts", r.Status, r.Stop, r.Attempts, r.Log, attempts)
			}
			if min := time.Duration(tt.slowCount) * delay; r.Elapsed < min || r.Elapsed >= slow {
				t.Errorf("Elapsed = %v, want in [%v, %v)", r.Elapsed, min, slow)
			}
			ids := map[uint64]bool{}
			for i, a := range r.Log {
				ids[a.ID] = true
				last := i == len(r.Log)-1
				if a.Hedge != (i > 0) {
					t.Errorf("Log[%d].Hedge = %v, want %v", i, a.Hedge, i > 0)
				}
				if got := strings.HasSuffix(a.String(), " hedge"); got != (i > 0) {
					t.Errorf("Log[%d].String() = %q; ends in \" hedge\": %v, want %v", i, a, got, i > 0)
				}
				switch {
				case last && (a.Outcome != client.OutcomeResponse || a.Class != client.ClassFinal):
					t.Errorf("Log[%d] = %v, want the winning RESPONSE", i, a)
				case !last && (a.Outcome != client.OutcomeAbandoned || a.Class != client.ClassUnknown):
					t.Errorf("Log[%d] = %v, want ABANDONED, OUTCOME_UNKNOWN", i, a)
				}
			}
			if len(ids) != attempts {
				t.Errorf("request IDs %v: want %d distinct", r.Log, attempts)
			}
			servertest.WaitCounter(t, srv, "exec.get", int64(attempts))
			servertest.WaitFor(t, "the slow answers dropped as late", func() bool { return c.Stats().LateDropped == int64(tt.slowCount) })
			if st := c.Stats(); st.Hedges != int64(tt.slowCount) || st.HedgeWins != 1 {
				t.Errorf("Stats() Hedges %d, HedgeWins %d; want %d, 1", st.Hedges, st.HedgeWins, tt.slowCount)
			}
			if got := servertest.Counter(t, srv, "requests.get"); got != int64(attempts) {
				t.Errorf("server saw %d gets, want %d", got, attempts)
			}
		})
	}
}

// TestHedgeNotSent: calls that are not idempotent, answers faster than
// Delay, a first attempt failing before Delay and an exhausted retry
// budget send no hedge.
func TestHedgeNotSent(t *testing.T) {
	const slow = 300 * time.Millisecond
	keyed := servertest.Debit("a", 1)
	keyed.Key = "k1"
	// drain spends the retry budget below half: the first debit's four
	// UNAVAILABLE attempts take 10 -> 6 tokens, the second's one -> 5.
	drain := func(t *testing.T, c *client.Client) {
		for range 2 {
			c.Do(context.Background(), servertest.Debit("a", 1))
		}
		if st := c.Stats(); st.RetriesThrottled != 1 {
			t.Fatalf("draining the budget: RetriesThrottled %d, want 1", st.RetriesThrottled)
		}
	}
	tests := []struct {
		name     string
		faults   []string
		delay    time.Duration
		budget   *client.RetryBudget
		prepare  func(*testing.T, *client.Client)
		call     client.Call
		attempts int
		minTime  time.Duration
	}{
		{"fast_get", nil, 500 * time.Millisecond, nil, nil, servertest.Get("a"), 1, 0},
		{"keyless_debit_slow", []string{"kind=sleep method=debit count=1 delay=300ms"}, 30 * time.Millisecond, nil, nil, servertest.Debit("a", 1), 1, slow},
		{"keyed_debit_slow", []string{"kind=sleep method=debit count=1 delay=300ms"}, 30 * time.Millisecond, nil, nil, keyed, 1, slow},
		{"keyless_debit_sleep_field", nil, 30 * time.Millisecond, nil, nil, servertest.Debit("a", 1, "sleep=300"), 1, slow},
		{"first_fails_before_delay", []string{"kind=unavailable method=get count=1"}, 500 * time.Millisecond, nil, nil, servertest.Get("a"), 2, 0},
		{"budget_exhausted", []string{"kind=unavailable method=debit"}, 30 * time.Millisecond, &client.RetryBudget{MaxTokens: 10, TokenRatio: 0.1}, drain, servertest.Get("a", "sleep=300"), 1, slow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, addr := servertest.Start(t, server.DefaultConfig(), tt.faults...)
			c := hedgeClient(t, addr, client.HedgeConfig{Delay: tt.delay}, func(cfg *client.Config) {
				cfg.BackoffInitial, cfg.BackoffMax = time.Millisecond, 2*time.Millisecond
				cfg.RetryBudget = tt.budget
			})
			if tt.prepare != nil {
				tt.prepare(t, c)
			}
			before := servertest.Counter(t, srv, "requests."+tt.call.Method)
			r := c.Do(context.Background(), tt.call)
			if r.Status != proto.StatusOK || r.Attempts != tt.attempts || r.Elapsed < tt.minTime {
				t.Fatalf("got %v after %d attempts in %v %v; want OK after %d, in %v or more", r.Status, r.Attempts, r.Elapsed, r.Log, tt.attempts, tt.minTime)
			}
			for i, a := range r.Log {
				if a.Hedge || strings.Contains(a.String(), "hedge") {
					t.Errorf("Log[%d] = %v, want no hedge", i, a)
				}
			}
			if st := c.Stats(); st.Hedges != 0 || st.HedgeWins != 0 {
				t.Errorf("Stats() Hedges %d, HedgeWins %d; want 0, 0", st.Hedges, st.HedgeWins)
			}
			if got := servertest.Counter(t, srv, "requests."+tt.call.Method) - before; got != int64(tt.attempts) {
				t.Errorf("server saw %d requests of the call, want %d", got, tt.attempts)
			}
		})
	}
}

// TestHedgeConcurrent: goroutines sharing a hedging client, one get in
// five slow, all get their own answers, and the hedges are counted.
func TestHedgeConcurrent(t *testing.T) {
	t.Parallel()
	cfg := server.DefaultConfig()
	cfg.Workers = 16
	_, addr := servertest.Start(t, cfg)
	c := hedgeClient(t, addr, client.HedgeConfig{Delay: 30 * time.Millisecond}, func(cfg *client.Config) {
		cfg.MaxInFlight = 64
	})
	const goroutines, calls = 8, 20
	var wg sync.WaitGroup
	var mu sync.Mutex
	hedged := 0
	for g := range goroutines {
		wg.Go(func() {
			for i := range calls {
				var extra []string
				if i%5 == 0 {
					extra = append(extra, "sleep=200")
				}
				r := c.Do(context.Background(), servertest.Get(fmt.Sprintf("acct-%d-%d", g, i), extra...))
				if r.Status != proto.StatusOK {
					t.Errorf("got %v %v, want OK", r.Status, r.Log)
					return
				}
				mu.Lock()
				hedged += r.Attempts - 1
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	st := c.Stats()
	if st.Hedges != int64(hedged) || st.HedgeWins > st.Hedges || st.Hedges < goroutines*calls/5 {
		t.Errorf("Stats() Hedges %d, HedgeWins %d; want Hedges = %d extra attempts logged, at least %d, HedgeWins <= Hedges", st.Hedges, st.HedgeWins, hedged, goroutines*calls/5)
	}
	if got := c.InFlight(); got != 0 {
		t.Errorf("InFlight() = %d after all calls returned, want 0", got)
	}
}
