package target

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/http2"

	"github.com/rpcbench/rpcbench/internal/cases/judge"
	"github.com/rpcbench/rpcbench/internal/outcome"
	"github.com/rpcbench/rpcbench/internal/rawgrpc"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/scenario"
)

// Config is the configuration field of target's lines: "server", as
// the server section's columns have it (scorecard.ConfigServer), so that
// a service's cells read as a server's, beside the shipped stacks'.
const Config = "server"

// row is one check of a running service: the server section's scenario
// it answers, and what it sends.
type row struct {
	name, doc string
	// scenario is the server section's scenario whose cells it fills.
	scenario string
	invs     []string
	run      func(r *rowT)
}

// trials are how many calls a timeout row makes by default (Service.Trials
// sets another count), one at a time, each judged by the oracle's reads
// around it.
var trials = map[string]int{"0n": 50, "1n": 50, "1u": 100, "100u": 100, "1m": 100}

func rows() []row {
	expired := []string{judge.InvSrvExpired, judge.InvSrvOKIffExec}
	told := []string{judge.InvSrvOKIffExec}
	return append([]row{
		{"target_timeout_0n", "calls with grpc-timeout 0n, a deadline already past, one at a time: none may execute, and each answer must say whether its call ran", "grpcserver_timeout_0n", expired, timeoutRow("0n", true)},
		{"target_timeout_1n", "calls with grpc-timeout 1n, past before the service can read them: none may execute, and each answer must say whether its call ran", "grpcserver_timeout_1n", expired, timeoutRow("1n", true)},
		{"target_timeout_1u", "calls with grpc-timeout 1u: how many execute is the machine's race; each answer must say whether its call ran", "grpcserver_timeout_1u", told, timeoutRow("1u", false)},
		{"target_timeout_100u", "calls with grpc-timeout 100u: how many execute is the machine's race; each answer must say whether its call ran", "grpcserver_timeout_100u", told, timeoutRow("100u", false)},
		{"target_timeout_1m", "calls with grpc-timeout 1m: how many execute is the machine's race; each answer must say whether its call ran", "grpcserver_timeout_1m", told, timeoutRow("1m", false)},
		{"target_body_after_deadline", "a call's HEADERS carry grpc-timeout 100m and its body comes 300ms later, after the deadline: the service must not execute it", "grpcserver_body_after_deadline", expired, bodyAfterDeadline},
		{"target_deadline_stops_handler", "a slow call (--slow-data) under a grpc-timeout of a quarter of --slow-for, never reset: its handler must stop at the deadline, unexecuted, and its answer say so", "grpcserver_deadline_stops_handler", []string{judge.InvSrvDeadline, judge.InvSrvOKIffExec}, deadlineStops},
		{"target_cancel_stops_handler", "a slow call (--slow-data) reset with RST_STREAM(CANCEL) a quarter of --slow-for after it was sent, while its handler runs: it must never execute", "grpcserver_cancel_stops_handler", []string{judge.InvSrvCancel}, cancelStops},
		{"target_bad_message", "a call whose message claims compression the request never declared: that stream fails unexecuted, and a call on the same connection is served", "grpcserver_bad_message", []string{judge.InvSrvIsolated, judge.InvSrvOKIffExec}, badMessage},
		{"target_bad_frame", "a WINDOW_UPDATE of 0 on a connection that served a call, a connection error: a call on another connection is served", "grpcserver_bad_frame", []string{judge.InvSrvIsolated}, badFrame},
		{"target_oversize_message", "a call's message prefix announces 64 MiB, and 1 KiB follows: the service refuses it without waiting for the rest, unexecuted", "grpcserver_oversize_message", []string{judge.InvSrvOversize}, oversize},
		{"target_streams_past_limit", "as many calls on one connection as the service's SETTINGS_MAX_CONCURRENT_STREAMS allows, their bodies held back, and one whole call more: refused (REFUSED_STREAM), that call must not execute; the held ones are then sent and served", "target_streams_past_limit", []string{InvRefusedNotExecuted}, streamsPastLimit},
	}, lifecycleRows()...)
}

// Names lists the rows, in run order.
func Names() []string {
	var out []string
	for _, r := range rows() {
		out = append(out, r.name)
	}
	return out
}

