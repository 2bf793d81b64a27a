package cases

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/http2"

	"github.com/rpcbench/rpcbench/internal/rawgrpc"
)

// srvScenarios are the grpcserver scenarios.
func srvScenarios() []srvScenario {
	expired := []string{invSrvExpired, invSrvOKIffExec}
	return []srvScenario{
		{name: "grpcserver_timeout_0n", doc: "100 keyless debits, one at a time, with grpc-timeout 0n, a deadline already past: the server must execute none", run: srvTimeout("0n", true), invs: expired},
		{name: "grpcserver_timeout_1n", doc: "100 keyless debits, one at a time, with grpc-timeout 1n, past before the server can read them: none may execute", run: srvTimeout("1n", true), invs: expired},
		{name: "grpcserver_timeout_1u", doc: "100 keyless debits with grpc-timeout 1u: how many execute, and how many are answered as if they had not, is the machine's race: recorded, not judged", run: srvTimeout("1u", false)},
		{name: "grpcserver_timeout_100u", doc: "100 keyless debits with grpc-timeout 100u: how many execute, and how many are answered as if they had not, is the machine's race: recorded, not judged", run: srvTimeout("100u", false)},
		{name: "grpcserver_timeout_1m", doc: "100 keyless debits with grpc-timeout 1m: how many execute, and how many are answered as if they had not, is the machine's race: recorded, not judged", run: srvTimeout("1m", false)},
		{name: "grpcserver_timeout_597h", doc: "a keyless debit with grpc-timeout 597H, 8 digits as the spec allows: a deadline 25 days away is not one already past; it executes, OK", run: srvFarDeadline, invs: []string{invSrvOKIffExec, invSrvPropagated}},
		{name: "grpcserver_body_after_deadline", doc: "a keyless debit's HEADERS carry grpc-timeout 100m and its body comes 300ms later, after the deadline: the server must not execute it", run: srvBodyAfterDeadline, invs: expired},
		{name: "grpcserver_deadline_propagated", doc: "a get with grpc-timeout 3S: the handler's deadline is the 3s less what reaching it took, at most 1s", run: srvPropagated, invs: []string{invSrvPropagated}},
		{name: "grpcserver_work_past_deadline", doc: "a keyless debit under grpc-timeout 100m whose handler works 300ms without looking at its context, then executes: is the client told that it ran?", run: srvWorkPastDeadline, invs: []string{invSrvOKIffExec}},
		{name: "grpcserver_deadline_stops_handler", doc: "a keyless debit whose handler waits 3s under grpc-timeout 300m, the client never resetting it: the handler's wait ends at the deadline, unexecuted; what the client is told is recorded", run: srvDeadlineStops, invs: []string{invSrvDeadline, invSrvOKIffExec}},
		{name: "grpcserver_cancel_stops_handler", doc: "a keyless debit whose handler waits 3s is reset with RST_STREAM(CANCEL) once it started: the handler's wait ends within 1s and it never executes", run: srvCancelStops, invs: []string{invSrvCancel}},
		{name: "grpcserver_bad_message", doc: "a debit whose message claims compression the request never declared: that stream fails unexecuted, and a get on the same connection is served", run: srvBadMessage, invs: []string{invSrvIsolated, invSrvOKIffExec}},
		{name: "grpcserver_bad_frame", doc: "a WINDOW_UPDATE of 0 on a connection that served a get, a connection error: a get on another connection is served", run: srvBadFrame, invs: []string{invSrvIsolated}},
		{name: "grpcserver_oversize_message", doc: "a debit's message prefix announces 64 MiB, and 1 KiB follows: the server refuses it without waiting for the rest, unexecuted", run: srvOversize, invs: []string{invSrvOversize}},
	}
}

// srvSettle bounds how long a handler may take to end once its wait was
// cut, on a loaded 2-core machine.
const srvSettle = time.Second

// srvTries is how many debits a timeout scenario sends, one at a time:
// a server that runs expired work only when its threads race the
// deadline (grpcio's C-core at 1n) shows it in every run, not in some.
// From 1u up the race is the machine's, in both directions: grpc-go
// executed 12 of 50 debits at 1u, and at 100u answered 4 of 50 executed
// ones RST_STREAM(CANCEL) on an idle machine and none of 100 on a
// loaded one. Those scenarios record what happened and judge only
// log_matches_bank; grpcserver_work_past_deadline stages the same
// question so that its answer does not depend on the race.
const srvTries = 100

