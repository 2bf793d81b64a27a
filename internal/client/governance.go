package client

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/rpcbench/rpcbench/internal/proto"
)

// Errors of the calls the client refused itself, found in Result.Err.
var (
	ErrClientBusy  = errors.New("client: too many calls in flight")
	ErrRateLimited = errors.New("client: rate limit reached")
	ErrCircuitOpen = errors.New("client: circuit breaker open")
)

// governance is a Client's opt-in limits, built from its Config by New.
// A Client without any has a nil *governance, so that its calls pay one
// nil check for all of them.
type governance struct {
	limits  map[string]*rate.Limiter // nil without RateLimits
	permits *permits                 // nil without MaxInFlight
	budget  *retryBudget             // nil without RetryBudget
	breaker *breaker                 // nil without Breaker
}

// newGovernance returns the governance cfg asks for, or nil for none.
func newGovernance(cfg *Config) *governance {
	if len(cfg.RateLimits) == 0 && cfg.MaxInFlight == 0 && cfg.RetryBudget == nil && cfg.Breaker == nil {
		return nil
	}
	g := &governance{}
	if len(cfg.RateLimits) > 0 {
		g.limits = make(map[string]*rate.Limiter, len(cfg.RateLimits))
		for m, l := range cfg.RateLimits {
			g.limits[m] = rate.NewLimiter(rate.Limit(l.PerSecond), l.Burst)
		}
	}
	if cfg.MaxInFlight > 0 {
		g.permits = &permits{max: int64(cfg.MaxInFlight)}
	}
	if b := cfg.RetryBudget; b != nil {
		g.budget = newRetryBudget(*b)
	}
	if b := cfg.Breaker; b != nil {
		g.breaker = newBreaker(*b, time.Now())
	}
	return g
}

// admit is where a call meets the rate limit of its method and then the
// in-flight cap. It returns 0 when the call may go on, holding a permit
// if there is a cap, or why it was refused, holding none.
func (g *governance) admit(method string) Stop {
	if l := g.limits[method]; l != nil && !l.Allow() {
		return StopRateLimited
	}
	if g.permits != nil && !g.permits.acquire() {
		return StopClientBusy
	}
	return 0
}

// refuse counts a call the client refused itself, before any attempt,
// for stop, and returns its Result.
func (c *Client) refuse(stop Stop, start time.Time) Result {
	res := Result{Stop: stop}
	switch stop {
	case StopClientBusy:
		c.stats.rejectedBusy.Add(1)
		res.Status, res.Err = proto.StatusClientBusy, ErrClientBusy
	case StopRateLimited:
		c.stats.rejectedRateLimited.Add(1)
		res.Status, res.Err = proto.StatusRateLimited, ErrRateLimited
	case StopCircuitOpen:
		c.stats.rejectedCircuitOpen.Add(1)
		res.Status, res.Err = proto.StatusCircuitOpen, ErrCircuitOpen
	}
	res.Elapsed = time.Since(start)
	return res
}

// record tells the retry budget and the breaker how an attempt that
// started took before now ended.
func (g *governance) record(ctx context.Context, tk ticket, a *Attempt, r *reply, took time.Duration, now time.Time) {
	v := judge(ctx, a, r)
	if g.budget != nil {
		g.budget.record(v)
	}
	if g.breaker != nil {
		g.breaker.done(tk, v, took, now)
	}
}

// verdict is what an attempt says about the server, for the retry budget
// and the breaker.
type verdict uint8

const (
	verdictSuccess  verdict = iota + 1 // a FINAL answer
	verdictFailure                     // NOT_SENT, NOT_EXECUTED or OUTCOME_UNKNOWN
	verdictExcluded                    // ended by the caller's cancel, by Close, by a hedge winning or by a drain: says nothing
)

// judge returns the verdict on attempt a, which ended with r under ctx.
func judge(ctx context.Context, a *Attempt, r *reply) verdict {
	switch {
	case a.Class == ClassFinal:
		return verdictSuccess
	case errors.Is(r.err, ErrClosed), errors.Is(r.err, context.Canceled), errors.Is(ctx.Err(), context.Canceled),
		errors.Is(r.err, errAbandoned), r.drained:
		return verdictExcluded
	}
	return verdictFailure
}

// permits is the in-flight cap: a count of the calls holding a permit,
// never above max.
type permits struct {
	max int64
	n   atomic.Int64
}

// acquire takes a permit if one is free, without waiting.
func (p *permits) acquire() bool {
	for {
		n := p.n.Load()
		if n >= p.max {
			return false
		}
		if p.n.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (p *permits) release() { p.n.Add(-1) }

// tokenScale is the retry budget's fixed point: tokens are counted in
// thousandths, as gRPC does, so that they can be updated atomically.
const tokenScale = 1000

// retryBudget holds a client's retry tokens (RetryBudget); safe for
// concurrent use.
type retryBudget struct {
	max, ratio int64 // in thousandths of a token
	tokens     atomic.Int64
}

func newRetryBudget(b RetryBudget) *retryBudget {
	rb := &retryBudget{max: int64(math.Round(b.MaxTokens * tokenScale)), ratio: int64(math.Round(b.TokenRatio * tokenScale))}
	rb.tokens.Store(rb.max)
	return rb
}

// record spends a token for a failed attempt, down to 0, and gives back
// the ratio for a FINAL answer, up to the maximum.
func (b *retryBudget) record(v verdict) {
	var delta int64
	switch v {
	case verdictSuccess:
		delta = b.ratio
	case verdictFailure:
		delta = -tokenScale
	default:
		return
	}
	for {
		old := b.tokens.Load()
		n := min(max(old+delta, 0), b.max)
		if n == old || b.tokens.CompareAndSwap(old, n) {
			return
		}
	}
}

// mayRetry reports whether more than half the tokens are left.
func (b *retryBudget) mayRetry() bool { return 2*b.tokens.Load() > b.max }

// InFlight returns how many calls hold an in-flight permit now; always 0
// without Config.MaxInFlight, since only a capped client hands permits
// out.
func (c *Client) InFlight() int {
	if c.gov == nil || c.gov.permits == nil {
		return 0
	}
	return int(c.gov.permits.n.Load())
}

// BreakerState returns the circuit breaker's state, "closed", "open" or
// "half-open", or "" for a client without a breaker. An open breaker
// whose OpenFor has passed reads as half-open.
func (c *Client) BreakerState() string {
	if c.gov == nil || c.gov.breaker == nil {
		return ""
	}
	return c.gov.breaker.state(time.Now()).String()
}
