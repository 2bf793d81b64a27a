package grpc

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/http2"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/cases/judge"
	"github.com/rpcbench/rpcbench/internal/rawgrpc"
	"github.com/rpcbench/rpcbench/internal/scenario"
)

// srvScenarios are the grpcserver scenarios.
func srvScenarios() []judge.ServerScenario {
	expired := []string{judge.InvSrvExpired, judge.InvSrvOKIffExec}
	told := []string{judge.InvSrvOKIffExec}
	return []judge.ServerScenario{
		{Name: "grpcserver_timeout_0n", Doc: "100 keyless debits, one at a time, with grpc-timeout 0n, a deadline already past: the server must execute none, and each answer must say whether its debit ran", Run: srvTimeout("0n", true, srvTries), Invs: expired},
		{Name: "grpcserver_timeout_1n", Doc: "100 keyless debits, one at a time, with grpc-timeout 1n, past before the server can read them: none may execute, and each answer must say whether its debit ran", Run: srvTimeout("1n", true, srvTries), Invs: expired},
		{Name: "grpcserver_timeout_1u", Doc: "500 keyless debits, one at a time, with grpc-timeout 1u, a deadline still ahead when the server reads them: how many execute is the machine's race, recorded; each answer must say whether its debit ran", Run: srvTimeout("1u", false, srvTries1u), Invs: told},
		{Name: "grpcserver_timeout_100u", Doc: "500 keyless debits, one at a time, with grpc-timeout 100u, a deadline still ahead when the server reads them: how many execute is the machine's race, recorded; each answer must say whether its debit ran", Run: srvTimeout("100u", false, srvTries100u), Invs: told},
		{Name: "grpcserver_timeout_1m", Doc: "2000 keyless debits, 8 at a time, with grpc-timeout 1m, a deadline still ahead when the server reads them: how many execute is the machine's race, recorded; each answer must say whether its debit ran", Run: srvTimeout("1m", false, srvTries1m), Invs: told},
		{Name: "grpcserver_timeout_597h", Doc: "a keyless debit with grpc-timeout 597H, 8 digits as the spec allows: a deadline 25 days away is not one already past; it executes, OK", Run: srvFarDeadline, Invs: []string{judge.InvSrvOKIffExec, judge.InvSrvPropagated}},
		{Name: "grpcserver_body_after_deadline", Doc: "a keyless debit's HEADERS carry grpc-timeout 100m and its body comes 300ms later, after the deadline: the server must not execute it", Run: srvBodyAfterDeadline, Invs: expired},
		{Name: "grpcserver_deadline_propagated", Doc: "a get with grpc-timeout 3S: the handler's deadline is the 3s less what reaching it took, at most 1s", Run: srvPropagated, Invs: []string{judge.InvSrvPropagated}},
		{Name: "grpcserver_work_past_deadline", Doc: "a keyless debit under grpc-timeout 100m whose handler works 300ms without looking at its context, then executes: is the client told that it ran?", Run: srvWorkPastDeadline, Invs: []string{judge.InvSrvOKIffExec}},
		{Name: "grpcserver_deadline_stops_handler", Doc: "a keyless debit whose handler waits 3s under grpc-timeout 300m, the client never resetting it: the handler's wait ends at the deadline, unexecuted; what the client is told is recorded", Run: srvDeadlineStops, Invs: []string{judge.InvSrvDeadline, judge.InvSrvOKIffExec}},
		{Name: "grpcserver_cancel_stops_handler", Doc: "a keyless debit whose handler waits 3s is reset with RST_STREAM(CANCEL) once it started: the handler's wait ends within 1s and it never executes", Run: srvCancelStops, Invs: []string{judge.InvSrvCancel}},
		{Name: "grpcserver_bad_message", Doc: "a debit whose message claims compression the request never declared: that stream fails unexecuted, and a get on the same connection is served", Run: srvBadMessage, Invs: []string{judge.InvSrvIsolated, judge.InvSrvOKIffExec}},
		{Name: "grpcserver_bad_frame", Doc: "a WINDOW_UPDATE of 0 on a connection that served a get, a connection error: a get on another connection is served", Run: srvBadFrame, Invs: []string{judge.InvSrvIsolated}},
		{Name: "grpcserver_oversize_message", Doc: "a debit's message prefix announces 64 MiB, and 1 KiB follows: the server refuses it without waiting for the rest, unexecuted", Run: srvOversize, Invs: []string{judge.InvSrvOversize}},
	}
}

// srvSettle bounds how long a handler may take to end once its wait was
// cut, on a loaded 2-core machine.
const srvSettle = time.Second

