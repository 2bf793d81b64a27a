package client_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/server"
	"github.com/rpcbench/rpcbench/internal/servertest"
)

// TestPushback runs gets against an unavailable fault with and without a
// retry-after hint, on a real server, and checks the pause the client
// took after the first attempt (Attempt.Backoff and the gap between the
// traced spans) or that it stopped at once.
func TestPushback(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		fault   string
		timeout time.Duration // Call.Timeout; 0 for the config's
		// want: the call's end, its attempts, and the first attempt's hint.
		status     proto.Status
		stop       client.Stop
		attempts   int
		retryAfter time.Duration
		// minPause is the least gap between the first attempt's end and
		// the second's start; pushbacks is Stats.Pushbacks after the call.
		minPause  time.Duration
		pushbacks int64
	}{
		{"hint honoured", "kind=unavailable count=1 retry_after=200ms", 0,
			proto.StatusOK, client.StopFinal, 2, 200 * time.Millisecond, 200 * time.Millisecond, 1},
		{"hint under backoff", "kind=unavailable count=1 retry_after=5ms", 0,
			proto.StatusOK, client.StopFinal, 2, 5 * time.Millisecond, 20 * time.Millisecond, 0},
		{"hint past deadline", "kind=unavailable count=1 retry_after=2s", 500 * time.Millisecond,
			proto.StatusUnavailable, client.StopPushback, 1, 2 * time.Second, 0, 1},
		{"never", "kind=unavailable count=1 retry_after=never", 0,
			proto.StatusUnavailable, client.StopPushback, 1, client.RetryNever, 0, 1},
		{"no hint", "kind=unavailable count=1", 0,
			proto.StatusOK, client.StopFinal, 2, 0, 20 * time.Millisecond, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, addr := servertest.Start(t, server.DefaultConfig(), tt.fault)
			cfg := servertest.ClientConfig()
			var mu sync.Mutex // guards spans
			var spans []client.Span
			cfg.Trace = func(_ *client.Call, _ []client.Attempt, s []client.Span) {
				mu.Lock()
				defer mu.Unlock()
				spans = append([]client.Span(nil), s...)
			}
			c := servertest.NewClient(t, addr, cfg)
			call := servertest.Get("acct-a")
			call.Timeout = tt.timeout
			r := c.Do(context.Background(), call)

			if r.Status != tt.status || r.Stop != tt.stop || r.Attempts != tt.attempts {
				t.Fatalf("got %v, stop %v after %d attempts (%v); want %v, stop %v after %d",
					r.Status, r.Stop, r.Attempts, r.Log, tt.status, tt.stop, tt.attempts)
			}
			if got := r.Log[0].RetryAfter; got != tt.retryAfter {
				t.Errorf("Log[0].RetryAfter = %v, want %v", got, tt.retryAfter)
			}
			if got := c.Stats().Pushbacks; got != tt.pushbacks {
				t.Errorf("Stats().Pushbacks = %d, want %d", got, tt.pushbacks)
			}
			if tt.attempts == 1 {
				// Stopped at once: nowhere near the hint, nor the deadline.
				if r.Elapsed > returnMargin {
					t.Errorf("Elapsed = %v, want at most %v", r.Elapsed, returnMargin)
				}
				return
			}
			if got := r.Log[0].Backoff; got != tt.minPause {
				t.Errorf("Log[0].Backoff = %v, want %v", got, tt.minPause)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(spans) != 2 {
				t.Fatalf("traced %d spans, want 2", len(spans))
			}
			if gap := spans[1].Start.Sub(spans[0].End); gap < tt.minPause {
				t.Errorf("second attempt started %v after the first ended, want at least %v", gap, tt.minPause)
			}
		})
	}
}

// TestPushbackMaxAttempts: a hint on the last attempt MaxAttempts allows
// changes nothing; the call stops for MaxAttempts.
func TestPushbackMaxAttempts(t *testing.T) {
	t.Parallel()
	_, addr := servertest.Start(t, server.DefaultConfig(), "kind=unavailable count=1 retry_after=never")
	cfg := servertest.ClientConfig()
	cfg.MaxAttempts = 1
	c := servertest.NewClient(t, addr, cfg)
	r := c.Do(context.Background(), servertest.Get("acct-a"))
	if r.Status != proto.StatusUnavailable || r.Stop != client.StopMaxAttempts || r.Attempts != 1 {
		t.Fatalf("got %v, stop %v after %d attempts; want UNAVAILABLE, stop %v after 1", r.Status, r.Stop, r.Attempts, client.StopMaxAttempts)
	}
	if got := c.Stats().Pushbacks; got != 0 {
		t.Errorf("Stats().Pushbacks = %d, want 0", got)
	}
}

func TestAttemptStringRetryAfter(t *testing.T) {
	tests := []struct {
		retryAfter time.Duration
		want       string // the end of Attempt.String; "" for no retry_after at all
	}{
		{0, ""},
		{200 * time.Millisecond, " backoff=200ms retry_after=200ms"},
		{1500 * time.Millisecond, " backoff=200ms retry_after=1.5s"},
		{client.RetryNever, " backoff=200ms retry_after=never"},
	}
	for _, tt := range tests {
		t.Run(tt.retryAfter.String(), func(t *testing.T) {
			a := client.Attempt{Outcome: client.OutcomeResponse, Status: proto.StatusUnavailable, Class: client.ClassNotExecuted,
				Backoff: 200 * time.Millisecond, RetryAfter: tt.retryAfter}
			got := a.String()
			if tt.want == "" {
				if strings.Contains(got, "retry_after") {
					t.Errorf("Attempt.String() = %q, want no retry_after", got)
				}
				return
			}
			if !strings.HasSuffix(got, tt.want) {
				t.Errorf("Attempt.String() = %q, want it to end with %q", got, tt.want)
			}
		})
	}
}

// TestPushbackStopsHedging: a hedge answered UNAVAILABLE with a hint while
// the first attempt is still waiting ends the round's hedging; the first
// attempt's answer still wins.
func TestPushbackStopsHedging(t *testing.T) {
	t.Parallel()
	_, addr := servertest.Start(t, server.DefaultConfig(),
		"kind=sleep method=get count=1 delay=300ms", "kind=unavailable method=get count=1 retry_after=1s")
	cfg := servertest.ClientConfig()
	cfg.Hedge = &client.HedgeConfig{Delay: 30 * time.Millisecond, MaxHedges: 2}
	c := servertest.NewClient(t, addr, cfg)
	r := c.Do(context.Background(), servertest.Get("acct-a"))
	if r.Status != proto.StatusOK || r.Attempts != 2 {
		t.Fatalf("got %v after %d attempts (%v); want OK after 2", r.Status, r.Attempts, r.Log)
	}
	if got := r.Log[1].RetryAfter; got != time.Second {
		t.Errorf("hedge's RetryAfter = %v, want 1s", got)
	}
	if got := c.Stats().Hedges; got != 1 {
		t.Errorf("Stats().Hedges = %d, want 1: no hedge after the pushback", got)
	}
}
