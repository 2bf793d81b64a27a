package client

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Config tunes a Client. Start from DefaultConfig; Validate runs in New
// before any connection is made.
type Config struct {
	// AttemptTimeout bounds one attempt, from connect to answer. The budget
	// sent to the server is min(AttemptTimeout, time left before the call's
	// deadline). Must be positive. Default 300ms.
	AttemptTimeout time.Duration
	// Deadline is the total time a call may take, all attempts and backoffs
	// included, when Call.Timeout is zero. Must be positive. Default 2s.
	Deadline time.Duration
	// MaxAttempts caps the attempts of one call, the first included. Must
	// be at least 1. Default 4.
	MaxAttempts int
	// BackoffInitial is the pause after the first failed attempt; each
	// later pause doubles, up to BackoffMax. Both must be positive and
	// BackoffInitial <= BackoffMax. Defaults 20ms and 200ms.
	BackoffInitial time.Duration
	BackoffMax     time.Duration
	// Jitter spreads each pause uniformly over ±Jitter of its value, in
	// [0, 1). Zero makes pauses exact. Default 0.2.
	Jitter float64
	// RetryUnknown decides whether a call one of whose attempts has an
	// unknown outcome may be re-sent. Nil, the default, is the only safe
	// rule: the call must be idempotent or carry an idempotency key. The
	// hook exists for negative controls that demonstrate a wrong rule.
	RetryUnknown func(*Call) bool
	// WriteTimeout bounds one write on a connection; a write that makes no
	// progress for that long (a server that stopped reading) kills the
	// connection, failing its attempts. Must be positive. Default 2s.
	WriteTimeout time.Duration
	// Trace, if set, is called when a call returns with its attempts
	// (backoffs set) and when each started and ended, spans[i] for
	// log[i]. It is for recording timelines, must not block, and must
	// not keep log or spans. It is not called for a call refused before
	// any attempt: an invalid frame, or one of the governance refusals
	// below. Default nil.
	Trace func(call *Call, log []Attempt, spans []Span)
	// ConnPerCall opens a new TCP connection for every attempt and closes
	// it when the attempt ends, instead of multiplexing calls over one
	// connection. For comparison only. Default false.
	ConnPerCall bool

	// The governance below is opt-in: each is off at its zero value,
	// the default. A call meets them in this order: the rate limit of
	// its method, then the in-flight cap, then, before each attempt, the
	// breaker; the retry budget is asked before each retry.

	// RetryBudget, when set, throttles retries as gRPC's A6 does: failed
	// attempts spend tokens, answers earn them back, and no call retries
	// while half the tokens or more are spent. New copies it; the client
	// keeps its own tokens, shared by all its calls. Default nil: no
	// budget.
	RetryBudget *RetryBudget
	// Breaker, when set, is a circuit breaker over this client's
	// attempts, across all methods and addresses. New copies it; each
	// client has a breaker of its own. Default nil: none.
	Breaker *BreakerConfig
	// MaxInFlight, when positive, caps the calls in flight; a call beyond
	// it fails at once with StatusClientBusy, making no attempt. Must not
	// be negative. Default 0: no cap.
	MaxInFlight int
	// RateLimits, when set, maps a method to its token bucket; a call
	// over it fails at once with StatusRateLimited, making no attempt.
	// Methods it does not list are not limited. New copies it. Default
	// nil: no limit.
	RateLimits map[string]RateLimit

	// Hedge, when set, hedges idempotent calls: an attempt that has not
	// answered after Hedge.Delay is joined by another, and the first
	// FINAL answer wins. Calls that are not Idempotent, keyed ones
	// included, are never hedged. New copies it. Default nil: no
	// hedging.
	Hedge *HedgeConfig

	// CancelAbandoned, when set, tells the server about every attempt
	// the client stops waiting for after its request was handed to the
	// connection: its attempt timeout ran out, the caller canceled, or
	// it lost a hedge. The client then sends ctl.cancel with the
	// attempt's request ID on the same connection, without waiting for
	// the answer. A server that still holds the request in its queue
	// drops it unexecuted; one already executing it finishes it. The
	// attempt's outcome stays unknown either way. No cancel is sent for
	// a ConnPerCall attempt, whose connection closes with it. Default
	// false: abandoned requests are left to run.
	CancelAbandoned bool

	// Keepalive, when set, detects a dead peer on an open connection, as
	// gRPC's keepalive does with PermitWithoutStream: see
	// KeepaliveConfig. New copies it. Default nil: a connection is
	// believed alive until a read or write on it fails.
	Keepalive *KeepaliveConfig
	// OnConnLost, if set, is called once for each connection that dies of
	// a failure (those counted in Stats.ConnsLost, not those the client
	// closes), with the address it was dialed to and the error that
	// killed it. It is called from the connection's reader goroutine,
	// after the attempts waiting on it were failed; it must not block.
	// Default nil.
	OnConnLost func(addr string, err error)
	// UserTimeout, when positive, sets TCP_USER_TIMEOUT on every
	// connection the client dials, in whole milliseconds (rounded down,
	// at least 1): the kernel aborts a connection whose written data
	// stays unacknowledged that long, as when the peer vanished while we
	// were sending, and the next read or write fails. Linux only; other
	// systems ignore it. Must not be negative. Default 0: the kernel's
	// default (retransmissions for about 15 minutes).
	UserTimeout time.Duration

	// Balancer is how a client of several addresses spreads its calls
	// (POLICY.md, "Load balancing"): PickFirst, the default (""), fails
	// over as NewMulti says; RoundRobin and P2C keep a connection per
	// address. Any other value is an error.
	Balancer Balancer
	// WarmUp, with RoundRobin or P2C, ramps an address's weight linearly
	// from 0.1 to 1 over this long after each (re)dial, so that a new or
	// restarted server is not sent its full share at once. Must not be
	// negative. Default 0: no warm-up.
	WarmUp time.Duration
}

