package proxy

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/rpcbench/rpcbench/internal/grpcwire"
	"github.com/rpcbench/rpcbench/internal/outcome"
)

// The invariants judged per logical call: the grpc group's, by name.
const (
	InvExecOnce       = "exec_at_most_once"
	InvOKExecuted     = "ok_only_if_executed"
	InvWithinDeadline = "within_deadline"
	InvTimeoutLeft    = "timeout_is_time_left"
	InvPushback       = "pushback_honoured"
)

// Invariants are the invariants Judge decides, in the order it reports
// them.
var Invariants = []string{InvExecOnce, InvOKExecuted, InvWithinDeadline, InvTimeoutLeft, InvPushback}

// JudgeOptions say how calls are judged.
type JudgeOptions struct {
	// Idempotent reports whether a method may run twice: its calls are
	// not judged by exec_at_most_once. Nil: no method is.
	Idempotent func(method string) bool
	// Slack is how far past its deadline a call may end, or a retry's
	// grpc-timeout may exceed the time left, and still hold: the
	// proxy's clock is not the client's, and a loaded machine is late.
	Slack time.Duration
}

// Judged is one invariant's outcome for one call: Unsupported when it
// could not be decided, Why saying why, or what broke it.
type Judged struct {
	Inv     string
	Outcome outcome.Outcome
	Why     string
}

// Verdict is one logical call, judged.
type Verdict struct {
	Call Call
	// Executions is the sum of its attempts' (unforwarded ones execute
	// nothing); -1 when some forwarded attempt's are unknown.
	Executions int
	// Forwarded counts the attempts the upstream was sent.
	Forwarded int
	// Told is what the client was sent last: a grpc-status's name,
	// RST_<code>, CONN_CLOSED, GOAWAY, or "(none)".
	Told string
	// Elapsed is from the first attempt's start to the last one's end.
	Elapsed time.Duration
	Judged  []Judged
}

// Of returns inv's judgement.
func (v Verdict) Of(inv string) Judged {
	for _, j := range v.Judged {
		if j.Inv == inv {
			return j
		}
	}
	return Judged{Inv: inv}
}

// Judge decides each call's invariants from its attempts as the proxy
// recorded them: executions by the oracle's counts, never by answers.
func Judge(calls []Call, o JudgeOptions) []Verdict {
	out := make([]Verdict, len(calls))
	for i, c := range calls {
		out[i] = judgeCall(c, o)
	}
	return out
}

func judgeCall(c Call, o JudgeOptions) Verdict {
	v := Verdict{Call: c, Told: "(none)"}
	first, last := c.Attempts[0], c.Attempts[len(c.Attempts)-1]
	known := true
	okSent := false
	var end time.Time
	for _, a := range c.Attempts {
		if a.Forwarded {
			v.Forwarded++
			if a.Executions == nil {
				known = false
			} else {
				v.Executions += *a.Executions
			}
		}
		if a.Client == "OK" {
			okSent = true
		}
		if a.Ended.After(end) {
			end = a.Ended
		}
	}
	if !known {
		v.Executions = -1
	}
	switch {
	case last.Client != "":
		v.Told = last.Client
	case last.ClientReset != "":
		v.Told = "(client reset " + last.ClientReset + ")"
	}
	if !end.IsZero() {
		v.Elapsed = end.Sub(first.Start)
	}
	unknown := "no oracle counted the executions of every forwarded attempt"
	add := func(inv string, oc outcome.Outcome, why string) {
		v.Judged = append(v.Judged, Judged{Inv: inv, Outcome: oc, Why: why})
	}

	switch {
	case o.Idempotent != nil && o.Idempotent(c.Method):
		add(InvExecOnce, outcome.Unsupported, "the method is idempotent")
	case !known:
		add(InvExecOnce, outcome.Unsupported, unknown)
	case v.Executions > 1:
		add(InvExecOnce, outcome.Violated, fmt.Sprintf("executed %d times in %d attempts", v.Executions, len(c.Attempts)))
	default:
		add(InvExecOnce, outcome.Holds, "")
	}

	switch {
	case !okSent:
		add(InvOKExecuted, outcome.Holds, "")
	case !known:
		add(InvOKExecuted, outcome.Unsupported, unknown)
	case v.Executions == 0:
		add(InvOKExecuted, outcome.Violated, "the client was sent OK and the call never executed")
	default:
		add(InvOKExecuted, outcome.Holds, "")
	}

	add(deadlines(c, o.Slack))
	add(timesLeft(c, o.Slack))
	add(pushback(c))
	return v
}

// segments splits a call's attempts by deadline: an attempt that
// carries grpc-previous-rpc-attempts, or is a transparent retry of a
// refused one, runs under the deadline of the attempt that began its
// segment; any other (a client's own retry, tied to the call by its
// idempotency-key) begins a segment under a deadline of its own.
func segments(c Call) [][]Attempt {
	var out [][]Attempt
	for i, a := range c.Attempts {
		if i == 0 || !continues(c.Attempts[i-1], a) {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], a)
	}
	return out
}

