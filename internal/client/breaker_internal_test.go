package client

import (
	"testing"
	"time"
)

// fakeClock is the breaker's time in these tests: it moves only when the
// test moves it.
type fakeClock struct{ t time.Time }

func newFakeClock() *fakeClock               { return &fakeClock{t: time.Unix(1_000_000, 0)} }
func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

const fast = time.Millisecond // an attempt's duration well below any SlowCall here

// pass lets one attempt through and reports it, failing the test if
// the breaker refused it.
func pass(t *testing.T, b *breaker, c *fakeClock, v verdict, took time.Duration) {
	t.Helper()
	tk, ok := b.allow(c.now())
	if !ok {
		t.Fatalf("attempt refused in state %v, want it let through", b.state(c.now()))
	}
	b.done(tk, v, took, c.now())
}

func wantState(t *testing.T, b *breaker, c *fakeClock, want breakerState) {
	t.Helper()
	if got := b.state(c.now()); got != want {
		t.Fatalf("state = %v, want %v", got, want)
	}
}

func TestBreakerFailureRate(t *testing.T) {
	cfg := BreakerConfig{Window: time.Second, Bucket: 100 * time.Millisecond, MinCalls: 4, FailureRate: 0.5,
		OpenFor: time.Second, Probes: 2}
	tests := []struct {
		name     string
		verdicts []verdict
		want     breakerState
	}{
		{"below_min_calls", []verdict{verdictFailure, verdictFailure, verdictFailure}, breakerClosed},
		{"rate_below", []verdict{verdictSuccess, verdictFailure, verdictSuccess, verdictSuccess, verdictFailure}, breakerClosed},
		{"rate_reached", []verdict{verdictSuccess, verdictFailure, verdictSuccess, verdictFailure}, breakerOpen},
		// Canceled attempts count neither way: three failures of four
		// counted attempts.
		{"excluded_not_counted", []verdict{verdictExcluded, verdictFailure, verdictExcluded, verdictFailure, verdictFailure}, breakerClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newFakeClock()
			b := newBreaker(cfg, c.now())
			for _, v := range tt.verdicts {
				pass(t, b, c, v, fast)
			}
			wantState(t, b, c, tt.want)
		})
	}
}

// TestBreakerWindowSlides: failures older than the window no longer
// count; the bucket they ended in leaves the window whole.
func TestBreakerWindowSlides(t *testing.T) {
	c := newFakeClock()
	b := newBreaker(BreakerConfig{Window: time.Second, Bucket: 100 * time.Millisecond, MinCalls: 4, FailureRate: 1,
		OpenFor: time.Second, Probes: 1}, c.now())
	for range 3 {
		pass(t, b, c, verdictFailure, fast)
	}
	c.advance(time.Second) // the three failures' bucket leaves the window
	pass(t, b, c, verdictFailure, fast)
	wantState(t, b, c, breakerClosed)
	for range 2 {
		pass(t, b, c, verdictFailure, fast)
	}
	c.advance(900 * time.Millisecond) // these are still within it
	pass(t, b, c, verdictFailure, fast)
	wantState(t, b, c, breakerOpen)
}

// TestBreakerSlowRate: slow attempts open the breaker whatever their
// outcome; with SlowRate 0 they do not count.
func TestBreakerSlowRate(t *testing.T) {
	slow := BreakerConfig{Window: time.Second, Bucket: 100 * time.Millisecond, MinCalls: 4, SlowCall: 50 * time.Millisecond,
		SlowRate: 0.75, OpenFor: time.Second, Probes: 1}
	failureOnly := slow
	failureOnly.SlowRate, failureOnly.FailureRate = 0, 0.75
	tests := []struct {
		name string
		cfg  BreakerConfig
		took []time.Duration
		want breakerState
	}{
		{"slow_successes_open", slow, []time.Duration{time.Second, time.Second, fast, time.Second}, breakerOpen},
		{"at_slow_call_is_not_slow", slow, []time.Duration{50 * time.Millisecond, 50 * time.Millisecond, time.Second, time.Second}, breakerClosed},
		{"slow_rate_off", failureOnly, []time.Duration{time.Second, time.Second, time.Second, time.Second}, breakerClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newFakeClock()
			b := newBreaker(tt.cfg, c.now())
			for _, d := range tt.took {
				pass(t, b, c, verdictSuccess, d)
			}
			wantState(t, b, c, tt.want)
		})
	}
}

