package server

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
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
	// matched on the reader, never by take.
	FaultDrain
)

var faultNames = map[FaultKind]string{
	FaultLate:        "late",
	FaultSleep:       "sleep",
	FaultUnavailable: "unavailable",
	FaultNoReply:     "noreply",
	FaultClose:       "close",
	FaultPartial:     "partial",
	FaultBadMagic:    "badmagic",

	FaultUnavailableAfterExec: "unavailable_after_exec",
	FaultDrain:                "drain",
}

func (k FaultKind) String() string {
	if n, ok := faultNames[k]; ok {
		return n
	}
	return fmt.Sprintf("unknown_fault_%d", uint8(k))
}

// Fault is one injection rule.
type Fault struct {
	Kind FaultKind
	// Method restricts the rule to one method; empty matches every
	// business method.
	Method string
	// Count is how many matching requests the rule fires on before it is
	// spent; zero means every matching request.
	Count int
	// Delay is the extra lateness for FaultLate and the pause for
	// FaultSleep; unused by the others.
	Delay time.Duration
	// RetryAfter is the retry-after hint FaultUnavailable puts in its
	// answer (SPEC "Statuses"): zero sends none, a positive duration
	// sends it in whole milliseconds rounded up, and RetryNever sends -1,
	// "do not retry". Only FaultUnavailable uses it, and ParseFault
	// accepts it only there.
	RetryAfter time.Duration
}

// RetryNever is Fault.RetryAfter for a hint that says "do not retry";
// its text form is retry_after=never.
const RetryNever time.Duration = -1

// retryAfterMs is the hint's N in retry_after_ms=N: whole milliseconds
// rounded up, so that a client honouring it never retries early, or -1.
func retryAfterMs(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// unavailableText is the payload of the answer FaultUnavailable sends.
func (f Fault) unavailableText() string {
	const text = "injected unavailable"
	if f.RetryAfter == 0 {
		return text
	}
	return text + " retry_after_ms=" + strconv.FormatInt(retryAfterMs(f.RetryAfter), 10)
}

func (f Fault) String() string {
	s := "kind=" + f.Kind.String()
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
	return s
}

// ParseFault parses the text form used by the -fault flag and the
// ctl.fault method: space-separated key=value pairs, for example
// "kind=late method=get count=1 delay=150ms". kind is required;
// retry_after (a Go duration > 0, or never) is allowed only with
// kind=unavailable.
func ParseFault(s string) (Fault, error) {
	var f Fault
	for _, field := range strings.Fields(s) {
		k, v, ok := strings.Cut(field, "=")
		if !ok {
			return f, fmt.Errorf("server: fault %q: %q is not key=value", s, field)
		}
		switch k {
		case "kind":
			for kind, name := range faultNames {
				if name == v {
					f.Kind = kind
				}
			}
			if f.Kind == 0 {
				return f, fmt.Errorf("server: fault %q: unknown kind %q (want late, sleep, unavailable, noreply, close, partial, badmagic, unavailable_after_exec or drain)", s, v)
			}
		case "method":
			f.Method = v
		case "count":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return f, fmt.Errorf("server: fault %q: count %q is not a whole number >= 0", s, v)
			}
			f.Count = n
		case "delay":
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return f, fmt.Errorf("server: fault %q: delay %q is not a duration >= 0", s, v)
			}
			f.Delay = d
		case "retry_after":
			if v == "never" {
				f.RetryAfter = RetryNever
				break
			}
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return f, fmt.Errorf("server: fault %q: retry_after %q is neither a duration > 0 nor never", s, v)
			}
			f.RetryAfter = d
		default:
			return f, fmt.Errorf("server: fault %q: unknown key %q (want kind, method, count, delay, retry_after)", s, k)
		}
	}
	if f.Kind == 0 {
		return f, fmt.Errorf("server: fault %q: kind is required", s)
	}
	if f.RetryAfter != 0 && f.Kind != FaultUnavailable {
		return f, fmt.Errorf("server: fault %q: retry_after is only for kind=unavailable", s)
	}
	return f, nil
}

// MethodError is the error for a fault rule naming a method the handler
// does not serve: the rule could never fire, which is almost always a
// typo the user would otherwise not hear of.
type MethodError struct {
	Fault Fault
	// Methods are the handler's business methods, the ones a rule may
	// name.
	Methods []string
}

func (e *MethodError) Error() string {
	return fmt.Sprintf("server: fault %q: unknown method %q (want %s)", e.Fault.String(), e.Fault.Method, orList(e.Methods))
}

// CheckMethod returns a *MethodError if f names a method that is not
// among methods, the business methods of the handler it is meant for
// (transport.Handler.Methods). ParseFault cannot tell, knowing no handler; New,
// AddFault and ctl.fault check their rules against their handler's
// methods, and a program that parses rules before it has a handler
// checks them here.
func (f Fault) CheckMethod(methods []string) error {
	if f.Method == "" || slices.Contains(methods, f.Method) {
		return nil
	}
	return &MethodError{Fault: f, Methods: slices.Clone(methods)}
}

// orList returns "a, b or c".
func orList(words []string) string {
	switch len(words) {
	case 0:
		return "none"
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// faultTable holds the active rules; the first unspent matching rule fires.
type faultTable struct {
	mu    sync.Mutex // guards rules
	rules []faultRule
	// n is len(rules), readable without the lock so that the common case,
	// no faults at all, costs no locking.
	n atomic.Int32
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

// empty reports whether no rule is configured, spent or not.
func (t *faultTable) empty() bool { return t.n.Load() == 0 }

func (t *faultTable) clear() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rules = nil
	t.n.Store(0)
}

// take returns the rule that fires for method, if any, and spends one use
// of it. Drain rules are not among those it takes: the reader asks for
// them apart, with drain set, before a request is taken, and a worker
// asks for the others.
func (t *faultTable) take(method string, drain bool) (Fault, bool) {
	if t.empty() {
		return Fault{}, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range t.rules {
		r := &t.rules[i]
		if r.Method != "" && r.Method != method || (r.Kind == FaultDrain) != drain {
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