// continues reports whether a runs under the deadline of the attempt
// before it, prev.
func continues(prev, a Attempt) bool {
	if n, err := strconv.Atoi(a.Previous); err == nil && n > 0 {
		return true
	}
	refused := !prev.Forwarded && (prev.Client == "RST_REFUSED_STREAM" || prev.Client == "GOAWAY")
	gap := a.Start.Sub(prev.Ended)
	return refused && gap >= 0 && gap <= transparentWindow
}

// deadlines judges within_deadline: in each segment, no attempt starts,
// or is still open, later than the segment's first attempt's
// grpc-timeout (and slack) after it started.
func deadlines(c Call, slack time.Duration) (string, outcome.Outcome, string) {
	judged := false
	for _, seg := range segments(c) {
		first := seg[0]
		deadline, err := grpcwire.ParseTimeout(first.Timeout)
		if err != nil {
			continue
		}
		judged = true
		bound := first.Start.Add(deadline + slack)
		for _, a := range seg {
			i := slices.IndexFunc(c.Attempts, func(x Attempt) bool { return x.Conn == a.Conn && x.Stream == a.Stream }) + 1
			switch {
			case a.Start.After(bound):
				return InvWithinDeadline, outcome.Violated, fmt.Sprintf("attempt %d started %s after attempt %d, past its %s deadline", i, ms(a.Start.Sub(first.Start)), i-slices.Index(seg, a), first.Timeout)
			case a.Ended.IsZero() || a.Ended.After(bound):
				return InvWithinDeadline, outcome.Violated, fmt.Sprintf("attempt %d was still open %s after attempt %d started, past its %s deadline", i, ms(deadline+slack), i-slices.Index(seg, a), first.Timeout)
			}
		}
	}
	if !judged {
		return InvWithinDeadline, outcome.Unsupported, "the call carried no grpc-timeout"
	}
	return InvWithinDeadline, outcome.Holds, ""
}

// timesLeft judges timeout_is_time_left: in each segment, every attempt
// after the first carries a grpc-timeout no longer than the segment's
// deadline left when it started.
func timesLeft(c Call, slack time.Duration) (string, outcome.Outcome, string) {
	judged := false
	for _, seg := range segments(c) {
		if len(seg) < 2 {
			continue
		}
		first := seg[0]
		deadline, err := grpcwire.ParseTimeout(first.Timeout)
		if err != nil {
			continue
		}
		judged = true
		for _, a := range seg[1:] {
			i := slices.IndexFunc(c.Attempts, func(x Attempt) bool { return x.Conn == a.Conn && x.Stream == a.Stream }) + 1
			left := deadline - a.Start.Sub(first.Start)
			t, err := grpcwire.ParseTimeout(a.Timeout)
			if err != nil {
				return InvTimeoutLeft, outcome.Violated, fmt.Sprintf("attempt %d carried no grpc-timeout (%s left)", i, ms(left))
			}
			if t > left+slack {
				return InvTimeoutLeft, outcome.Violated, fmt.Sprintf("attempt %d carried grpc-timeout %s with %s left", i, a.Timeout, ms(left))
			}
		}
	}
	if !judged {
		return InvTimeoutLeft, outcome.Unsupported, "no retry under a grpc-timeout to carry the time left"
	}
	return InvTimeoutLeft, outcome.Holds, ""
}

// pushback judges pushback_honoured: after an attempt whose client was
// sent grpc-retry-pushback-ms P, the next attempt starts P or more
// later, and none comes after a negative one.
func pushback(c Call) (string, outcome.Outcome, string) {
	seen := false
	for i, a := range c.Attempts {
		if a.Pushback == "" {
			continue
		}
		seen = true
		p, err := strconv.Atoi(a.Pushback)
		if i+1 == len(c.Attempts) {
			continue
		}
		next := c.Attempts[i+1]
		switch {
		case err != nil || p < 0:
			return InvPushback, outcome.Violated, fmt.Sprintf("attempt %d came after pushback %q, which says not to retry", i+2, a.Pushback)
		case next.Start.Sub(a.Ended) < time.Duration(p)*time.Millisecond:
			return InvPushback, outcome.Violated, fmt.Sprintf("attempt %d came %s after pushback of %dms", i+2, ms(next.Start.Sub(a.Ended)), p)
		}
	}
	if !seen {
		return InvPushback, outcome.Unsupported, "no attempt was sent pushback"
	}
	return InvPushback, outcome.Holds, ""
}

func ms(d time.Duration) string { return fmt.Sprintf("%dms", d.Milliseconds()) }
