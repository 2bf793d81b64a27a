package client

import (
	"fmt"

	"github.com/rpcbench/rpcbench/internal/proto"
)

// Class is how the client classifies one attempt's outcome; it decides
// whether the call may be retried.
type Class uint8

// Attempt classes, from safest to retry to final.
const (
	// ClassNotSent: no byte of the request left the client (connect failed,
	// or the connection was dead before the write started). Any call may be
	// retried.
	ClassNotSent Class = iota + 1
	// ClassNotExecuted: the server answered UNAVAILABLE or
	// DEADLINE_EXCEEDED, which it sends only before executing, or its
	// drain frame named the attempt as not taken (DRAINED). Any call may
	// be retried.
	ClassNotExecuted
	// ClassUnknown: the write started and no usable answer came back
	// (timeout, EOF, half a response, a bad frame). Only idempotent calls
	// and calls with an idempotency key may be retried.
	ClassUnknown
	// ClassFinal: OK, APP_ERROR or INVALID_ARGUMENT. Retrying would not
	// change the answer.
	ClassFinal
)

var classNames = [...]string{
	ClassNotSent:     "NOT_SENT",
	ClassNotExecuted: "NOT_EXECUTED",
	ClassUnknown:     "OUTCOME_UNKNOWN",
	ClassFinal:       "FINAL",
}

func (c Class) String() string { return name(classNames[:], int(c), "UNKNOWN_CLASS_%d") }

// classify maps a wire status to the class of the attempt that received it.
func classify(s proto.Status) Class {
	switch s {
	case proto.StatusUnavailable, proto.StatusDeadlineExceeded:
		return ClassNotExecuted
	default:
		return ClassFinal
	}
}

// Outcome is what one attempt met.
type Outcome uint8

// Attempt outcomes.
const (
	// OutcomeConnectFailed: dialing failed (refused, budget ended, client
	// closed). Class NOT_SENT.
	OutcomeConnectFailed Outcome = iota + 1
	// OutcomeNotSent: the connection was dead, or died, before any byte of
	// the request was written. Class NOT_SENT.
	OutcomeNotSent
	// OutcomeResponse: the server answered; Attempt.Status says how.
	OutcomeResponse
	// OutcomeTimeout: the attempt's budget ran out after the request was
	// handed to the connection. Class OUTCOME_UNKNOWN.
	OutcomeTimeout
	// OutcomeCanceled: the caller's context was canceled after the request
	// was handed to the connection. Class OUTCOME_UNKNOWN.
	OutcomeCanceled
	// OutcomeConnLost: the connection died after the request was handed to
	// it (EOF, a failed read or write, half an answer, a keepalive
	// timeout, client closed).
	// Class OUTCOME_UNKNOWN.
	OutcomeConnLost
	// OutcomeProtocolError: the server sent a bad frame after the request
	// was handed to the connection. Class OUTCOME_UNKNOWN.
	OutcomeProtocolError
	// OutcomeAbandoned: another attempt of the same hedged call got a
	// FINAL answer first, so this one stopped waiting after its request
	// was handed to the connection; a late answer to it is dropped.
	// Class OUTCOME_UNKNOWN.
	OutcomeAbandoned
	// OutcomeDrained: the server's drain frame named an ID below the
	// attempt's, so the server never took it (SPEC.md, "Drain"); it is
	// re-sent elsewhere whatever its method. Class NOT_EXECUTED.
	OutcomeDrained
)

var outcomeNames = [...]string{
	OutcomeConnectFailed: "CONNECT_FAILED",
	OutcomeNotSent:       "CONN_DEAD_BEFORE_SEND",
	OutcomeResponse:      "RESPONSE",
	OutcomeTimeout:       "TIMEOUT",
	OutcomeCanceled:      "CANCELED",
	OutcomeConnLost:      "CONN_LOST_AFTER_SEND",
	OutcomeProtocolError: "PROTOCOL_ERROR_AFTER_SEND",
	OutcomeAbandoned:     "ABANDONED",
	OutcomeDrained:       "DRAINED",
}

func (o Outcome) String() string { return name(outcomeNames[:], int(o), "UNKNOWN_OUTCOME_%d") }

// Stop is why a call made no further attempt.
type Stop uint8

// Reasons to stop.
const (
	// StopFinal: an attempt got a FINAL answer.
	StopFinal Stop = iota + 1
	// StopNotRetryable: an attempt's outcome is unknown and the call may
	// not be re-sent.
	StopNotRetryable
	// StopMaxAttempts: Config.MaxAttempts attempts were made.
	StopMaxAttempts
	// StopBackoffCrosses: the pause before the next attempt would reach
	// the deadline.
	StopBackoffCrosses
	// StopDeadline: the call's deadline passed or the context's ran out.
	StopDeadline
	// StopCanceled: the caller's context was canceled.
	StopCanceled
	// StopClosed: the Client was closed.
	StopClosed
	// StopClientBusy: Config.MaxInFlight calls were in flight; the call
	// made no attempt (StatusClientBusy).
	StopClientBusy
	// StopRateLimited: the method's rate limit (Config.RateLimits) had no
	// token; the call made no attempt (StatusRateLimited).
	StopRateLimited
	// StopCircuitOpen: the circuit breaker refused the next attempt. A
	// call refused before its first attempt ends with StatusCircuitOpen;
	// one refused a retry gives up as after any other failed attempt.
	StopCircuitOpen
	// StopRetryBudget: the retry budget (Config.RetryBudget) had half its
	// tokens or fewer left when the call would have retried.
	StopRetryBudget
	// StopPushback: the last attempt's UNAVAILABLE answer carried a
	// retry-after hint that said not to retry, or one that would reach
	// the deadline.
	StopPushback
)

var stopNames = [...]string{
	StopFinal:          "final",
	StopNotRetryable:   "outcome_unknown_not_retryable",
	StopMaxAttempts:    "max_attempts",
	StopBackoffCrosses: "backoff_would_cross_deadline",
	StopDeadline:       "deadline",
	StopCanceled:       "canceled",
	StopClosed:         "client_closed",
	StopClientBusy:     "client_busy",
	StopRateLimited:    "rate_limited",
	StopCircuitOpen:    "circuit_open",
	StopRetryBudget:    "retry_budget_exhausted",
	StopPushback:       "server_pushback",
}

func (s Stop) String() string { return name(stopNames[:], int(s), "unknown_stop_%d") }

// name returns names[i], or unknown formatted with i when i has no name.
func name(names []string, i int, unknown string) string {
	if i > 0 && i < len(names) && names[i] != "" {
		return names[i]
	}
	return fmt.Sprintf(unknown, i)
}
