package client

import (
	"errors"
	"fmt"
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
	// not keep log or spans. Default nil.
	Trace func(call *Call, log []Attempt, spans []Span)
	// ConnPerCall opens a new TCP connection for every attempt and closes
	// it when the attempt ends, instead of multiplexing calls over one
	// connection. For comparison only. Default false.
	ConnPerCall bool
}

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
	}
	return nil
}
