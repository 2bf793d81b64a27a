package grpcwire

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http2"

	"github.com/rpcbench/rpcbench/internal/fault"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// FaultKind is one kind of misbehaviour the gRPC side can inject. SPEC.md
// shows each one's frames.
type FaultKind uint8

// Fault kinds. Each fires on a request after the server has decided to
// serve it: never on one answered before (unknown method, bad message,
// expired timeout). "Execute" means the handler runs the request.
const (
	// FaultUnavailable answers trailers-only UNAVAILABLE without
	// executing, with grpc-retry-pushback-ms when RetryAfter is set.
	FaultUnavailable FaultKind = iota + 1
	// FaultUnavailableAfterExec executes, then answers trailers-only
	// UNAVAILABLE: what a proxy in front of a handler that crashed after
	// its commit produces.
	FaultUnavailableAfterExec
	// FaultUnavailableAfterHeaders executes, sends the response HEADERS,
	// then trailers with UNAVAILABLE and no message: the control row, a
	// response a client has committed to once its headers came.
	FaultUnavailableAfterHeaders
	// FaultClose executes, then closes the connection before any response
	// HEADERS, with FIN: CloseWrite, read for Config.Drain, Close.
	FaultClose
	// FaultReset is FaultClose with RST: SO_LINGER 0, then Close.
	FaultReset
	// FaultCutData executes, sends the response HEADERS and the first
	// half of the DATA frame holding the reply, then closes (as
	// FaultClose).
	FaultCutData
	// FaultRST sends RST_STREAM with Code: REFUSED_STREAM without
	// executing, any other code after executing; with Headers, the
	// response HEADERS go first.
	FaultRST
	// FaultGoAwayBelow sends GOAWAY(NO_ERROR) whose last-stream-id is
	// below the request's stream, without executing, then closes (as
	// FaultClose).
	FaultGoAwayBelow
	// FaultGoAwayCover executes, sends GOAWAY(NO_ERROR) whose
	// last-stream-id is the request's stream, then closes (as FaultClose)
	// without answering.
	FaultGoAwayCover
	// FaultLate executes, then sends the answer only when the request's
	// grpc-timeout plus Delay has passed since it arrived (Delay alone
	// after arrival when it carried no grpc-timeout).
	FaultLate
	// FaultSleep sleeps Delay, then executes and answers.
	FaultSleep
	// FaultNoReply executes and never answers; the connection stays open
	// and read.
	FaultNoReply
	// FaultSilent executes, then the connection goes silent: it stays
	// open and read, but nothing more is written on it, not the answer,
	// not a PING ACK, not a WINDOW_UPDATE, until the client closes it. It
	// is a peer whose host froze or whose link went dark, which only a
	// client's keepalive can tell from a slow handler.
	FaultSilent
)

// grammar is the gRPC side's dialect of the rules' text form: the
// common keys, and code, headers and wire (ParseFault).
var grammar = fault.Grammar[FaultKind]{
	Pkg: "grpcwire",
	Names: map[FaultKind]string{
		FaultUnavailable:             "unavailable",
		FaultUnavailableAfterExec:    "unavailable_after_exec",
		FaultUnavailableAfterHeaders: "unavailable_after_headers",
		FaultClose:                   "close",
		FaultReset:                   "reset",
		FaultCutData:                 "cut_data",
		FaultRST:                     "rst",
		FaultGoAwayBelow:             "goaway_below",
		FaultGoAwayCover:             "goaway_cover",
		FaultLate:                    "late",
		FaultSleep:                   "sleep",
		FaultNoReply:                 "noreply",
		FaultSilent:                  "silent",
	},
	Keys: []string{"code", "headers", "pushback"},
}

func init() {
	// Every kind's name, sorted, for an unknown kind's error.
	names := slices.Sorted(maps.Values(grammar.Names))
	grammar.WantKinds = "one of " + strings.Join(names, ", ")
}

func (k FaultKind) String() string { return grammar.Name(k) }

// rstCodes are the RST_STREAM codes FaultRST may send.
var rstCodes = []http2.ErrCode{
	http2.ErrCodeRefusedStream, http2.ErrCodeCancel, http2.ErrCodeInternal, http2.ErrCodeProtocol,
}

// Fault is one injection rule of the gRPC side.
type Fault struct {
	Kind FaultKind
	// Method restricts the rule to one of the handler's methods (get,
	// debit, echo); empty matches every one.
	Method string
	// Count is how many matching requests the rule fires on before it is
	// spent; zero means every matching request.
	Count int
	// Delay is FaultLate's extra lateness, FaultSleep's pause, and how
	// long FaultUnavailable waits before it refuses.
	Delay time.Duration
	// RetryAfter is FaultUnavailable's grpc-retry-pushback-ms: zero sends
	// none, a positive duration sends it in whole milliseconds rounded
	// up, fault.RetryNever sends -1 ("do not retry").
	RetryAfter time.Duration
	// Code is FaultRST's RST_STREAM code, one of REFUSED_STREAM, CANCEL,
	// INTERNAL_ERROR and PROTOCOL_ERROR.
	Code http2.ErrCode
	// Headers makes FaultRST send the response HEADERS before the
	// RST_STREAM.
	Headers bool
	// Pushback is FaultUnavailable's grpc-retry-pushback-ms sent as
	// written, for a value no duration gives: "abc", "1.5", "1500x". gRFC
	// A6 reads a value that is not a whole number of milliseconds, or is
	// negative, as "do not retry".
	Pushback string
}

