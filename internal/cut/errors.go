package cut

import (
	"errors"
	"fmt"
	"strconv"
)

// Kind names one way an adapter breaks the protocol. A Kind is also an
// error, so that errors.Is(err, cut.Hung) tests an *Error's Kind.
type Kind int

// The ways an adapter can misbehave (adapters/PROTOCOL.md, "What the
// harness does when an adapter misbehaves").
const (
	// NoInit: no init_ok within Config.InitTimeout, or the adapter
	// exited before answering init.
	NoInit Kind = iota + 1
	// WrongProtocol: init_ok names another protocol, or is malformed.
	WrongProtocol
	// BadOutput: a line that is not JSON, has no known type, breaks its
	// message's fields, or comes out of turn.
	BadOutput
	// LineTooLong: a line longer than MaxLine.
	LineTooLong
	// UnknownID: an answer for an id the harness never sent.
	UnknownID
	// DuplicateID: a second answer for an id.
	DuplicateID
	// Fatal: the adapter wrote fatal, saying it could not read the
	// harness's input.
	Fatal
	// Exited: the adapter exited or closed its stdout with calls
	// unanswered or before shutdown, or exited non-zero after it.
	Exited
	// Hung: no answer to a call within its deadline plus
	// Config.CallGrace.
	Hung
	// IgnoredShutdown: no shutdown_ok within Config.ShutdownTimeout, or
	// no exit within Config.ExitGrace of it.
	IgnoredShutdown
	// ImpossibleElapsed: a result whose elapsed_ms is longer, by more
	// than ClaimSlack, than the harness measured from sending the call
	// to reading the result: the adapter cannot have spent longer on the
	// call than it had it.
	ImpossibleElapsed
)

var kindNames = [...]string{
	NoInit:            "no_init",
	WrongProtocol:     "wrong_protocol",
	BadOutput:         "bad_output",
	LineTooLong:       "line_too_long",
	UnknownID:         "unknown_id",
	DuplicateID:       "duplicate_id",
	Fatal:             "fatal",
	Exited:            "exited",
	Hung:              "hung",
	IgnoredShutdown:   "ignored_shutdown",
	ImpossibleElapsed: "impossible_elapsed",
}

// String returns the kind's snake_case name; an unknown kind prints as
// UNKNOWN_KIND_N.
func (k Kind) String() string {
	if k > 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "UNKNOWN_KIND_" + strconv.Itoa(int(k))
}

// Error makes a Kind usable as the target of errors.Is.
func (k Kind) Error() string { return "cut: " + k.String() }

// Error is an adapter breaking the protocol. It ends the adapter's
// session: every call still waiting gets the same *Error.
type Error struct {
	// Adapter names the adapter: its path, then its stack and version
	// once init_ok has given them.
	Adapter string
	Kind    Kind
	// CallID is the call the misbehaviour concerns, 0 for none.
	CallID int64
	// Detail says what happened, in words.
	Detail string
	// Stderr is the end of the adapter's stderr, at most stderrLines
	// lines: as far as it had come when the error was made, and all of
	// it in the error Close (or a failing Start) returns.
	Stderr string
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("cut: adapter %s: %s: %s", e.Adapter, e.Kind.String(), e.Detail)
	if e.Stderr != "" {
		msg += fmt.Sprintf("; its stderr ended: %q", e.Stderr)
	} else {
		msg += "; its stderr was empty"
	}
	return msg
}

// Is reports whether target is e's Kind.
func (e *Error) Is(target error) bool {
	k, ok := target.(Kind)
	return ok && k == e.Kind
}

// ErrClosed is what Do returns once Close has ended a session that had
// no error.
var ErrClosed = errors.New("cut: adapter closed")

// CallErrorKind says why an adapter did not invoke a call.
type CallErrorKind int

// The call_error kinds of the protocol.
const (
	// CallConfig: the channel could not be built from its target,
	// service config or keepalive.
	CallConfig CallErrorKind = iota + 1
	// CallUnsupported: the method or an option is beyond the adapter or
	// its library.
	CallUnsupported
	// CallBadRequest: the request does not fit the method's message.
	CallBadRequest
	// CallDuplicateID: the id was used before.
	CallDuplicateID
	// CallProtocol: the call message was malformed or conflicts with its
	// channel's earlier configuration.
	CallProtocol
)

var callErrorNames = [...]string{
	CallConfig:      "config",
	CallUnsupported: "unsupported",
	CallBadRequest:  "bad_request",
	CallDuplicateID: "duplicate_id",
	CallProtocol:    "protocol",
}

// String returns the kind as the wire names it; an unknown kind prints as
// UNKNOWN_CALL_ERROR_N.
func (k CallErrorKind) String() string {
	if k > 0 && int(k) < len(callErrorNames) {
		return callErrorNames[k]
	}
	return "UNKNOWN_CALL_ERROR_" + strconv.Itoa(int(k))
}

func parseCallErrorKind(s string) (CallErrorKind, bool) {
	for k, name := range callErrorNames {
		if k > 0 && name == s {
			return CallErrorKind(k), true
		}
	}
	return 0, false
}

// CallError is an adapter's call_error: the call was definitely not
// invoked. It is an answer, not a misbehaviour; the session goes on.
type CallError struct {
	ID   int64
	Kind CallErrorKind
	Text string
}

func (e *CallError) Error() string {
	return fmt.Sprintf("cut: call %d not invoked (%s): %s", e.ID, e.Kind, e.Text)
}

// stderrLines is how many of its last stderr lines an *Error quotes.
const stderrLines = 20