// srvTries is how many debits a timeout scenario sends, one at a time,
// each a trial of its invariants, tallied (judge.ServerT.Tally): a
// server that runs expired work only when its threads race the deadline
// (grpcio's C-core at 1n) shows it in every run, not in some.
//
// srv_expired_not_executed is judged at 0n and 1n only (and by
// grpcserver_body_after_deadline): there the deadline is past before any
// server can read the request. A grpc-timeout is a duration the server
// counts from when it reads the HEADERS, so from 1u up the deadline is
// still ahead then, and whether the handler executes before the server
// sees it pass is the machine's race: executing is then no violation.
// What every value must keep is srv_ok_iff_executed: each answer says
// what happened to its own debit, OK iff the server's record shows it
// executed once. grpc-go and grpcio break it in the same race, each
// trial's own: an executed debit answered RST_STREAM(CANCEL) or
// DEADLINE_EXCEEDED.
const srvTries = 100

// srvTries100u and srvTries1m are how many debits the 100u and 1m
// scenarios send: there grpc-go's violation is rarer, and a run of 100
// shows it in some runs only. In 8 runs of 100 (4 under stress-ng --cpu
// 2) grpc-go answered RST_STREAM(CANCEL) to 1 to 11 executed debits at
// 100u, and to 1 at 1m in 2 runs. Of 500 at 100u it did to 21 to 68, in
// every run. At 1m only a stall of its process between an exec and the
// answer lets the timer win: of 2000, 1 to 8 debits, in clusters, in 4
// of 15 idle runs and 7 of 9 under stress; a race of its own that no
// count of trials shows in every run, pinned sometimes.
//
// srvTries1u is 500 too: grpcio's executed debits answered
// DEADLINE_EXCEEDED at 1u were as few as 3 of 100 in a run, a margin a
// plain pin should not rest on.
const (
	srvTries1u   = 500
	srvTries100u = 500
	srvTries1m   = 2000
)

// srvTimeout sends tries keyless debits, srvWave at a time, under
// grpc-timeout timeout, and tallies srv_ok_iff_executed over them. When
// expired, the deadline is past before any server can read the request,
// and it tallies srv_expired_not_executed too: each debit executed
// violates it; otherwise how many executed is recorded as the race it
// is.
func srvTimeout(timeout string, expired bool, tries int) func(g *judge.ServerT) {
	return func(g *judge.ServerT) {
		c := g.Dial()
		calls := make([]string, tries)
		answers := make([]rawgrpc.Result, tries)
		wave := srvWave(timeout)
		for i := 0; i < tries; i += wave {
			sts := make([]*rawgrpc.Stream, min(wave, tries-i))
			for j := range sts {
				sts[j], calls[i+j] = g.Debit(c, srvTimeoutAccount(i+j), judge.DebitSpec{Amount: 1, Timeout: timeout})
			}
			for j, st := range sts {
				answers[i+j] = g.Answer(st, "a debit")
			}
		}
		g.Sync()
		execs, executedNotOK := 0, 0
		var told, notRun [2]int // by trial: [held, violated]
		codes := map[string]int{}
		hs := g.HandledOfAll(calls)
		for i, call := range calls {
			h := hs[call]
			if h.Started && !h.Ended {
				h = g.AwaitEnded(call, scenario.SettleTimeout)
			}
			r := answers[i]
			execs += h.Execs
			codes[r.Outcome()]++
			ok := r.HasCode && r.Code == 0
			told[trial(ok == (h.Execs == 1) && h.Execs <= 1)]++
			notRun[trial(h.Execs == 0)]++
			if h.Execs > 0 && !ok {
				executedNotOK++
			}
		}
		g.Volatile("codes", countsText(codes))
		g.Volatile("executions", execs)
		g.Volatile("executed_not_ok", executedNotOK)
		if expired {
			g.Tally(judge.InvSrvExpired, notRun[0], notRun[1])
		}
		g.Tally(judge.InvSrvOKIffExec, told[0], told[1])
	}
}

// srvWave is how many debits a timeout scenario has in flight at once:
// one, but at 1m eight, a server with work in hand. One at a time,
// grpc-go's timer beat an executed debit's answer only when its process
// stalled, in some runs and not others; eight at a time it does in
// every run measured (1 to 6 of 2000, 4 of 4 runs), while
// rpcserver, grpc-js and connect-go still answer every debit truly.
func srvWave(timeout string) int {
	if timeout == "1m" {
		return 8
	}
	return 1
}

// srvTimeoutAccount is the account of a timeout scenario's i'th debit:
// acct-T for the first srvDebitsPerAccount, then acct-T1, acct-T2, ...,
// so that no account runs out of its opening balance, which would turn
// the debits that follow into refusals.
func srvTimeoutAccount(i int) string {
	if k := i / srvDebitsPerAccount; k > 0 {
		return fmt.Sprintf("acct-T%d", k)
	}
	return "acct-T"
}