// srvTimeout sends srvTries keyless debits, one at a time, under
// grpc-timeout timeout. When expired, the deadline is past before any
// server can read the request, and executing any of them violates
// invSrvExpired; otherwise how many executed is recorded as the race it
// is. Every answer must say what happened to its own debit.
func srvTimeout(timeout string, expired bool) func(g *srvT) {
	return func(g *srvT) {
		c := g.dial()
		calls := make([]string, srvTries)
		answers := make([]rawgrpc.Result, srvTries)
		for i := range srvTries {
			var st *rawgrpc.Stream
			st, calls[i] = g.debit(c, "acct-T", debitSpec{amount: 1, timeout: timeout})
			answers[i] = g.answer(st, "a debit")
		}
		g.sync()
		execs, executedNotOK, told := 0, 0, true
		codes := map[string]int{}
		for i, call := range calls {
			h := g.handledOf(call)
			if h.started && !h.ended {
				h = g.awaitEnded(call, settleTimeout)
			}
			r := answers[i]
			execs += h.execs
			codes[r.Outcome()]++
			ok := r.HasCode && r.Code == 0
			told = told && ok == (h.execs == 1) && h.execs <= 1
			if h.execs > 0 && !ok {
				executedNotOK++
			}
		}
		g.Volatile("codes", countsText(codes))
		g.Volatile("executions", execs)
		g.Volatile("executed_not_ok", executedNotOK)
		if expired {
			g.observe(invSrvExpired, holds(execs == 0))
			g.observe(invSrvOKIffExec, holds(told))
		}
	}
}

// countsText is a map of counts as sorted name=count pairs.
func countsText(m map[string]int) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s=%d", k, v))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// srvWorkPastDeadline sends a debit under a 100ms grpc-timeout whose
// handler works 300ms without looking at its context, then executes:
// the deadline has certainly passed before it executes, and the answer
// must say it ran.
func srvWorkPastDeadline(g *srvT) {
	st, call := g.debit(g.dial(), "acct-K", debitSpec{amount: 10, timeout: "100m", workMs: 300})
	r := g.answer(st, "the debit")
	h := g.awaitEnded(call, 300*time.Millisecond+settleTimeout)
	if !h.ended {
		g.Fatalf("the debit's handler never ended")
	}
	g.Field("code", r.Outcome())
	g.Field("executions", h.execs)
	g.okIffExecuted(r, h)
}

// srvFarDeadline sends a debit whose grpc-timeout is 597 hours, within
// the 8 digits the spec allows: a server must neither take it for a
// deadline already past nor refuse it.
func srvFarDeadline(g *srvT) {
	st, call := g.debit(g.dial(), "acct-F", debitSpec{amount: 10, timeout: "597H"})
	r := g.answer(st, "the debit")
	h := g.settle(call)
	g.Field("code", r.Outcome())
	g.Field("executions", h.execs)
	g.okIffExecuted(r, h)
	// Past 2^31 ms a 32-bit millisecond deadline wraps: the handler then
	// sees one already past, or a short one.
	ok := h.deadlineMs != nil && *h.deadlineMs > float64(596*time.Hour/time.Millisecond)
	g.Field("deadline_over_596h", ok)
	g.observe(invSrvPropagated, holds(ok && r.HasCode && r.Code == 0))
}

// srvBodyAfterDeadline sends a debit's HEADERS with grpc-timeout 100m,
// and its body 300ms later.
func srvBodyAfterDeadline(g *srvT) {
	c := g.dial()
	st, call := g.debit(c, "acct-B", debitSpec{amount: 10, timeout: "100m", hold: true})
	// The wait is the scenario: the deadline must pass before the body
	// is sent.
	select {
	case <-time.After(300 * time.Millisecond):
	case <-st.Done():
	}
	st.Send(rawgrpc.DebitRequest("acct-B", 10, 0, 0), true) // a server that ended the stream may refuse it
	r := g.answer(st, "the debit")
	h := g.settle(call)
	// grpc-go answers DEADLINE_EXCEEDED or resets the stream, as its
	// timer and the late body race.
	g.Volatile("code", r.Outcome())
	g.Field("executions", h.execs)
	g.observe(invSrvExpired, holds(h.execs == 0))
	g.okIffExecuted(r, h)
}

// srvPropagated sends a get with grpc-timeout 3S and reads the handler's
// deadline from the server's record.
func srvPropagated(g *srvT) {
	st, call := g.get(g.dial(), "acct-P", "3S")
	r := g.answer(st, "the get")
	h := g.settle(call)
	g.Field("code", r.Outcome())
	ok := h.deadlineMs != nil && *h.deadlineMs <= 3000 && *h.deadlineMs >= 2000
	if h.deadlineMs != nil {
		g.Volatile("deadline_ms", *h.deadlineMs)
	}
	g.Field("deadline_in_2000_3000ms", ok)
	g.observe(invSrvPropagated, holds(ok))
}