// spec returns the keys f shares with every transport's rules.
func (f Fault) spec() fault.Spec[FaultKind] {
	return fault.Spec[FaultKind]{Kind: f.Kind, Method: f.Method, Count: f.Count, Delay: f.Delay, RetryAfter: f.RetryAfter}
}

// String returns the rule's canonical text form, which starts with
// "wire=grpc" so that a log or a ctl.fault payload says which side it is
// for.
func (f Fault) String() string {
	s := "wire=" + serverapi.WireGRPC + " " + grammar.Format(f.spec())
	if f.Kind == FaultRST {
		s += " code=" + f.Code.String()
	}
	if f.Headers {
		s += " headers=true"
	}
	if f.Pushback != "" {
		s += " pushback=" + f.Pushback
	}
	return s
}

// pushbackMs is grpc-retry-pushback-ms for f.RetryAfter.
func (f Fault) pushbackMs() int64 { return fault.RetryAfterMs(f.RetryAfter) }

// executes reports whether the handler runs the request before the fault
// acts.
func (f Fault) executes() bool {
	switch f.Kind {
	case FaultUnavailable, FaultGoAwayBelow:
		return false
	case FaultRST:
		return f.Code != http2.ErrCodeRefusedStream
	}
	return true
}

// ParseFault parses a gRPC fault rule: rpcserver's text form
// (fault.Grammar.Parse), space-separated key=value pairs with kind
// required, and these keys besides: code=NAME for kind=rst (required
// there, an HTTP/2 error code name such as CANCEL), headers=true for
// kind=rst with a code other than REFUSED_STREAM, pushback=TEXT for
// kind=unavailable without retry_after (grpc-retry-pushback-ms sent as
// TEXT, malformed or not), and wire=grpc, which may lead the rule and is
// ignored. For example
// "kind=rst code=CANCEL headers=true method=debit count=1".
func ParseFault(s string) (Fault, error) {
	var f Fault
	hasCode := false
	key := func(k, v string) (bool, error) {
		switch k {
		case "wire":
			if v != serverapi.WireGRPC {
				return true, grammar.Errorf(s, "wire=%q, want %s", v, serverapi.WireGRPC)
			}
		case "code":
			i := slices.IndexFunc(rstCodes, func(c http2.ErrCode) bool { return c.String() == v })
			if i < 0 {
				return true, grammar.Errorf(s, "code %q is not one of REFUSED_STREAM, CANCEL, INTERNAL_ERROR, PROTOCOL_ERROR", v)
			}
			f.Code, hasCode = rstCodes[i], true
		case "headers":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return true, grammar.Errorf(s, "headers %q is not true or false", v)
			}
			f.Headers = b
		case "pushback":
			if v == "" {
				return true, grammar.Errorf(s, "pushback is empty")
			}
			f.Pushback = v
		default:
			return false, nil
		}
		return true, nil
	}
	sp, err := grammar.Parse(s, key)
	f.Kind, f.Method, f.Count, f.Delay, f.RetryAfter = sp.Kind, sp.Method, sp.Count, sp.Delay, sp.RetryAfter
	switch {
	case err != nil:
		return f, err
	case hasCode != (f.Kind == FaultRST):
		return f, grammar.Errorf(s, "code is required with kind=rst and only there")
	case f.Headers && (f.Kind != FaultRST || f.Code == http2.ErrCodeRefusedStream):
		return f, grammar.Errorf(s, "headers=true is only for kind=rst with a code other than REFUSED_STREAM, which says the stream was not processed")
	case f.Pushback != "" && (f.Kind != FaultUnavailable || f.RetryAfter != 0):
		return f, grammar.Errorf(s, "pushback is only for kind=unavailable, and not with retry_after")
	case f.Delay != 0 && f.Kind != FaultLate && f.Kind != FaultSleep && f.Kind != FaultUnavailable:
		return f, grammar.Errorf(s, "delay is only for kind=late, kind=sleep and kind=unavailable")
	}
	return f, nil
}

// CheckMethod returns a *fault.MethodError if f names a method that is
// not among methods, the business methods of the handler it is meant
// for (transport.Handler.Methods).
func (f Fault) CheckMethod(methods []string) error {
	return grammar.CheckMethod(f, methods)
}

// Scope returns the method f is for and how many requests it fires on
// (fault.Rule).
func (f Fault) Scope() (method string, count int) { return f.Method, f.Count }