// KeepaliveConfig configures keepalive. On every connection, whether or
// not calls are waiting on it: once nothing has been read from it for
// Time, the client writes a ctl.ping; if then nothing at all is read
// for Timeout after the ping was written, the connection is declared
// dead. Its waiting attempts fail with a *ConnLostError wrapping
// ErrKeepaliveTimeout (CONN_LOST_AFTER_SEND, or CONN_DEAD_BEFORE_SEND
// for a request never written) and the next attempt dials again. Any
// read counts, a ping's answer or any other. A ping whose write blocks
// is left to WriteTimeout.
type KeepaliveConfig struct {
	// Time is how long a connection may stay without a read before a
	// ping is sent; must be positive.
	Time time.Duration
	// Timeout is how long to wait for any read after a ping was written;
	// must be positive.
	Timeout time.Duration
}

// HedgeConfig configures hedged reads. A call with Idempotent set whose
// attempt has not answered Delay after it started sends another attempt,
// with a new request ID, while the first keeps waiting; each later Delay
// without an answer sends one more, up to MaxHedges for the call. The
// first FINAL answer is the call's; the attempts still waiting are
// abandoned (OutcomeAbandoned) and their late answers dropped. Hedges
// count against MaxAttempts, need the breaker's leave as any attempt
// does, and are sent only while the retry budget would allow a retry.
type HedgeConfig struct {
	// Delay is how long an attempt waits for an answer before a hedge is
	// sent; must be positive.
	Delay time.Duration
	// MaxHedges is the most hedges one call sends, its retries' included;
	// must not be negative. Zero means 1.
	MaxHedges int
}

// RetryBudget is gRPC's retry throttling (proposal A6). The client holds
// a number of tokens, MaxTokens to begin with. Every attempt that does not
// get a FINAL answer (NOT_SENT, NOT_EXECUTED, OUTCOME_UNKNOWN) takes one
// token, down to 0; every FINAL answer gives back TokenRatio, up to
// MaxTokens. A call may retry only while more than MaxTokens/2 tokens are
// left; otherwise it stops with StopRetryBudget. In steady failure, then,
// retries are held to about TokenRatio per answered call.
type RetryBudget struct {
	// MaxTokens is the size of the bucket, in (0, 1000].
	MaxTokens float64
	// TokenRatio is what a FINAL answer gives back, in [0.001, 1]; it is
	// kept to three decimals, as in A6.
	TokenRatio float64
}

