package proto

import (
	"errors"
	"fmt"
	"time"
)

// RetryPolicy chooses which failed attempts a Client retries.
type RetryPolicy uint8

const (
	// RetryClassified retries an attempt that was not sent or not executed,
	// and one whose outcome is unknown only if the call is idempotent or
	// carries an idempotency key.
	RetryClassified RetryPolicy = iota
	// RetryNaive retries every failure that is not final, whatever the
	// call. It is wrong on purpose: negative controls use it to show a
	// non-idempotent write executing twice.
	RetryNaive
)

func (p RetryPolicy) String() string {
	switch p {
	case RetryClassified:
		return "CLASSIFIED"
	case RetryNaive:
		return "NAIVE"
	}
	return fmt.Sprintf("UNKNOWN_POLICY_%d", uint8(p))
}

// Config tunes a Client. Start from DefaultConfig; Validate runs in NewClient
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
	// Retry chooses which failures are retried. Default RetryClassified.
	Retry RetryPolicy
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
		Retry:          RetryClassified,
	}
}

// ErrConfig is wrapped by every error Validate returns.
var ErrConfig = errors.New("proto: invalid config")

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
	case c.Retry != RetryClassified && c.Retry != RetryNaive:
		return fmt.Errorf("%w: Retry %v", ErrConfig, c.Retry)
	}
	return nil
}