// srvDeadlineStops sends a debit whose handler waits 3s under a 300ms
// grpc-timeout; the client never resets it.
func srvDeadlineStops(g *srvT) {
	st, call := g.debit(g.dial(), "acct-D", debitSpec{amount: 10, timeout: "300m", sleepMs: 3000})
	r := g.answer(st, "the debit")
	h := g.awaitEnded(call, 3*time.Second+srvSettle)
	stopped := h.ended && h.execs == 0 && h.took <= 300*time.Millisecond+srvSettle
	// grpc-go's timer and the handler race at the deadline: the client
	// is told DEADLINE_EXCEEDED or RST_STREAM(CANCEL), and the handler's
	// context says deadline_exceeded or cancelled, run by run.
	g.Volatile("code", r.Outcome())
	g.Field("executions", h.execs)
	g.Field("handler_ended_by_1300ms", stopped)
	g.handlerTook(h)
	g.Volatile("ctx", h.ctx)
	g.observe(invSrvDeadline, holds(stopped))
	g.okIffExecuted(r, h)
}

// srvCancelStops sends a debit whose handler waits 3s, and resets it
// with RST_STREAM(CANCEL) once the server's record shows it started.
func srvCancelStops(g *srvT) {
	st, call := g.debit(g.dial(), "acct-C", debitSpec{amount: 10, timeout: "30S", sleepMs: 3000})
	if !waitFor(settleTimeout, func() bool { return g.handledOf(call).started }) {
		g.Fatalf("the debit's handler never started")
	}
	if err := st.Reset(http2.ErrCodeCancel); err != nil {
		g.Fatalf("reset: %v", err)
	}
	h := g.awaitEnded(call, 3*time.Second+srvSettle)
	stopped := h.ended && h.execs == 0 && h.took <= srvSettle
	g.Field("handler_ended_within_1s", stopped)
	g.handlerTook(h)
	g.Field("executions", h.execs)
	g.Field("ctx", h.ctx)
	g.observe(invSrvCancel, holds(stopped))
}

// srvBadMessage sends a debit whose message prefix sets the compressed
// flag, with no grpc-encoding, then a get on the same connection.
func srvBadMessage(g *srvT) {
	c := g.dial()
	st, call := g.debit(c, "acct-M", debitSpec{amount: 10, timeout: "10S", hold: true})
	msg := rawgrpc.DebitRequest("acct-M", 10, 0, 0)
	b := make([]byte, 5, 5+len(msg))
	b[0] = 1
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	if err := st.SendRaw(append(b, msg...), true); err != nil {
		g.Fatalf("send: %v", err)
	}
	r := g.answer(st, "the debit")
	h := g.settle(call)
	// The get on the same connection: a server that closed it, or never
	// answers, did not keep the bad message to its stream.
	got := "not sent: the connection was closed"
	if get, err := c.Open(rawgrpc.Request{Method: "Get", Call: g.callName("acct-M", 0), Timeout: "10S",
		Message: rawgrpc.GetRequest("acct-M", 0, 0)}); err == nil {
		got = "no answer"
		if gr, ok := g.answerWithin(get, settleTimeout); ok {
			got = gr.Outcome()
		}
	}
	g.Field("code", r.Outcome())
	g.Field("executions", h.execs)
	g.Field("get", got)
	g.observe(invSrvIsolated, holds(got == "OK"))
	g.okIffExecuted(r, h)
}

// srvBadFrame sends a WINDOW_UPDATE with a 0 increment on stream 0 (RFC
// 9113 §6.9: a connection error) on a connection that has served a get,
// then a get on another.
func srvBadFrame(g *srvT) {
	bad := g.dial()
	held, _ := g.get(bad, "acct-W", "10S")
	g.answer(held, "the first get")
	if err := bad.WriteFrame(http2.FrameWindowUpdate, 0, 0, []byte{0, 0, 0, 0}); err != nil {
		g.Fatalf("write: %v", err)
	}
	closed := false
	select {
	case <-bad.Closed():
		closed = true
	case <-time.After(settleTimeout):
	}
	st, _ := g.get(g.dial(), "acct-W", "10S")
	r := g.answer(st, "the other connection's get")
	goAway := "none"
	if ga := bad.GoAway(); ga != nil {
		goAway = ga.Code.String()
	}
	g.Field("bad_conn_closed", closed)
	g.Field("goaway", goAway)
	g.Field("get", r.Outcome())
	g.observe(invSrvIsolated, holds(r.Outcome() == "OK"))
}

// srvOversize sends a debit whose message prefix announces 64 MiB, then
// 1 KiB of it, and waits for the server's answer with the stream open.
func srvOversize(g *srvT) {
	c := g.dial()
	st, call := g.debit(c, "acct-O", debitSpec{amount: 10, timeout: "30S", hold: true})
	b := make([]byte, 5+1024)
	binary.BigEndian.PutUint32(b[1:], 64<<20)
	if err := st.SendRaw(b, false); err != nil {
		g.Fatalf("send: %v", err)
	}
	r, refused := g.answerWithin(st, 2*time.Second)
	h := g.handledOf(call)
	if !refused {
		st.Reset(http2.ErrCodeCancel)
	}
	g.Field("refused_within_2s", refused)
	g.Field("code", r.Outcome())
	g.Field("executions", h.execs)
	g.observe(invSrvOversize, holds(refused && h.execs == 0 && r.Outcome() != "OK"))
}