// RateLimit is a token bucket (golang.org/x/time/rate): it refills at
// PerSecond tokens a second up to Burst, and each call takes one. A call
// finding it empty does not wait: it is refused.
type RateLimit struct {
	// PerSecond is the refill rate, in calls a second; must be positive.
	PerSecond float64
	// Burst is the bucket's size, the calls that may start at once; at
	// least 1.
	Burst int
}

// BreakerConfig configures the circuit breaker. It is closed to begin
// with and counts the outcome of each attempt in a sliding window. It
// opens when one of its two conditions holds over the window's attempts:
// the share that failed reaches FailureRate, or the share that were slow
// reaches SlowRate. While open it refuses every attempt, touching no
// network. After OpenFor it is half-open: it lets Probes attempts
// through, refusing the rest; if all of them succeed it closes, with an
// empty window; the first that fails opens it again.
//
// An attempt succeeds when it gets a FINAL answer, whatever its status:
// APP_ERROR is the business refusing, not the server failing. It fails
// otherwise (NOT_SENT, NOT_EXECUTED, OUTCOME_UNKNOWN), except that an
// attempt ended by the caller canceling its context or by Client.Close
// says nothing of the server and is not counted.
type BreakerConfig struct {
	// Window is how far back the rates look; Bucket is its resolution:
	// the window is a ring of Window/Bucket buckets (rounded up, at most
	// 10000), and the oldest bucket's attempts leave it all at once.
	// Both must be positive, Bucket <= Window.
	Window, Bucket time.Duration
	// MinCalls is the fewest attempts counted in the window before the
	// breaker may open; at least 1.
	MinCalls uint32
	// FailureRate opens the breaker when this share of the window's
	// attempts failed; in [0, 1], 0 disables the condition.
	FailureRate float64
	// SlowCall and SlowRate: an attempt that took longer than SlowCall
	// (from the start of its connect to its end) is slow, whatever its
	// outcome, and the breaker opens when SlowRate of the window's
	// attempts were slow. SlowRate is in [0, 1], 0 disables the
	// condition; when it is positive SlowCall must be too, and a slow
	// probe fails. At least one of FailureRate and SlowRate must be
	// positive.
	SlowCall time.Duration
	SlowRate float64
	// OpenFor is how long the breaker stays open before it lets probes
	// through; must be positive.
	OpenFor time.Duration
	// Probes is how many attempts the half-open breaker lets through; all
	// must succeed for it to close. At least 1.
	Probes uint32
}

// maxBuckets bounds the ring of a breaker's window.
const maxBuckets = 10000

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		AttemptTimeout: 300 * time.Millisecond,
		Deadline:       2 * time.Second,
		MaxAttempts:    4,
		BackoffInitial: 20 * time.Millisecond,
		BackoffMax:     200 * time.Millisecond,
		Jitter:         0.2,
		WriteTimeout:   2 * time.Second,
	}
}

// ErrConfig is wrapped by every error Validate returns.
var ErrConfig = errors.New("client: invalid config")

