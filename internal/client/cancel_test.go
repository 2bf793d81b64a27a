package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/server"
	"github.com/rpcbench/rpcbench/internal/servertest"
)

// TestCancelAbandonedQueued: one worker is busy with a slow get; a keyless
// debit queued behind it is abandoned after 50ms, by its attempt timeout
// or by the caller's cancel. With CancelAbandoned the server drops it
// unexecuted when the worker frees up. Without it, a timed-out debit
// still expires on the server (its budget was the same 50ms), but a
// canceled one, whose budget was 2s, executes: the negative control.
func TestCancelAbandonedQueued(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		cancel   bool // Config.CancelAbandoned
		byCaller bool // the caller cancels at 50ms; otherwise the attempt times out
		outcome  client.Outcome
		want     map[string]int64 // server counters once the worker is free
		sent     int64            // Stats().CancelsSent
	}{
		{"timeout_cancel", true, false, client.OutcomeTimeout, map[string]int64{"canceled": 1, "expired": 0, "exec.debit": 0}, 1},
		{"timeout_no_cancel", false, false, client.OutcomeTimeout, map[string]int64{"canceled": 0, "expired": 1, "exec.debit": 0}, 0},
		{"caller_cancel", true, true, client.OutcomeCanceled, map[string]int64{"canceled": 1, "expired": 0, "exec.debit": 0}, 1},
		{"caller_no_cancel", false, true, client.OutcomeCanceled, map[string]int64{"canceled": 0, "expired": 0, "exec.debit": 1}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := server.DefaultConfig()
			cfg.Workers = 1
			srv, addr := servertest.Start(t, cfg)
			ccfg := servertest.ClientConfig()
			ccfg.CancelAbandoned = tt.cancel
			c := servertest.NewClient(t, addr, ccfg)

			slow := make(chan client.Result, 1)
			go func() { slow <- c.Do(context.Background(), servertest.Get("a", "sleep=1000")) }()
			servertest.WaitCounter(t, srv, "requests.get", 1)

			call := servertest.Debit("a", 10)
			ctx := context.Background()
			if tt.byCaller {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				// Not WithTimeout: a context deadline would shorten the
				// budget sent to the server.
				time.AfterFunc(50*time.Millisecond, cancel)
			} else {
				call.AttemptTimeout = 50 * time.Millisecond
			}
			r := c.Do(ctx, call)
			if r.Status != proto.StatusUnknown || len(r.Log) != 1 || r.Log[0].Outcome != tt.outcome {
				t.Fatalf("debit: got status %v, log %v; want UNKNOWN after one %v", r.Status, r.Log, tt.outcome)
			}
			if got := c.Stats().CancelsSent; got != tt.sent {
				t.Errorf("Stats().CancelsSent = %d, want %d", got, tt.sent)
			}
			if r := <-slow; r.Status != proto.StatusOK {
				t.Fatalf("slow get: status %v (%v), want OK", r.Status, r.Log)
			}
			// The debit's answer, whatever it is, comes after the worker
			// took it; the cancel's answer is not counted as late.
			servertest.WaitFor(t, "the debit's late answer", func() bool { return c.Stats().LateDropped >= 1 })
			for name, want := range tt.want {
				if got := servertest.Counter(t, srv, name); got != want {
					t.Errorf("server %s = %d, want %d", name, got, want)
				}
			}
			if got := c.Stats().LateDropped; got != 1 {
				t.Errorf("Stats().LateDropped = %d, want 1 (the debit's answer only)", got)
			}
		})
	}
}

// TestCancelHedgeLoser: the hedge that loses is canceled, but both
// attempts were already executing, so the cancel finds nothing and the
// loser runs to completion.
func TestCancelHedgeLoser(t *testing.T) {
	t.Parallel()
	srv, addr := servertest.Start(t, server.DefaultConfig())
	cfg := servertest.ClientConfig()
	cfg.CancelAbandoned = true
	cfg.Hedge = &client.HedgeConfig{Delay: 30 * time.Millisecond}
	c := servertest.NewClient(t, addr, cfg)

	r := c.Do(context.Background(), servertest.Get("a", "sleep=200"))
	if r.Status != proto.StatusOK || len(r.Log) != 2 {
		t.Fatalf("hedged get: got status %v, log %v; want OK after 2 attempts", r.Status, r.Log)
	}
	if got := c.Stats().CancelsSent; got != 1 {
		t.Errorf("Stats().CancelsSent = %d, want 1", got)
	}
	servertest.WaitCounter(t, srv, "exec.get", 2)
	servertest.WaitFor(t, "the loser's late answer", func() bool { return c.Stats().LateDropped >= 1 })
	if got := servertest.Counter(t, srv, "canceled"); got != 0 {
		t.Errorf("server canceled = %d, want 0", got)
	}
	if got := c.Stats().LateDropped; got != 1 {
		t.Errorf("Stats().LateDropped = %d, want 1 (the loser's answer only)", got)
	}
}
