package client

import (
	"context"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/proto"
)

// TestDecide calls the retry and hedge policy with situations, as
// grpc-go's shouldRetry could be: no server, no clock but the one given.
func TestDecide(t *testing.T) {
	var (
		notSent     = Attempt{Class: ClassNotSent, Outcome: OutcomeConnectFailed}
		unavailable = Attempt{Class: ClassNotExecuted, Outcome: OutcomeResponse, Status: proto.StatusUnavailable}
		unknown     = Attempt{Class: ClassUnknown, Outcome: OutcomeTimeout}
		final       = Attempt{Class: ClassFinal, Outcome: OutcomeResponse, Status: proto.StatusOK}
	)
	hinted := func(d time.Duration) Attempt { a := unavailable; a.RetryAfter = d; return a }
	keyless := Call{Method: "debit"}
	idempotent := Call{Method: "get", Idempotent: true}
	keyed := Call{Method: "debit", Key: "k"}
	const second = time.Second

	tests := []struct {
		name string
		call Call
		// attempts is how many attempts the call has started; left is the
		// time from the situation's now to the deadline.
		attempts int
		left     time.Duration
		canceled bool
		// budgetEmpty gives the client a retry budget with no token left.
		budgetEmpty bool
		sit         situation // now is set from left

		pause     time.Duration
		stop      Stop
		pushbacks int64
		throttled int64
	}{
		{name: "final", call: keyless, attempts: 1, left: second, sit: situation{last: final}, stop: StopFinal},
		{name: "final_past_deadline", call: keyless, attempts: 1, left: -second, sit: situation{last: final}, stop: StopFinal},
		{name: "not_sent_backoff", call: keyless, attempts: 1, left: second, sit: situation{last: notSent}, pause: 20 * time.Millisecond},
		{name: "third_backoff_doubles_twice", call: keyless, attempts: 3, left: second, sit: situation{last: unavailable}, pause: 80 * time.Millisecond},
		{name: "deadline_passed", call: keyless, attempts: 1, sit: situation{last: notSent}, stop: StopDeadline},
		{name: "canceled", call: keyless, attempts: 1, left: second, canceled: true, sit: situation{last: notSent}, stop: StopCanceled},
		{name: "closed", call: idempotent, attempts: 1, left: second, sit: situation{last: notSent, err: ErrClosed}, stop: StopClosed},
		{name: "unknown_keyless", call: keyless, attempts: 1, left: second, sit: situation{last: unknown}, stop: StopNotRetryable},
		{name: "unknown_idempotent", call: idempotent, attempts: 1, left: second, sit: situation{last: unknown}, pause: 20 * time.Millisecond},
		{name: "unknown_keyed", call: keyed, attempts: 1, left: second, sit: situation{last: unknown}, pause: 20 * time.Millisecond},
		{name: "max_attempts", call: keyless, attempts: 4, left: second, sit: situation{last: notSent}, stop: StopMaxAttempts},
		{name: "hint_never", call: keyless, attempts: 1, left: second, sit: situation{last: hinted(RetryNever)}, stop: StopPushback, pushbacks: 1},
		{name: "hint_reaches_deadline", call: keyless, attempts: 1, left: 100 * time.Millisecond, sit: situation{last: hinted(100 * time.Millisecond)}, stop: StopPushback, pushbacks: 1},
		{name: "hint_longer_than_backoff", call: keyless, attempts: 1, left: second, sit: situation{last: hinted(50 * time.Millisecond)}, pause: 50 * time.Millisecond, pushbacks: 1},
		{name: "hint_shorter_than_backoff", call: keyless, attempts: 1, left: second, sit: situation{last: hinted(5 * time.Millisecond)}, pause: 20 * time.Millisecond},
		{name: "backoff_crosses", call: keyless, attempts: 1, left: 20 * time.Millisecond, sit: situation{last: notSent}, stop: StopBackoffCrosses},
		{name: "budget_empty", call: keyless, attempts: 1, left: second, budgetEmpty: true, sit: situation{last: notSent}, stop: StopRetryBudget, throttled: 1},
		// The order of the rules, where two apply at once.
		{name: "closed_before_not_retryable", call: keyless, attempts: 1, left: second, sit: situation{last: unknown, err: ErrClosed}, stop: StopClosed},
		{name: "max_attempts_before_pushback", call: keyless, attempts: 4, left: second, sit: situation{last: hinted(RetryNever)}, stop: StopMaxAttempts},
		{name: "pushback_counted_before_budget", call: keyless, attempts: 1, left: second, budgetEmpty: true, sit: situation{last: hinted(50 * time.Millisecond)}, stop: StopRetryBudget, pushbacks: 1, throttled: 1},
		{name: "hedge", call: idempotent, attempts: 1, left: second, sit: situation{hedge: true}},
		{name: "hedge_deadline_passed", call: idempotent, attempts: 1, sit: situation{hedge: true}, stop: StopDeadline},
		{name: "hedge_max_attempts", call: idempotent, attempts: 4, left: second, sit: situation{hedge: true}, stop: StopMaxAttempts},
		{name: "hedge_pushed", call: idempotent, attempts: 2, left: second, sit: situation{hedge: true, pushed: true}, stop: StopPushback},
		{name: "hedge_budget_empty", call: idempotent, attempts: 1, left: second, budgetEmpty: true, sit: situation{hedge: true}, stop: StopRetryBudget},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Jitter = 0
			if tt.budgetEmpty {
				cfg.RetryBudget = &RetryBudget{MaxTokens: 10, TokenRatio: 0.1}
			}
			c, err := New("127.0.0.1:1", cfg)
			if err != nil {
				t.Fatal(err)
			}
			if tt.budgetEmpty {
				c.gov.budget.tokens.Store(0)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.canceled {
				cancel()
			}
			now := time.Unix(1_000_000, 0)
			s := callState{c: c, ctx: ctx, call: tt.call, deadline: now.Add(tt.left), res: Result{Log: make([]Attempt, tt.attempts)}}
			sit := tt.sit
			sit.now = now

			pause, stop := s.decide(sit)
			if pause != tt.pause || stop != tt.stop {
				t.Errorf("got pause %v, stop %v; want %v, %v", pause, stop, tt.pause, tt.stop)
			}
			st := c.Stats()
			if st.Pushbacks != tt.pushbacks || st.RetriesThrottled != tt.throttled {
				t.Errorf("got Pushbacks %d, RetriesThrottled %d; want %d, %d", st.Pushbacks, st.RetriesThrottled, tt.pushbacks, tt.throttled)
			}
		})
	}
}