// srvDebitsPerAccount is how many debits of 1 a timeout scenario makes on
// one account, half its opening balance.
const srvDebitsPerAccount = bank.DefaultBalance / 2

// trial is the index of a trial's outcome in a [held, violated] tally.
func trial(held bool) int {
	if held {
		return 0
	}
	return 1
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
func srvWorkPastDeadline(g *judge.ServerT) {
	st, call := g.Debit(g.Dial(), "acct-K", judge.DebitSpec{Amount: 10, Timeout: "100m", WorkMs: 300})
	r := g.Answer(st, "the debit")
	h := g.AwaitEnded(call, 300*time.Millisecond+scenario.SettleTimeout)
	if !h.Ended {
		g.Fatalf("the debit's handler never ended")
	}
	g.Field("code", r.Outcome())
	g.Field("executions", h.Execs)
	g.OkIffExecuted(r, h)
}

// srvFarDeadline sends a debit whose grpc-timeout is 597 hours, within
// the 8 digits the spec allows: a server must neither take it for a
// deadline already past nor refuse it.
func srvFarDeadline(g *judge.ServerT) {
	st, call := g.Debit(g.Dial(), "acct-F", judge.DebitSpec{Amount: 10, Timeout: "597H"})
	r := g.Answer(st, "the debit")
	h := g.Settle(call)
	g.Field("code", r.Outcome())
	g.Field("executions", h.Execs)
	g.OkIffExecuted(r, h)
	// Past 2^31 ms a 32-bit millisecond deadline wraps: the handler then
	// sees one already past, or a short one.
	ok := h.DeadlineMs != nil && *h.DeadlineMs > float64(596*time.Hour/time.Millisecond)
	g.Field("deadline_over_596h", ok)
	g.Observe(judge.InvSrvPropagated, judge.Holds(ok && r.HasCode && r.Code == 0))
}

// srvBodyAfterDeadline sends a debit's HEADERS with grpc-timeout 100m,
// and its body 300ms later.
func srvBodyAfterDeadline(g *judge.ServerT) {
	c := g.Dial()
	st, call := g.Debit(c, "acct-B", judge.DebitSpec{Amount: 10, Timeout: "100m", Hold: true})
	// The wait is the scenario: the deadline must pass before the body
	// is sent.
	select {
	case <-time.After(300 * time.Millisecond):
	case <-st.Done():
	}
	st.Send(rawgrpc.DebitRequest("acct-B", 10, 0, 0), true) // a server that ended the stream may refuse it
	r := g.Answer(st, "the debit")
	h := g.Settle(call)
	// grpc-go answers DEADLINE_EXCEEDED or resets the stream, as its
	// timer and the late body race.
	g.Volatile("code", r.Outcome())
	g.Field("executions", h.Execs)
	g.Observe(judge.InvSrvExpired, judge.Holds(h.Execs == 0))
	g.OkIffExecuted(r, h)
}

// srvPropagated sends a get with grpc-timeout 3S and reads the handler's
// deadline from the server's record.
func srvPropagated(g *judge.ServerT) {
	st, call := g.Get(g.Dial(), "acct-P", "3S")
	r := g.Answer(st, "the get")
	h := g.Settle(call)
	g.Field("code", r.Outcome())
	ok := h.DeadlineMs != nil && *h.DeadlineMs <= 3000 && *h.DeadlineMs >= 2000
	if h.DeadlineMs != nil {
		g.Volatile("deadline_ms", *h.DeadlineMs)
	}
	g.Field("deadline_in_2000_3000ms", ok)
	g.Observe(judge.InvSrvPropagated, judge.Holds(ok))
}

// srvDeadlineStops sends a debit whose handler waits 3s under a 300ms
// grpc-timeout; the client never resets it.
func srvDeadlineStops(g *judge.ServerT) {
	st, call := g.Debit(g.Dial(), "acct-D", judge.DebitSpec{Amount: 10, Timeout: "300m", SleepMs: 3000})
	r := g.Answer(st, "the debit")
	h := g.AwaitEnded(call, 3*time.Second+srvSettle)
	stopped := h.Ended && h.Execs == 0 && h.Took <= 300*time.Millisecond+srvSettle
	// grpc-go's timer and the handler race at the deadline: the client
	// is told DEADLINE_EXCEEDED or RST_STREAM(CANCEL), and the handler's
	// context says deadline_exceeded or cancelled, run by run.
	g.Volatile("code", r.Outcome())
	g.Field("executions", h.Execs)
	g.Field("handler_ended_by_1300ms", stopped)
	g.HandlerTook(h)
	g.Volatile("ctx", h.Ctx)
	g.Observe(judge.InvSrvDeadline, judge.Holds(stopped))
	g.OkIffExecuted(r, h)
}

// srvCancelStops sends a debit whose handler waits 3s, and resets it
// with RST_STREAM(CANCEL) once the server's record shows it started.
func srvCancelStops(g *judge.ServerT) {
	st, call := g.Debit(g.Dial(), "acct-C", judge.DebitSpec{Amount: 10, Timeout: "30S", SleepMs: 3000})
	if !scenario.WaitFor(scenario.SettleTimeout, func() bool { return g.HandledOf(call).Started }) {
		g.Fatalf("the debit's handler never started")
	}
	if err := st.Reset(http2.ErrCodeCancel); err != nil {
		g.Fatalf("reset: %v", err)
	}
	h := g.AwaitEnded(call, 3*time.Second+srvSettle)
	stopped := h.Ended && h.Execs == 0 && h.Took <= srvSettle
	g.Field("handler_ended_within_1s", stopped)
	g.HandlerTook(h)
	g.Field("executions", h.Execs)
	g.Field("ctx", h.Ctx)
	g.Observe(judge.InvSrvCancel, judge.Holds(stopped))
}

// srvBadMessage sends a debit whose message prefix sets the compressed
// flag, with no grpc-encoding, then a get on the same connection.
func srvBadMessage(g *judge.ServerT) {
	c := g.Dial()
	st, call := g.Debit(c, "acct-M", judge.DebitSpec{Amount: 10, Timeout: "10S", Hold: true})
	msg := rawgrpc.DebitRequest("acct-M", 10, 0, 0)
	b := make([]byte, 5, 5+len(msg))
	b[0] = 1
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	if err := st.SendRaw(append(b, msg...), true); err != nil {
		g.Fatalf("send: %v", err)
	}
	r := g.Answer(st, "the debit")
	h := g.Settle(call)
	// The get on the same connection: a server that closed it, or never
	// answers, did not keep the bad message to its stream.
	got := "not sent: the connection was closed"
	if get, err := c.Open(rawgrpc.Request{Method: "Get", Call: g.CallName("acct-M", 0), Timeout: "10S",
		Message: rawgrpc.GetRequest("acct-M", 0, 0)}); err == nil {
		got = "no answer"
		if gr, ok := g.AnswerWithin(get, scenario.SettleTimeout); ok {
			got = gr.Outcome()
		}
	}
	g.Field("code", r.Outcome())
	g.Field("executions", h.Execs)
	g.Field("get", got)
	g.Observe(judge.InvSrvIsolated, judge.Holds(got == "OK"))
	g.OkIffExecuted(r, h)
}

// srvBadFrame sends a WINDOW_UPDATE with a 0 increment on stream 0 (RFC
// 9113 §6.9: a connection error) on a connection that has served a get,
// then a get on another.
func srvBadFrame(g *judge.ServerT) {
	bad := g.Dial()
	held, _ := g.Get(bad, "acct-W", "10S")
	g.Answer(held, "the first get")
	if err := bad.WriteFrame(http2.FrameWindowUpdate, 0, 0, []byte{0, 0, 0, 0}); err != nil {
		g.Fatalf("write: %v", err)
	}
	closed := false
	select {
	case <-bad.Closed():
		closed = true
	case <-time.After(scenario.SettleTimeout):
	}
	st, _ := g.Get(g.Dial(), "acct-W", "10S")
	r := g.Answer(st, "the other connection's get")
	goAway := "none"
	if ga := bad.GoAway(); ga != nil {
		goAway = ga.Code.String()
	}
	g.Field("bad_conn_closed", closed)
	g.Field("goaway", goAway)
	g.Field("get", r.Outcome())
	g.Observe(judge.InvSrvIsolated, judge.Holds(r.Outcome() == "OK"))
}

// srvOversize sends a debit whose message prefix announces 64 MiB, then
// 1 KiB of it, and waits for the server's answer with the stream open.
func srvOversize(g *judge.ServerT) {
	c := g.Dial()
	st, call := g.Debit(c, "acct-O", judge.DebitSpec{Amount: 10, Timeout: "30S", Hold: true})
	b := make([]byte, 5+1024)
	binary.BigEndian.PutUint32(b[1:], 64<<20)
	if err := st.SendRaw(b, false); err != nil {
		g.Fatalf("send: %v", err)
	}
	r, refused := g.AnswerWithin(st, 2*time.Second)
	h := g.HandledOf(call)
	if !refused {
		st.Reset(http2.ErrCodeCancel)
	}
	g.Field("refused_within_2s", refused)
	g.Field("code", r.Outcome())
	g.Field("executions", h.Execs)
	g.Observe(judge.InvSrvOversize, judge.Holds(refused && h.Execs == 0 && r.Outcome() != "OK"))
}
