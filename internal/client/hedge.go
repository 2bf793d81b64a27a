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

// hedgeStart is when the i-th attempt of a round started, its ticket, and
// its place in the call's log.
type hedgeStart struct {
	at  time.Time
	tk  ticket
	log int
}

// hedgeRound makes the attempt of an idempotent call that starts at now,
// let through by the breaker with tk, and hedges it: each Hedge.Delay
// that passes with no FINAL answer sends another attempt, up to the
// call's hedges left, while decide and admit allow. The round ends at the
// first FINAL answer, abandoning the attempts still waiting, or when every
// attempt has ended without one; it returns the attempt that decided it
// (the winner, or the last to fail) with its reply. Every attempt takes
// its place in the log in the order they started, and is recorded as it
// ends.
func (s *callState) hedgeRound(tk ticket, now time.Time) (Attempt, reply) {
	c, n := s.c, s.c.cfg.Hedge.MaxHedges-s.hedges
	// A copy for the attempts' goroutines, which must not hold s: Do's
	// state stays off the heap for calls that are never hedged.
	cp := s.call
	actx, abandon := context.WithCancelCause(s.ctx)
	defer abandon(nil)
	done := make(chan hedgeDone, n+1)
	starts := make([]hedgeStart, 0, n+1)
	launch := func(at time.Time, tk ticket) {
		i, budget, prev := len(starts), s.budget(at), s.previous()
		starts = append(starts, hedgeStart{at, tk, s.reserve()})
		go func() {
			a, r := c.attempt(actx, &cp, at, budget, prev)
			a.Hedge = i > 0
			done <- hedgeDone{i: i, a: a, r: r, end: time.Now()}
		}()
	}
	launch(now, tk)

	timer := time.NewTimer(c.cfg.Hedge.Delay)
	defer timer.Stop()
	ended := make([]hedgeDone, n+1)
	win, lastEnd := -1, -1
	// pushed is set once an attempt's answer carried a retry-after hint.
	pushed := false
	// Every attempt ends by itself, within its budget or at the caller's
	// cancel, so waiting for them all is bounded by the deadline.
	for running := 1; running > 0; {
		select {
		case d := <-done:
			running--
			ended[d.i], lastEnd = d, d.i
			pushed = pushed || d.a.RetryAfter != 0
			st := starts[d.i]
			s.record(st.log, st.tk, &d.a, &d.r, st.at, d.end)
			if d.a.Class == ClassFinal && win < 0 {
				win = d.i
				abandon(errAbandoned)
			}
		case <-timer.C:
			if win >= 0 {
				continue
			}
			at := time.Now()
			if _, stop := s.decide(situation{now: at, hedge: true, pushed: pushed}); stop != 0 {
				continue // no later hedge in this round either
			}
			tk, stop := s.admit(at)
			if stop != 0 {
				continue
			}
			launch(at, tk)
			running++
			s.hedges++
			c.stats.hedges.Add(1)
			if len(starts) <= n {
				timer.Reset(c.cfg.Hedge.Delay)
			}
		}
	}

	decided := lastEnd
	if win >= 0 {
		decided = win
		if win > 0 {
			c.stats.hedgeWins.Add(1)
		}
	}
	return ended[decided].a, ended[decided].r
}