// Validate reports the first field that is out of range.
func (c *Config) Validate() error {
	switch {
	case c.AttemptTimeout <= 0:
		return fmt.Errorf("%w: AttemptTimeout %v must be positive", ErrConfig, c.AttemptTimeout)
	case c.Deadline <= 0:
		return fmt.Errorf("%w: Deadline %v must be positive", ErrConfig, c.Deadline)
	case c.MaxAttempts < 1:
		return fmt.Errorf("%w: MaxAttempts %d must be at least 1", ErrConfig, c.MaxAttempts)
	case c.BackoffInitial <= 0 || c.BackoffMax < c.BackoffInitial:
		return fmt.Errorf("%w: backoff %v..%v must be positive and ordered", ErrConfig, c.BackoffInitial, c.BackoffMax)
	case c.Jitter < 0 || c.Jitter >= 1:
		return fmt.Errorf("%w: Jitter %v outside [0,1)", ErrConfig, c.Jitter)
	case c.WriteTimeout <= 0:
		return fmt.Errorf("%w: WriteTimeout %v must be positive", ErrConfig, c.WriteTimeout)
	case c.MaxInFlight < 0:
		return fmt.Errorf("%w: MaxInFlight %d must not be negative", ErrConfig, c.MaxInFlight)
	case c.UserTimeout < 0:
		return fmt.Errorf("%w: UserTimeout %v must not be negative", ErrConfig, c.UserTimeout)
	}
	if err := c.validateBalancer(); err != nil {
		return err
	}
	if k := c.Keepalive; k != nil {
		switch {
		case k.Time <= 0:
			return fmt.Errorf("%w: Keepalive.Time %v must be positive", ErrConfig, k.Time)
		case k.Timeout <= 0:
			return fmt.Errorf("%w: Keepalive.Timeout %v must be positive", ErrConfig, k.Timeout)
		}
	}
	if b := c.RetryBudget; b != nil {
		switch {
		case !(b.MaxTokens > 0 && b.MaxTokens <= 1000):
			return fmt.Errorf("%w: RetryBudget.MaxTokens %v outside (0,1000]", ErrConfig, b.MaxTokens)
		case !(b.TokenRatio >= 0.001 && b.TokenRatio <= 1):
			return fmt.Errorf("%w: RetryBudget.TokenRatio %v outside [0.001,1]", ErrConfig, b.TokenRatio)
		}
	}
	if b := c.Breaker; b != nil {
		if err := b.validate(); err != nil {
			return err
		}
	}
	if h := c.Hedge; h != nil {
		switch {
		case h.Delay <= 0:
			return fmt.Errorf("%w: Hedge.Delay %v must be positive", ErrConfig, h.Delay)
		case h.MaxHedges < 0:
			return fmt.Errorf("%w: Hedge.MaxHedges %d must not be negative", ErrConfig, h.MaxHedges)
		}
	}
	// In order, so that the same config always reports the same method.
	methods := make([]string, 0, len(c.RateLimits))
	for m := range c.RateLimits {
		methods = append(methods, m)
	}
	slices.Sort(methods)
	for _, m := range methods {
		switch l := c.RateLimits[m]; {
		case m == "":
			return fmt.Errorf("%w: RateLimits has an empty method", ErrConfig)
		case !(l.PerSecond > 0):
			return fmt.Errorf("%w: RateLimits[%q].PerSecond %v must be positive", ErrConfig, m, l.PerSecond)
		case l.Burst < 1:
			return fmt.Errorf("%w: RateLimits[%q].Burst %d must be at least 1", ErrConfig, m, l.Burst)
		}
	}
	return nil
}

func (b *BreakerConfig) validate() error {
	rate := func(r float64) bool { return r >= 0 && r <= 1 } // false for NaN
	switch {
	case b.Window <= 0 || b.Bucket <= 0 || b.Bucket > b.Window:
		return fmt.Errorf("%w: Breaker.Window %v and Breaker.Bucket %v must be positive, Bucket <= Window", ErrConfig, b.Window, b.Bucket)
	case (b.Window+b.Bucket-1)/b.Bucket > maxBuckets:
		return fmt.Errorf("%w: Breaker.Window %v over Breaker.Bucket %v makes more than %d buckets", ErrConfig, b.Window, b.Bucket, maxBuckets)
	case b.MinCalls < 1:
		return fmt.Errorf("%w: Breaker.MinCalls %d must be at least 1", ErrConfig, b.MinCalls)
	case !rate(b.FailureRate):
		return fmt.Errorf("%w: Breaker.FailureRate %v outside [0,1]", ErrConfig, b.FailureRate)
	case !rate(b.SlowRate):
		return fmt.Errorf("%w: Breaker.SlowRate %v outside [0,1]", ErrConfig, b.SlowRate)
	case b.FailureRate == 0 && b.SlowRate == 0:
		return fmt.Errorf("%w: Breaker.FailureRate and Breaker.SlowRate are both 0: it could never open", ErrConfig)
	case b.SlowCall < 0 || (b.SlowRate > 0 && b.SlowCall == 0):
		return fmt.Errorf("%w: Breaker.SlowCall %v must be positive when SlowRate is set, and never negative", ErrConfig, b.SlowCall)
	case b.OpenFor <= 0:
		return fmt.Errorf("%w: Breaker.OpenFor %v must be positive", ErrConfig, b.OpenFor)
	case b.Probes < 1:
		return fmt.Errorf("%w: Breaker.Probes %d must be at least 1", ErrConfig, b.Probes)
	}
	return nil
}
