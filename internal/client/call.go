package client

import (
	"context"
	"time"
)

// callState is one call's state across its attempts (grpc's clientStream):
// Do makes it, and every step of the call reads and writes it here rather
// than through parameters. It lives on Do's stack: nothing that outlives
// the call, an attempt's goroutine included, may hold a pointer to it.
type callState struct {
	c    *Client
	ctx  context.Context
	call Call
	// start is when Do began; deadline is when the call must end, the
	// earlier of start plus its total timeout and the context's deadline.
	start, deadline time.Time
	attemptTimeout  time.Duration
	// res is what Do will return; res.Log holds a place for every attempt
	// started, in the order they started, filled in as each ends.
	res Result
	// last is the reply of the attempt that decided the latest round.
	last reply
	// spans parallels res.Log, for Config.Trace only.
	spans []Span
	// hedges counts the hedges sent so far, with Config.Hedge.
	hedges int
}

// newCall returns the state of call, starting now under ctx.
func (c *Client) newCall(ctx context.Context, call Call) callState {
	s := callState{c: c, ctx: ctx, call: call, start: time.Now()}
	total := call.Timeout
	if total <= 0 {
		total = c.cfg.Deadline
	}
	s.attemptTimeout = call.AttemptTimeout
	if s.attemptTimeout <= 0 {
		s.attemptTimeout = c.cfg.AttemptTimeout
	}
	deadline := s.start.Add(total)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	s.deadline = deadline
	return s
}

// admit is asked before each attempt, hedges included, whether it may
// start at now: the deadline and the breaker. It returns the breaker's
// ticket for the attempt, or why it may not start.
func (s *callState) admit(now time.Time) (ticket, Stop) {
	if stop := stopFor(s.ctx, now, s.deadline); stop != 0 {
		return ticket{}, stop
	}
	if g := s.c.gov; g != nil && g.breaker != nil {
		tk, ok := g.breaker.allow(now)
		if !ok {
			return ticket{}, StopCircuitOpen
		}
		return tk, 0
	}
	return ticket{}, 0
}

// budget is the budget of an attempt starting at now: the attempt
// timeout, cut to the time left before the call's deadline.
func (s *callState) budget(now time.Time) time.Duration {
	return min(s.attemptTimeout, s.deadline.Sub(now))
}

// try makes the call's next attempt, starting at now and let through by
// the breaker with tk: a hedged round of attempts when the call may be
// hedged, otherwise one. It returns the attempt that decided it, with its
// reply.
func (s *callState) try(tk ticket, now time.Time) (Attempt, reply) {
	if h := s.c.cfg.Hedge; h != nil && s.call.Idempotent && s.hedges < h.MaxHedges {
		return s.hedgeRound(tk, now)
	}
	i := s.reserve()
	a, r := s.c.attempt(s.ctx, &s.call, now, s.budget(now), s.previous())
	// Read the clock only for those who need the end: an answered call
	// without either must not pay for it.
	var end time.Time
	if s.c.gov != nil || s.c.cfg.Trace != nil {
		end = time.Now()
	}
	s.record(i, tk, &a, &r, now, end)
	return a, r
}

// previous is the address of the latest attempt that chose one, for a
// balancer to avoid; "" before the first.
func (s *callState) previous() string {
	for i := len(s.res.Log) - 1; i >= 0; i-- {
		if a := s.res.Log[i].Addr; a != "" {
			return a
		}
	}
	return ""
}

// reserve holds the next place in the log (and in spans, with Trace) for
// an attempt about to start, and returns its index.
func (s *callState) reserve() int {
	s.res.Log = append(s.res.Log, Attempt{})
	if s.c.cfg.Trace != nil {
		s.spans = append(s.spans, Span{})
	}
	return len(s.res.Log) - 1
}

// record is where every attempt's end is written down, hedges' included:
// the governance hears how the attempt let through with tk ended, and the
// attempt and its span take their place i in the log. end may be zero
// when there is neither governance nor Trace.
func (s *callState) record(i int, tk ticket, a *Attempt, r *reply, start, end time.Time) {
	if g := s.c.gov; g != nil {
		g.record(s.ctx, tk, a, r, end.Sub(start), end)
	}
	s.res.Log[i] = *a
	if s.c.cfg.Trace != nil {
		s.spans[i] = Span{start, end}
	}
}

// finish ends the call for stop at end and returns its Result.
func (s *callState) finish(stop Stop, end time.Time) Result {
	res := &s.res
	res.Stop, res.Attempts = stop, len(res.Log)
	if tr := s.c.cfg.Trace; tr != nil {
		// A copy: handing &s.call itself to a func value would move every
		// Do's state to the heap, traced or not.
		cp := s.call
		tr(&cp, res.Log, s.spans)
	}
	if stop == StopFinal {
		res.Status, res.Payload = s.last.f.Status, s.last.f.Payload
	} else {
		res.Status = giveUpStatus(&s.call, res.Log, stop)
		res.Err = s.last.err
		if res.Err == nil && len(res.Log) == 0 {
			res.Err = s.ctx.Err()
			if res.Err == nil {
				res.Err = context.DeadlineExceeded
			}
		}
	}
	res.Elapsed = end.Sub(s.start)
	return *res
}