// TestBreakerHalfOpen: an open breaker refuses until OpenFor has passed,
// then lets Probes attempts through; all succeeding close it, any failing
// (or slow) opens it again, a canceled one frees its place.
func TestBreakerHalfOpen(t *testing.T) {
	cfg := BreakerConfig{Window: time.Second, Bucket: 100 * time.Millisecond, MinCalls: 1, FailureRate: 1,
		SlowCall: 50 * time.Millisecond, SlowRate: 1, OpenFor: time.Second, Probes: 2}
	open := func(t *testing.T) (*breaker, *fakeClock) {
		c := newFakeClock()
		b := newBreaker(cfg, c.now())
		pass(t, b, c, verdictFailure, fast)
		wantState(t, b, c, breakerOpen)
		c.advance(cfg.OpenFor - time.Nanosecond)
		if _, ok := b.allow(c.now()); ok {
			t.Fatal("open breaker let an attempt through before OpenFor passed")
		}
		c.advance(time.Nanosecond)
		wantState(t, b, c, breakerHalfOpen)
		return b, c
	}
	t.Run("probes_succeed", func(t *testing.T) {
		b, c := open(t)
		p1, ok1 := b.allow(c.now())
		p2, ok2 := b.allow(c.now())
		if _, ok3 := b.allow(c.now()); !ok1 || !ok2 || ok3 {
			t.Fatalf("half-open let through %v %v %v, want the 2 probes and no third", ok1, ok2, ok3)
		}
		b.done(p1, verdictSuccess, fast, c.now())
		wantState(t, b, c, breakerHalfOpen)
		b.done(p2, verdictSuccess, fast, c.now())
		wantState(t, b, c, breakerClosed)
		// It closed with an empty window: the failure that opened it is
		// gone.
		pass(t, b, c, verdictSuccess, fast)
		if want := (bucket{calls: 1}); b.total != want {
			t.Errorf("window after closing and one success = %+v, want %+v", b.total, want)
		}
	})
	for _, fail := range []struct {
		name string
		v    verdict
		took time.Duration
	}{{"probe_fails", verdictFailure, fast}, {"probe_slow", verdictSuccess, time.Second}} {
		t.Run(fail.name, func(t *testing.T) {
			b, c := open(t)
			p1, _ := b.allow(c.now())
			p2, _ := b.allow(c.now())
			b.done(p1, fail.v, fail.took, c.now())
			wantState(t, b, c, breakerOpen)
			// The other probe belongs to the half-open that ended: its
			// success must not close the breaker.
			b.done(p2, verdictSuccess, fast, c.now())
			wantState(t, b, c, breakerOpen)
			c.advance(cfg.OpenFor)
			wantState(t, b, c, breakerHalfOpen)
		})
	}
	t.Run("probe_canceled", func(t *testing.T) {
		b, c := open(t)
		p1, _ := b.allow(c.now())
		p2, _ := b.allow(c.now())
		b.done(p1, verdictExcluded, fast, c.now())
		p3, ok := b.allow(c.now())
		if !ok {
			t.Fatal("a canceled probe's place was not freed")
		}
		b.done(p2, verdictSuccess, fast, c.now())
		b.done(p3, verdictSuccess, fast, c.now())
		wantState(t, b, c, breakerClosed)
	})
}

// TestBreakerIgnoresEarlierGen: an attempt let through while closed that
// ends after the breaker opened does not count in the new state.
func TestBreakerIgnoresEarlierGen(t *testing.T) {
	c := newFakeClock()
	b := newBreaker(BreakerConfig{Window: time.Second, Bucket: 100 * time.Millisecond, MinCalls: 1, FailureRate: 1,
		OpenFor: time.Second, Probes: 1}, c.now())
	late, _ := b.allow(c.now())
	pass(t, b, c, verdictFailure, fast)
	c.advance(time.Second)
	probe, _ := b.allow(c.now())
	b.done(late, verdictSuccess, fast, c.now()) // would close the half-open breaker if it counted
	wantState(t, b, c, breakerHalfOpen)
	b.done(probe, verdictSuccess, fast, c.now())
	wantState(t, b, c, breakerClosed)
}

func TestRetryBudgetTokens(t *testing.T) {
	b := newRetryBudget(RetryBudget{MaxTokens: 4, TokenRatio: 0.5})
	steps := []struct {
		v      verdict
		tokens int64 // in thousandths
		retry  bool
	}{
		{verdictSuccess, 4000, true}, // capped at MaxTokens
		{verdictFailure, 3000, true},
		{verdictFailure, 2000, false}, // 2 is not more than half of 4
		{verdictExcluded, 2000, false},
		{verdictSuccess, 2500, true},
		{verdictFailure, 1500, false},
		{verdictFailure, 500, false},
		{verdictFailure, 0, false}, // floored at 0
		{verdictFailure, 0, false},
		{verdictSuccess, 500, false},
	}
	for i, s := range steps {
		b.record(s.v)
		if got, retry := b.tokens.Load(), b.mayRetry(); got != s.tokens || retry != s.retry {
			t.Fatalf("step %d: tokens %d/1000, mayRetry %v; want %d/1000, %v", i, got, retry, s.tokens, s.retry)
		}
	}
}