// Cases are the rows as scenarios judging s.
func Cases(s *Service) []scenario.Case {
	var out []scenario.Case
	for _, r := range rows() {
		out = append(out, scenario.Case{
			Name: r.name, Group: Group, Doc: r.doc, NoServer: true,
			Column: scenario.Column{Scenario: r.name, Stack: s.Name, Config: Config},
			Body: func(t *scenario.T) {
				rt := &rowT{T: t, s: s, row: r}
				t.Field("scenario", r.scenario)
				t.Field("stack", s.Name)
				t.Field("config", Config)
				r.run(rt)
				rt.finish()
			},
		})
	}
	return out
}

// rowT is one row's run.
type rowT struct {
	*scenario.T
	s   *Service
	row row
	// observed are the invariants observed so far.
	observed map[string]outcome.Outcome
	conns    []*rawgrpc.Conn
}

// dial opens a connection to the service, closed when the row ends; a
// service that cannot be reached makes the row an ERROR.
func (r *rowT) dial() *rawgrpc.Conn {
	c, err := r.s.dial(r.Ctx)
	if err != nil {
		r.Errored("%v", err)
	}
	if len(r.conns) == 0 {
		r.Cleanup(func() {
			for _, c := range r.conns {
				c.Close()
			}
		})
	}
	r.conns = append(r.conns, c)
	return c
}

// observe records inv's outcome: a violation fails the row, naming it.
func (r *rowT) observe(inv string, o outcome.Outcome, why string) {
	if r.observed == nil {
		r.observed = map[string]outcome.Outcome{}
	}
	r.observed[inv] = o
	r.Fields = append(r.Fields, report.Field{Key: inv, Value: o.String(), Kind: report.Outcome})
	if o == outcome.Violated {
		r.Check(false, "%s violated: %s", inv, why)
	}
}

// unknown records inv as not judged: its judgement needs executions and
// no oracle counts them.
func (r *rowT) unknown(inv string) { r.observe(inv, outcome.Unsupported, "") }

// finish makes a row whose every invariant went unjudged n/a.
func (r *rowT) finish() {
	if r.NA != "" {
		return
	}
	for _, inv := range r.row.invs {
		if o, ok := r.observed[inv]; !ok || o != outcome.Unsupported {
			return
		}
	}
	r.NA = "no execution oracle: executions are unknown (give --observe)"
}

// oracleErr makes an oracle's failure the row's ERROR: what it counted
// cannot be trusted.
func (r *rowT) oracleErr(err error) {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		r.Fatalf("%v", err)
	}
	r.Errored("%v", err)
}

// counter attributes the oracle's moves to trials, reading before and
// after each on a connection of its own. A move between one trial's read
// after and the next one's read before is an execution that came later
// than the settle time: it is the trial's before (the one whose handler
// may still have been running), and counted there.
type counter struct {
	r     *rowT
	c     *rawgrpc.Conn
	last  int64
	execs []int
	late  int
}

func (r *rowT) counter() *counter {
	if r.s.Oracle == nil {
		return nil
	}
	k := &counter{r: r, c: r.dial()}
	v, err := r.s.Oracle.Read(r.Ctx, k.c)
	if err != nil {
		r.oracleErr(err)
	}
	k.last = v
	return k
}

// before reads the field before a trial.
func (k *counter) before() {
	if k == nil {
		return
	}
	v, err := k.r.s.Oracle.Read(k.r.Ctx, k.c)
	if err != nil {
		k.r.oracleErr(err)
	}
	if v != k.last {
		n, err := k.r.s.Oracle.executions(v - k.last)
		if err != nil {
			k.r.oracleErr(err)
		}
		if len(k.execs) == 0 {
			k.r.oracleErr(fmt.Errorf("%w: .%s moved by %d before any call was sent: something else changes it", ErrOracle, k.r.s.Oracle.Field, v-k.last))
		}
		k.execs[len(k.execs)-1] += n
		k.late += n
	}
	k.last = v
}

// after reads the field once the trial's answer came and Settle passed,
// and returns the trial's executions so far.
func (k *counter) after() int {
	if k == nil {
		return 0
	}
	if err := sleep(k.r.Ctx, k.r.s.Settle); err != nil {
		k.r.Fatalf("%v", err)
	}
	v, err := k.r.s.Oracle.Read(k.r.Ctx, k.c)
	if err != nil {
		k.r.oracleErr(err)
	}
	n, err := k.r.s.Oracle.executions(v - k.last)
	if err != nil {
		k.r.oracleErr(err)
	}
	k.last = v
	k.execs = append(k.execs, n)
	return n
}

