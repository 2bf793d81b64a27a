package client

import (
	"context"
	"errors"
	"time"
)

// situation is what decide is told when a call could make another
// attempt: a retry after the attempt that just ended, or a hedge while the
// round's attempts are still waiting.
type situation struct {
	now time.Time
	// last is the attempt that just ended, and err what ended it; unset
	// for a hedge. (A value: a pointer to Do's attempt would move it to
	// the heap, err leaking through errors.Is.)
	last Attempt
	err  error
	// hedge is set when the next attempt would be a hedge. pushed is then
	// set if an answer in the round carried a retry-after hint.
	hedge, pushed bool
}

// decide is the call's retry and hedge policy (grpc's
// csAttempt.shouldRetry): told the situation, it returns the pause before
// the next attempt, or why there will be none. Every stop rule after an
// attempt is written here; admit, asked before each attempt, holds the
// breaker, and stopFor, which both ask, the deadline and the context.
// Its returned pause is 0 for a hedge, whose timer is the round's own.
//
// A retry's pause is the backoff, or the server's retry-after hint when
// longer. A hedge needs what a retry needs (time before the deadline, an
// attempt left under MaxAttempts, the retry budget's leave) and no hint
// in its round. decide counts the retries the budget refused and the
// hints it acted on; a hedge it refuses is counted in neither.
func (s *callState) decide(sit situation) (time.Duration, Stop) {
	c, a := s.c, &sit.last
	if !sit.hedge && a.Class == ClassFinal {
		return 0, StopFinal
	}
	if stop := stopFor(s.ctx, sit.now, s.deadline); stop != 0 {
		return 0, stop
	}
	if errors.Is(sit.err, ErrClosed) {
		return 0, StopClosed
	}
	if !sit.hedge && !c.mayRetry(&s.call, a.Class) {
		return 0, StopNotRetryable
	}
	if len(s.res.Log) >= c.cfg.MaxAttempts {
		return 0, StopMaxAttempts
	}
	var pause, hint time.Duration
	if !sit.hedge {
		pause, hint = c.backoff(len(s.res.Log)), a.RetryAfter
	}
	if a.Outcome == OutcomeDrained {
		// A transparent retry (gRPC A6): the server did not fail, it
		// asked for the request to go elsewhere, at once.
		pause = 0
	}
	left := s.deadline.Sub(sit.now)
	// The server's hint (gRPC A6's pushback): never retry before it, and
	// not at all when it says so or when waiting for it would reach the
	// deadline. A hedge is a new attempt too, and the server asked for
	// none yet.
	if sit.pushed || hint < 0 || hint != 0 && left <= hint {
		if !sit.hedge {
			c.stats.pushbacks.Add(1)
		}
		return 0, StopPushback
	}
	if hint > pause {
		c.stats.pushbacks.Add(1)
		pause = hint
	}
	if left <= pause {
		return 0, StopBackoffCrosses
	}
	if g := c.gov; g != nil && g.budget != nil && !g.budget.mayRetry() {
		if !sit.hedge {
			c.stats.retriesThrottled.Add(1)
		}
		return 0, StopRetryBudget
	}
	return pause, 0
}

// stopFor says why no further attempt may start: the caller's context
// ended or the deadline passed. It returns 0 while attempts may go on.
func stopFor(ctx context.Context, now, deadline time.Time) Stop {
	switch err := ctx.Err(); {
	case errors.Is(err, context.Canceled):
		return StopCanceled
	case err != nil, !now.Before(deadline):
		return StopDeadline
	}
	return 0
}

// mayRetry reports whether an attempt of class leaves call free to be
// re-sent.
func (c *Client) mayRetry(call *Call, class Class) bool {
	switch class {
	case ClassNotSent, ClassNotExecuted:
		return true
	case ClassUnknown:
		if c.cfg.RetryUnknown != nil {
			// A copy: handing call itself to a func value would move
			// every Do's call to the heap.
			cp := *call
			return c.cfg.RetryUnknown(&cp)
		}
		return call.Idempotent || call.Key != ""
	}
	return false
}
