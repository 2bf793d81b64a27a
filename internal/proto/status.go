package proto

import "fmt"

// Status is the outcome of a call. Values 0 through 4 travel on the wire in
// response frames; StatusUnknown and the statuses of calls the client
// refused locally (StatusClientBusy, StatusRateLimited, StatusCircuitOpen)
// exist only on the client side and never travel.
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

	// Statuses of a call the client refused itself, before any attempt:
	// nothing was sent, so the server did not execute it. They never
	// travel. StatusClientBusy: the client's cap on calls in flight was
	// reached. StatusRateLimited: the method's rate limit had no token
	// left. StatusCircuitOpen: the client's circuit breaker was open.
	StatusClientBusy  Status = 0xfc
	StatusRateLimited Status = 0xfd
	StatusCircuitOpen Status = 0xfe
)

var statusNames = map[Status]string{
	StatusOK:               "OK",
	StatusAppError:         "APP_ERROR",
	StatusInvalidArgument:  "INVALID_ARGUMENT",
	StatusDeadlineExceeded: "DEADLINE_EXCEEDED",
	StatusUnavailable:      "UNAVAILABLE",
	StatusUnknown:          "UNKNOWN",
	StatusClientBusy:       "CLIENT_BUSY",
	StatusRateLimited:      "RATE_LIMITED",
	StatusCircuitOpen:      "CIRCUIT_OPEN",
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
	// TypeDrain is sent by a draining server, once per connection: its
	// ID is the last business request the server took on the
	// connection, 0 if none (SPEC.md, "Drain"). It is the one frame
	// whose ID may be 0.
	TypeDrain Type = 3
)

// DrainMethod is the method name a DRAIN frame carries; the frame
// layout needs one, and a receiver does not interpret it.
const DrainMethod = "drain"

var typeNames = map[Type]string{
	TypeRequest:  "REQUEST",
	TypeResponse: "RESPONSE",
	TypeDrain:    "DRAIN",
}

func (t Type) String() string {
	if n, ok := typeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("UNKNOWN_TYPE_%d", uint8(t))
}