// done waits LateWindow and reads once more; it returns every trial's
// executions.
func (k *counter) done() []int {
	if err := sleep(k.r.Ctx, max(k.r.s.LateWindow, k.r.s.Settle)); err != nil {
		k.r.Fatalf("%v", err)
	}
	k.before()
	if k.late > 0 {
		k.r.Volatile("executedAfterSettle", k.late)
	}
	return k.execs
}

// okIffExecuted observes srv_ok_iff_executed over trials: each answer OK
// iff its call executed once.
func (r *rowT) okIffExecuted(codes []string, execs []int) {
	bad := 0
	var first string
	for i, code := range codes {
		if (code == "OK") != (execs[i] == 1) || execs[i] > 1 {
			bad++
			if first == "" {
				first = fmt.Sprintf("call %d answered %s and executed %d times", i+1, code, execs[i])
			}
		}
	}
	r.Volatile("toldWrong", bad)
	r.observe(judge.InvSrvOKIffExec, judge.Holds(bad == 0), fmt.Sprintf("%d of %d answers did not say what happened to their call; the first: %s", bad, len(codes), first))
}

// tally is the answers' outcomes counted, for evidence.
func tally(codes []string) string {
	n := map[string]int{}
	for _, c := range codes {
		n[c]++
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(n)) {
		parts = append(parts, fmt.Sprintf("%s:%d", k, n[k]))
	}
	return strings.Join(parts, ",")
}

// answer waits for st's answer; a service that owes one and sends none
// within answerTimeout fails the row.
func (r *rowT) answer(st *rawgrpc.Stream, what string) rawgrpc.Result {
	res, err := r.s.wait(r.Ctx, st)
	if errors.Is(err, errNoAnswer) {
		r.Check(false, "%s: %v", what, err)
		return rawgrpc.Result{}
	}
	if err != nil {
		r.Fatalf("%s: %v", what, err)
	}
	return res
}

func outcomeOf(res rawgrpc.Result) string {
	if res.At.IsZero() {
		return "NO_ANSWER"
	}
	return res.Outcome()
}

// timeoutRow sends Trials[timeout] calls under grpc-timeout timeout, one
// at a time, each between two reads of the oracle.
func timeoutRow(timeout string, expired bool) func(r *rowT) {
	return func(r *rowT) {
		trials := trials[timeout]
		if r.s.Trials > 0 {
			trials = r.s.Trials
		}
		c := r.dial()
		k := r.counter()
		codes := make([]string, trials)
		for i := range trials {
			k.before()
			st, err := c.Open(rawgrpc.Request{Path: r.s.Method.Path, Timeout: timeout, Message: r.s.Request})
			if err != nil {
				r.Fatalf("call %d: %v", i+1, err)
			}
			codes[i] = outcomeOf(r.answer(st, fmt.Sprintf("call %d", i+1)))
			k.after()
		}
		r.Field("trials", trials)
		r.Volatile("codes", tally(codes))
		if k == nil {
			r.Field("executions", "unknown")
			if expired {
				r.unknown(judge.InvSrvExpired)
			}
			r.unknown(judge.InvSrvOKIffExec)
			return
		}
		execs := k.done()
		total := 0
		for _, n := range execs {
			total += n
		}
		if expired {
			r.Field("executions", total)
			r.observe(judge.InvSrvExpired, judge.Holds(total == 0), fmt.Sprintf("%d of %d calls whose deadline had passed executed", total, trials))
		} else {
			r.Volatile("executions", total)
		}
		r.okIffExecuted(codes, execs)
	}
}

// bodyAfterDeadline sends HEADERS with grpc-timeout 100m, then the body
// 300ms later.
func bodyAfterDeadline(r *rowT) {
	c := r.dial()
	k := r.counter()
	k.before()
	st, err := c.Open(rawgrpc.Request{Path: r.s.Method.Path, Timeout: "100m", Hold: true})
	if err != nil {
		r.Fatalf("open: %v", err)
	}
	// The wait is the row: the deadline must pass before the body is
	// sent.
	select {
	case <-time.After(300 * time.Millisecond):
	case <-st.Done():
	case <-r.Ctx.Done():
		r.Fatalf("%v", r.Ctx.Err())
	}
	st.Send(r.s.Request, true) // a service that ended the stream may refuse it
	code := outcomeOf(r.answer(st, "the call"))
	k.after()
	r.Volatile("code", code)
	if k == nil {
		r.Field("executions", "unknown")
		r.unknown(judge.InvSrvExpired)
		r.unknown(judge.InvSrvOKIffExec)
		return
	}
	execs := k.done()
	r.Field("executions", execs[0])
	r.observe(judge.InvSrvExpired, judge.Holds(execs[0] == 0), "the call executed although its body came after its deadline")
	r.okIffExecuted([]string{code}, execs)
}

