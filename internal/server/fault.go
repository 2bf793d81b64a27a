package server

import (
	"strconv"

	"github.com/rpcbench/rpcbench/internal/fault"
)

// FaultKind is one kind of misbehaviour the server can inject.
type FaultKind uint8

// Fault kinds. Each fires on a business request after the server has
// decided to serve it (so never on an expired one).
const (
	// FaultLate executes, then writes the response only after the
	// request's budget plus Delay has passed since it arrived.
	FaultLate FaultKind = iota + 1
	// FaultSleep sleeps Delay in the worker before executing.
	FaultSleep
	// FaultUnavailable answers UNAVAILABLE without executing, with a
	// retry-after hint when RetryAfter is set.
	FaultUnavailable
	// FaultNoReply executes and never answers.
	FaultNoReply
	// FaultClose executes, then closes the connection without answering.
	FaultClose
	// FaultPartial executes, writes the first half of the response frame,
	// then closes the connection.
	FaultPartial
	// FaultBadMagic executes, then answers with a frame whose magic is
	// 0xdead.
	FaultBadMagic
	// FaultUnavailableAfterExec executes, then answers UNAVAILABLE, which
	// says it did not: what a proxy in front of a handler that crashed
	// after its commit produces. It breaks the protocol's contract on
	// purpose, for negative controls of the checkers that must catch it.
	FaultUnavailableAfterExec
	// FaultDrain starts a drain of the server (SPEC.md, "Drain") when a
	// matching request is read, before it is taken: the request is the
	// first one above its connection's drain ID, and is dropped. It is
	// matched on the reader, never by a worker (isDrain).
	FaultDrain
)

// grammar is the server's dialect of the rules' text form: the common
// keys only.
var grammar = fault.Grammar[FaultKind]{
	Names: map[FaultKind]string{
		FaultLate:        "late",
		FaultSleep:       "sleep",
		FaultUnavailable: "unavailable",
		FaultNoReply:     "noreply",
		FaultClose:       "close",
		FaultPartial:     "partial",
		FaultBadMagic:    "badmagic",

		FaultUnavailableAfterExec: "unavailable_after_exec",
		FaultDrain:                "drain",
	},
	Pkg:       "server",
	WantKinds: "late, sleep, unavailable, noreply, close, partial, badmagic, unavailable_after_exec or drain",
}

func (k FaultKind) String() string { return grammar.Name(k) }

// Fault is one injection rule: the common keys of every transport's
// rules (fault.Spec), with the server's kinds. Delay is the extra
// lateness for FaultLate and the pause for FaultSleep, unused by the
// others; RetryAfter is the retry-after hint FaultUnavailable puts in its
// answer (SPEC "Statuses"), in whole milliseconds rounded up, -1 for
// fault.RetryNever.
type Fault fault.Spec[FaultKind]

// unavailableText is the payload of the answer FaultUnavailable sends.
func (f Fault) unavailableText() string {
	const text = "injected unavailable"
	if f.RetryAfter == 0 {
		return text
	}
	return text + " retry_after_ms=" + strconv.FormatInt(fault.RetryAfterMs(f.RetryAfter), 10)
}

func (f Fault) String() string { return grammar.Format(fault.Spec[FaultKind](f)) }

// ParseFault parses the text form used by the -fault flag and the
// ctl.fault method (fault.Grammar.Parse): space-separated key=value
// pairs, for example "kind=late method=get count=1 delay=150ms". kind is
// required; retry_after (a Go duration > 0, or never) is allowed only
// with kind=unavailable.
func ParseFault(s string) (Fault, error) {
	f, err := grammar.Parse(s, nil)
	return Fault(f), err
}

// CheckMethod returns a *fault.MethodError if f names a method that is not
// among methods, the business methods of the handler it is meant for
// (transport.Handler.Methods). ParseFault cannot tell, knowing no
// handler; New, AddFault and ctl.fault check their rules against their
// handler's methods, and a program that parses rules before it has a
// handler checks them here.
func (f Fault) CheckMethod(methods []string) error {
	return grammar.CheckMethod(f, methods)
}

// Scope returns the method f is for and how many requests it fires on
// (fault.Rule).
func (f Fault) Scope() (method string, count int) { return f.Method, f.Count }

// isDrain and notDrain split the rules between the reader, which asks
// for drain rules before a request is taken, and the worker, which asks
// for the others.
func isDrain(f Fault) bool  { return f.Kind == FaultDrain }
func notDrain(f Fault) bool { return f.Kind != FaultDrain }
