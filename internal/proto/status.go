package proto

import "fmt"

// Status is the outcome of a call. Values 0 through 4 travel on the wire in
// response frames; StatusUnknown exists only on the client side.
type Status uint8

// Wire statuses. The server sends StatusUnavailable and StatusDeadlineExceeded
// only before it executes a request, so a client may retry any call that
// receives them.
const (
	StatusOK               Status = 0
	StatusAppError         Status = 1
	StatusInvalidArgument  Status = 2
	StatusDeadlineExceeded Status = 3
	StatusUnavailable      Status = 4

	// StatusUnknown means the request may or may not have executed: it was
	// (at least partly) written and no answer came back. It never travels.
	StatusUnknown Status = 0xff
)

var statusNames = map[Status]string{
	StatusOK:               "OK",
	StatusAppError:         "APP_ERROR",
	StatusInvalidArgument:  "INVALID_ARGUMENT",
	StatusDeadlineExceeded: "DEADLINE_EXCEEDED",
	StatusUnavailable:      "UNAVAILABLE",
	StatusUnknown:          "UNKNOWN",
}

func (s Status) String() string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return fmt.Sprintf("UNKNOWN_STATUS_%d", uint8(s))
}

// onWire reports whether s may appear in a frame.
func (s Status) onWire() bool { return s <= StatusUnavailable }

// Type is a frame's type.
type Type uint8

// Frame types.
const (
	TypeRequest  Type = 1
	TypeResponse Type = 2
)

var typeNames = map[Type]string{
	TypeRequest:  "REQUEST",
	TypeResponse: "RESPONSE",
}

func (t Type) String() string {
	if n, ok := typeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("UNKNOWN_TYPE_%d", uint8(t))
}

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
	// DEADLINE_EXCEEDED, which it sends only before executing. Any call may
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

var classNames = map[Class]string{
	ClassNotSent:     "NOT_SENT",
	ClassNotExecuted: "NOT_EXECUTED",
	ClassUnknown:     "OUTCOME_UNKNOWN",
	ClassFinal:       "FINAL",
}

func (c Class) String() string {
	if n, ok := classNames[c]; ok {
		return n
	}
	return fmt.Sprintf("UNKNOWN_CLASS_%d", uint8(c))
}

// classify maps a wire status to the class of the attempt that received it.
func classify(s Status) Class {
	switch s {
	case StatusUnavailable, StatusDeadlineExceeded:
		return ClassNotExecuted
	default:
		return ClassFinal
	}
}