// served sends one plain call on c, the observe read when there is an
// oracle (it changes nothing), else the judged call, and returns its
// outcome: "OK" when served.
func (r *rowT) served(c *rawgrpc.Conn) string {
	path, msg := r.s.Method.Path, r.s.Request
	if o := r.s.Oracle; o != nil {
		path, msg = o.Method.Path, o.Request
	}
	st, err := c.Open(rawgrpc.Request{Path: path, Timeout: "10S", Message: msg})
	if err != nil {
		return "not sent: the connection was closed"
	}
	res, err := r.s.wait(r.Ctx, st)
	if err != nil {
		return "no answer"
	}
	return res.Outcome()
}

// badMessage sends the call's message with the compressed flag set and
// no grpc-encoding, then a plain call on the same connection.
func badMessage(r *rowT) {
	c := r.dial()
	k := r.counter()
	k.before()
	st, err := c.Open(rawgrpc.Request{Path: r.s.Method.Path, Timeout: "10S", Hold: true})
	if err != nil {
		r.Fatalf("open: %v", err)
	}
	b := make([]byte, 5, 5+len(r.s.Request))
	b[0] = 1
	binary.BigEndian.PutUint32(b[1:], uint32(len(r.s.Request)))
	if err := st.SendRaw(append(b, r.s.Request...), true); err != nil {
		r.Fatalf("send: %v", err)
	}
	code := outcomeOf(r.answer(st, "the call"))
	k.after()
	var execs []int
	if k != nil {
		execs = k.done()
	}
	// Read the oracle before the next call: it may be the judged one.
	got := r.served(c)
	r.Field("code", code)
	r.Field("next", got)
	r.observe(judge.InvSrvIsolated, judge.Holds(got == "OK"), "a call on the connection of the malformed message was not served: "+got)
	if k == nil {
		r.Field("executions", "unknown")
		r.unknown(judge.InvSrvOKIffExec)
		return
	}
	r.Field("executions", execs[0])
	r.okIffExecuted([]string{code}, execs)
}

// badFrame sends a WINDOW_UPDATE with a 0 increment on stream 0 (RFC
// 9113 §6.9: a connection error) on a connection that served a call,
// then a call on another.
func badFrame(r *rowT) {
	bad := r.dial()
	if first := r.served(bad); first != "OK" {
		r.Errored("the first call, before any malformed frame, answered %s: the service does not serve the call given", first)
	}
	if err := bad.WriteFrame(http2.FrameWindowUpdate, 0, 0, []byte{0, 0, 0, 0}); err != nil {
		r.Fatalf("write: %v", err)
	}
	closed := false
	select {
	case <-bad.Closed():
		closed = true
	case <-time.After(scenario.SettleTimeout):
	case <-r.Ctx.Done():
		r.Fatalf("%v", r.Ctx.Err())
	}
	got := r.served(r.dial())
	goAway := "none"
	if ga := bad.GoAway(); ga != nil {
		goAway = ga.Code.String()
	}
	r.Field("bad_conn_closed", closed)
	r.Field("goaway", goAway)
	r.Field("next", got)
	r.observe(judge.InvSrvIsolated, judge.Holds(got == "OK"), "a call on another connection was not served after a malformed frame: "+got)
}

