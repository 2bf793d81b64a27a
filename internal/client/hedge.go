package client

import (
	"context"
	"errors"
	"time"
)

// errAbandoned is the cause of an attempt of a hedged call that stopped
// waiting because another attempt of the call got a FINAL answer.
var errAbandoned = errors.New("client: abandoned: another attempt answered first")

// hedgeDone is how an attempt of a hedged round ended: the i-th to start.
type hedgeDone struct {
	i   int
	a   Attempt
	r   reply
	end time.Time
}

// hedgeStart is when the i-th attempt of a round started, and its ticket.
type hedgeStart struct {
	at time.Time
	tk ticket
}

// hedgeRound makes the attempt of an idempotent call that starts at now,
// let through by the breaker with tk, and hedges it: each Hedge.Delay
// that passes with no FINAL answer sends another attempt, up to n of
// them, while the call's deadline, MaxAttempts, the retry budget and the
// breaker allow, and until an answer carries a retry-after hint. The
// round ends at the first FINAL answer, abandoning the attempts still
// waiting, or when every attempt has ended without one; it returns the attempt that decided it (the winner, or the last
// to fail) with its reply, and how many hedges it sent. It appends every
// attempt to log in the order they started, and their spans to spans
// when Config.Trace is set; each attempt is reported to the governance
// as it ends.
func (c *Client) hedgeRound(ctx context.Context, call *Call, tk ticket, now, deadline time.Time, attemptTimeout time.Duration, n int, log *[]Attempt, spans *[]Span) (Attempt, reply, int) {
	// A copy for the attempts' goroutines, so that Do's call stays off
	// the heap for calls that are never hedged.
	cp := *call
	actx, abandon := context.WithCancelCause(ctx)
	defer abandon(nil)
	done := make(chan hedgeDone, n+1)
	starts := make([]hedgeStart, 0, n+1)
	launch := func(at time.Time, tk ticket) {
		i := len(starts)
		starts = append(starts, hedgeStart{at, tk})
		go func() {
			a, r := c.attempt(actx, &cp, at, min(attemptTimeout, deadline.Sub(at)))
			a.Hedge = i > 0
			done <- hedgeDone{i: i, a: a, r: r, end: time.Now()}
		}()
	}
	launch(now, tk)

	timer := time.NewTimer(c.cfg.Hedge.Delay)
	defer timer.Stop()
	ended := make([]hedgeDone, n+1)
	win, lastEnd := -1, -1
	// pushed is set once an attempt's answer carried a retry-after hint:
	// a hedge is a new attempt, and the server asked for none yet.
	pushed := false
	// Every attempt ends by itself, within its budget or at the caller's
	// cancel, so waiting for them all is bounded by the deadline.
	for running := 1; running > 0; {
		select {
		case d := <-done:
			running--
			ended[d.i], lastEnd = d, d.i
			pushed = pushed || d.a.RetryAfter != 0
			if c.gov != nil {
				c.gov.record(ctx, starts[d.i].tk, &d.a, &d.r, d.end.Sub(starts[d.i].at), d.end)
			}
			if d.a.Class == ClassFinal && win < 0 {
				win = d.i
				abandon(errAbandoned)
			}
		case <-timer.C:
			if win >= 0 || pushed {
				continue
			}
			at := time.Now()
			tk, ok := c.mayHedge(ctx, at, deadline, len(*log)+len(starts))
			if !ok {
				continue // no later hedge in this round either
			}
			launch(at, tk)
			running++
			c.stats.hedges.Add(1)
			if len(starts) <= n {
				timer.Reset(c.cfg.Hedge.Delay)
			}
		}
	}

	for i := range starts {
		*log = append(*log, ended[i].a)
		if c.cfg.Trace != nil {
			*spans = append(*spans, Span{starts[i].at, ended[i].end})
		}
	}
	decided := lastEnd
	if win >= 0 {
		decided = win
		if win > 0 {
			c.stats.hedgeWins.Add(1)
		}
	}
	return ended[decided].a, ended[decided].r, len(starts) - 1
}

// mayHedge reports whether a hedge may start at now, as the attempt-th
// of its call (0-based), and if so returns the breaker's ticket for it.
// A hedge needs what a retry needs: time before the deadline, an attempt
// left under MaxAttempts, the retry budget's leave, then the breaker's.
func (c *Client) mayHedge(ctx context.Context, now, deadline time.Time, attempt int) (ticket, bool) {
	if stopFor(ctx, now, deadline) != 0 || attempt >= c.cfg.MaxAttempts {
		return ticket{}, false
	}
	if g := c.gov; g != nil {
		if g.budget != nil && !g.budget.mayRetry() {
			return ticket{}, false
		}
		if g.breaker != nil {
			return g.breaker.allow(now)
		}
	}
	return ticket{}, true
}
