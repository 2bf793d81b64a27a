package grpcwire

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"

	"github.com/rpcbench/rpcbench/internal/server"
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

var faultNames = map[FaultKind]string{
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
}

func (k FaultKind) String() string {
	if n, ok := faultNames[k]; ok {
		return n
	}
	return fmt.Sprintf("unknown_fault_%d", uint8(k))
}

// kindList is every kind's name, sorted, for error messages.
func kindList() string {
	names := make([]string, 0, len(faultNames))
	for _, n := range faultNames {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

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
	// up, server.RetryNever sends -1 ("do not retry").
	RetryAfter time.Duration
	// Code is FaultRST's RST_STREAM code, one of REFUSED_STREAM, CANCEL,
	// INTERNAL_ERROR and PROTOCOL_ERROR.
	Code http2.ErrCode
	// Headers makes FaultRST send the response HEADERS before the
	// RST_STREAM.
	Headers bool
}

// String returns the rule's canonical text form, which starts with
// "wire=grpc" so that a log or a ctl.fault payload says which side it is
// for.
func (f Fault) String() string {
	s := "wire=" + serverapi.WireGRPC + " kind=" + f.Kind.String()
	if f.Method != "" {
		s += " method=" + f.Method
	}
	if f.Count > 0 {
		s += " count=" + strconv.Itoa(f.Count)
	}
	if f.Delay > 0 {
		s += " delay=" + f.Delay.String()
	}
	switch {
	case f.RetryAfter < 0:
		s += " retry_after=never"
	case f.RetryAfter > 0:
		s += " retry_after=" + f.RetryAfter.String()
	}
	if f.Kind == FaultRST {
		s += " code=" + f.Code.String()
	}
	if f.Headers {
		s += " headers=true"
	}
	return s
}

// pushbackMs is grpc-retry-pushback-ms for f.RetryAfter: whole
// milliseconds rounded up, so a client honouring it never retries early,
// or -1.
func (f Fault) pushbackMs() int64 {
	if f.RetryAfter < 0 {
		return -1
	}
	return int64((f.RetryAfter + time.Millisecond - 1) / time.Millisecond)
}

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
// (server.ParseFault), space-separated key=value pairs with kind
// required, and these keys besides: code=NAME for kind=rst (required
// there, an HTTP/2 error code name such as CANCEL), headers=true for
// kind=rst with a code other than REFUSED_STREAM, and wire=grpc, which
// may lead the rule and is ignored. For example
// "kind=rst code=CANCEL headers=true method=debit count=1".
func ParseFault(s string) (Fault, error) {
	var f Fault
	hasCode := false
	for _, field := range strings.Fields(s) {
		k, v, ok := strings.Cut(field, "=")
		if !ok {
			return f, fmt.Errorf("grpcwire: fault %q: %q is not key=value", s, field)
		}
		switch k {
		case "wire":
			if v != serverapi.WireGRPC {
				return f, fmt.Errorf("grpcwire: fault %q: wire=%q, want %s", s, v, serverapi.WireGRPC)
			}
		case "kind":
			for kind, name := range faultNames {
				if name == v {
					f.Kind = kind
				}
			}
			if f.Kind == 0 {
				return f, fmt.Errorf("grpcwire: fault %q: unknown kind %q (want one of %s)", s, v, kindList())
			}
		case "method":
			f.Method = v
		case "count":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return f, fmt.Errorf("grpcwire: fault %q: count %q is not a whole number >= 0", s, v)
			}
			f.Count = n
		case "delay":
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return f, fmt.Errorf("grpcwire: fault %q: delay %q is not a duration >= 0", s, v)
			}
			f.Delay = d
		case "retry_after":
			if v == "never" {
				f.RetryAfter = server.RetryNever
				break
			}
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return f, fmt.Errorf("grpcwire: fault %q: retry_after %q is neither a duration > 0 nor never", s, v)
			}
			f.RetryAfter = d
		case "code":
			i := slices.IndexFunc(rstCodes, func(c http2.ErrCode) bool { return c.String() == v })
			if i < 0 {
				return f, fmt.Errorf("grpcwire: fault %q: code %q is not one of REFUSED_STREAM, CANCEL, INTERNAL_ERROR, PROTOCOL_ERROR", s, v)
			}
			f.Code, hasCode = rstCodes[i], true
		case "headers":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return f, fmt.Errorf("grpcwire: fault %q: headers %q is not true or false", s, v)
			}
			f.Headers = b
		default:
			return f, fmt.Errorf("grpcwire: fault %q: unknown key %q (want kind, method, count, delay, retry_after, code, headers)", s, k)
		}
	}
	switch {
	case f.Kind == 0:
		return f, fmt.Errorf("grpcwire: fault %q: kind is required", s)
	case f.RetryAfter != 0 && f.Kind != FaultUnavailable:
		return f, fmt.Errorf("grpcwire: fault %q: retry_after is only for kind=unavailable", s)
	case hasCode != (f.Kind == FaultRST):
		return f, fmt.Errorf("grpcwire: fault %q: code is required with kind=rst and only there", s)
	case f.Headers && (f.Kind != FaultRST || f.Code == http2.ErrCodeRefusedStream):
		return f, fmt.Errorf("grpcwire: fault %q: headers=true is only for kind=rst with a code other than REFUSED_STREAM, which says the stream was not processed", s)
	case f.Delay != 0 && f.Kind != FaultLate && f.Kind != FaultSleep && f.Kind != FaultUnavailable:
		return f, fmt.Errorf("grpcwire: fault %q: delay is only for kind=late, kind=sleep and kind=unavailable", s)
	}
	return f, nil
}

// faultTable holds the active rules; the first unspent matching rule
// fires.
type faultTable struct {
	mu    sync.Mutex // guards rules
	rules []faultRule
	n     atomic.Int32 // len(rules), read without the lock
}

type faultRule struct {
	Fault
	fired int
}

func (t *faultTable) add(f Fault) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rules = append(t.rules, faultRule{Fault: f})
	t.n.Store(int32(len(t.rules)))
}

func (t *faultTable) clear() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rules = nil
	t.n.Store(0)
}

// take returns the rule that fires for method, if any, and spends one
// use of it.
func (t *faultTable) take(method string) (Fault, bool) {
	if t.n.Load() == 0 {
		return Fault{}, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range t.rules {
		r := &t.rules[i]
		if r.Method != "" && r.Method != method {
			continue
		}
		if r.Count > 0 && r.fired >= r.Count {
			continue
		}
		r.fired++
		return r.Fault, true
	}
	return Fault{}, false
}