// oversize sends a message prefix announcing 64 MiB, then 1 KiB of it,
// and waits for the answer with the stream open.
func oversize(r *rowT) {
	c := r.dial()
	k := r.counter()
	k.before()
	st, err := c.Open(rawgrpc.Request{Path: r.s.Method.Path, Timeout: "30S", Hold: true})
	if err != nil {
		r.Fatalf("open: %v", err)
	}
	b := make([]byte, 5+1024)
	binary.BigEndian.PutUint32(b[1:], 64<<20)
	if err := st.SendRaw(b, false); err != nil {
		r.Fatalf("send: %v", err)
	}
	refused := false
	var res rawgrpc.Result
	select {
	case <-st.Done():
		refused = true
		res, _ = st.Wait(r.Ctx)
	case <-time.After(2 * time.Second):
		st.Reset(http2.ErrCodeCancel)
	case <-r.Ctx.Done():
		r.Fatalf("%v", r.Ctx.Err())
	}
	k.after()
	code := outcomeOf(res)
	if !refused {
		code = "NO_ANSWER"
	}
	r.Field("refused_within_2s", refused)
	r.Field("code", code)
	answered := refused && code != "OK"
	if k == nil {
		r.Field("executions", "unknown")
		if !answered {
			r.observe(judge.InvSrvOversize, outcome.Violated, "the service answered "+code+" to a message it cannot have read whole")
			return
		}
		r.unknown(judge.InvSrvOversize)
		return
	}
	execs := k.done()
	r.Field("executions", execs[0])
	r.observe(judge.InvSrvOversize, judge.Holds(answered && execs[0] == 0), fmt.Sprintf("answered %s within 2s: %v, executed %d times", code, refused, execs[0]))
}

// noSlow is why the slow rows are n/a without a slow request.
const noSlow = "no slow request: give --slow-data and --slow-for, a request whose handler takes that long"

// slow opens the slow call under timeout; false, with the row's
// invariants n/a, when there is no slow request or no oracle.
func (r *rowT) slow(timeout string, c *rawgrpc.Conn) (*rawgrpc.Stream, time.Time, bool) {
	switch {
	case r.s.Slow == nil:
		r.Field("executions", "unknown")
		for _, inv := range r.row.invs {
			r.unknown(inv)
		}
		r.NA = noSlow
		return nil, time.Time{}, false
	case r.s.Oracle == nil:
		r.Field("executions", "unknown")
		for _, inv := range r.row.invs {
			r.unknown(inv)
		}
		return nil, time.Time{}, false
	}
	st, err := c.Open(rawgrpc.Request{Path: r.s.Method.Path, Timeout: timeout, Message: r.s.Slow})
	if err != nil {
		r.Fatalf("open: %v", err)
	}
	return st, time.Now(), true
}

// outlive waits until the slow handler would have executed, SlowFor
// after sent, and Settle more.
func (r *rowT) outlive(sent time.Time) {
	if err := sleep(r.Ctx, time.Until(sent.Add(r.s.SlowFor+r.s.Settle))); err != nil {
		r.Fatalf("%v", err)
	}
}

// quarter is a quarter of the slow handler's time: the slow rows'
// deadline, and when the cancel row resets its call. Well before the
// handler executes, and long enough after the call was sent for the
// handler to have started on a loaded machine, which a service's log
// would show and an oracle cannot.
func (r *rowT) quarter() time.Duration { return r.s.SlowFor / 4 }

// deadlineStops sends the slow call under a grpc-timeout of a quarter
// of its handler's time.
func deadlineStops(r *rowT) {
	c := r.dial()
	k := r.counter()
	k.before()
	timeout := fmt.Sprintf("%dm", max(r.quarter().Milliseconds(), 1))
	st, sent, ok := r.slow(timeout, c)
	if !ok {
		return
	}
	r.Field("timeout", timeout)
	code := outcomeOf(r.answer(st, "the slow call"))
	r.outlive(sent)
	k.after()
	execs := k.done()
	r.Volatile("code", code)
	r.Field("executions", execs[0])
	r.observe(judge.InvSrvDeadline, judge.Holds(execs[0] == 0), fmt.Sprintf("the slow call executed %d times although its %s deadline passed while its handler ran", execs[0], timeout))
	r.okIffExecuted([]string{code}, execs)
}

// cancelStops resets the slow call while its handler runs.
func cancelStops(r *rowT) {
	c := r.dial()
	k := r.counter()
	k.before()
	st, sent, ok := r.slow("30S", c)
	if !ok {
		return
	}
	select {
	case <-st.Done():
		res, _ := st.Wait(r.Ctx)
		r.Errored("the slow call ended %s before it was reset: --slow-for says its handler takes %v", outcomeOf(res), r.s.SlowFor)
	case <-time.After(r.quarter()):
	case <-r.Ctx.Done():
		r.Fatalf("%v", r.Ctx.Err())
	}
	st.Reset(http2.ErrCodeCancel)
	r.Field("resetAfter", r.quarter())
	r.outlive(sent)
	k.after()
	execs := k.done()
	r.Field("executions", execs[0])
	r.observe(judge.InvSrvCancel, judge.Holds(execs[0] == 0), fmt.Sprintf("the slow call executed %d times after it was reset", execs[0]))
}
