package grpc

import (
	"github.com/rpcbench/rpcbench/internal/cases/judge"
	"github.com/rpcbench/rpcbench/internal/cut"
	"github.com/rpcbench/rpcbench/internal/scenario"
)

// Group holds the scenarios the judge runs against each gRPC stack under
// test, client and server.
const Group = "grpc"

// Cases is every grpc scenario in every client column, then every
// grpcserver scenario in every server column (package judge spreads
// them), in run order.
func Cases() []scenario.Case { return grpcSuite().Cases() }

// grpcSuite is the grpc group's scenarios, as the judge runs them.
func grpcSuite() judge.Suite {
	return judge.Suite{Group: Group, Client: grpcScenarios(), Server: srvScenarios(), Controls: controls()}
}

// grpcScenarios are the grpc scenarios each client column runs, in run
// order.
func grpcScenarios() []judge.Scenario {
	// f is a fault rule on both wires; g one on the gRPC side alone.
	f := func(rule string) judge.Fault { return judge.Fault{GRPC: rule, RB: rule} }
	g := func(rule string) judge.Fault { return judge.Fault{GRPC: rule} }
	return []judge.Scenario{
		{Name: "grpc_concurrent_own_answers", Doc: "32 gets of 32 accounts at once on one channel: each call gets the answer naming its own account", Run: grpcConcurrentOwnAnswers, Invs: []string{judge.InvOwnAnswer}},
		{Name: "grpc_unavailable_before_exec", Doc: "the server refuses a keyless debit UNAVAILABLE without executing it, once: the call recovers, executed once", Fault: f("kind=unavailable method=debit count=1"), Run: grpcRecovers, Invs: []string{judge.InvExecOnce, judge.InvOKExecuted, judge.InvRecovers, judge.InvNotCancelled}},
		{Name: "grpc_unavailable_after_exec", Doc: "the server executes a keyless debit, then answers UNAVAILABLE (trailers-only), once: how often it executed, and what the caller was told", Fault: f("kind=unavailable_after_exec method=debit count=1"), Run: grpcExecutedOnce, Invs: []string{judge.InvExecOnce, judge.InvOKExecuted, judge.InvNotCancelled}},
		{Name: "grpc_close_after_exec", Doc: "the server executes a keyless debit, then closes the connection with FIN before any response HEADERS", Fault: f("kind=close method=debit count=1"), Run: grpcExecutedOnce, Invs: []string{judge.InvExecOnce, judge.InvOKExecuted, judge.InvNotCancelled}},
		{Name: "grpc_reset_after_exec", Doc: "the server executes a keyless debit, then resets the connection (TCP RST) before any response HEADERS", Fault: g("kind=reset method=debit count=1"), Run: grpcExecutedOnce, Invs: []string{judge.InvExecOnce, judge.InvOKExecuted}, CodeVaries: true},
		{Name: "grpc_refused_stream", Doc: "the server refuses the debit's stream with RST_STREAM REFUSED_STREAM, unexecuted, once: the call recovers, executed once", Fault: g("kind=rst code=REFUSED_STREAM method=debit count=1"), Run: grpcRecovers, Invs: []string{judge.InvExecOnce, judge.InvOKExecuted, judge.InvRecovers, judge.InvNotCancelled}},
		{Name: "grpc_goaway_below", Doc: "the server sends GOAWAY with a last-stream-id below the debit's stream, unexecuted, then closes: the call recovers, executed once", Fault: g("kind=goaway_below method=debit count=1"), Run: grpcRecovers, Invs: []string{judge.InvExecOnce, judge.InvOKExecuted, judge.InvRecovers, judge.InvNotCancelled}},
		{Name: "grpc_goaway_cover", Doc: "the server executes a keyless debit, sends GOAWAY covering its stream, then closes unanswered", Fault: g("kind=goaway_cover method=debit count=1"), Run: grpcExecutedOnce, Invs: []string{judge.InvExecOnce, judge.InvOKExecuted, judge.InvNotCancelled}},
		{Name: "grpc_unavailable_after_headers", Doc: "the server executes a keyless debit, sends response HEADERS, then trailers UNAVAILABLE: the control row, a call committed once headers came", Fault: g("kind=unavailable_after_headers method=debit count=1"), Run: grpcExecutedOnce, Invs: []string{judge.InvExecOnce, judge.InvOKExecuted, judge.InvNotCancelled}},
		{Name: "grpc_cut_data_after_exec", Doc: "the server executes a keyless debit, sends HEADERS and half a DATA frame, then closes", Fault: g("kind=cut_data method=debit count=1"), Run: grpcExecutedOnce, Invs: []string{judge.InvExecOnce, judge.InvOKExecuted, judge.InvNotCancelled}},
		{Name: "grpc_rst_cancel_after_exec", Doc: "the server executes a keyless debit, then resets its stream with RST_STREAM CANCEL", Fault: g("kind=rst code=CANCEL method=debit count=1"), Run: grpcExecutedOnce, Invs: []string{judge.InvExecOnce, judge.InvOKExecuted, judge.InvNotCancelled}},
		{Name: "grpc_rst_internal_after_headers", Doc: "the server executes a keyless debit, sends HEADERS, then resets its stream with RST_STREAM INTERNAL_ERROR", Fault: g("kind=rst code=INTERNAL_ERROR headers=true method=debit count=1"), Run: grpcExecutedOnce, Invs: []string{judge.InvExecOnce, judge.InvOKExecuted, judge.InvNotCancelled}},
		{Name: "grpc_rst_protocol_after_exec", Doc: "the server executes a keyless debit, then resets its stream with RST_STREAM PROTOCOL_ERROR", Fault: g("kind=rst code=PROTOCOL_ERROR method=debit count=1"), Run: grpcExecutedOnce, Invs: []string{judge.InvExecOnce, judge.InvOKExecuted, judge.InvNotCancelled}},
		{Name: "grpc_goaway_below_always", Doc: "the server answers every request of a keyless debit with GOAWAY below its stream, unexecuted, then closes: how many requests and connections one call makes by its 1s deadline, and what its caller is told", Fault: g("kind=goaway_below method=debit"), Run: grpcRefusedAlways, Invs: []string{judge.InvExecOnce, judge.InvAttemptsBounded, judge.InvRefusalReported, judge.InvNotCancelled}},
		{Name: "grpc_refused_stream_always", Doc: "the server refuses every stream of a keyless debit with RST_STREAM REFUSED_STREAM, unexecuted: how many requests one call makes by its 1s deadline, and what its caller is told", Fault: g("kind=rst code=REFUSED_STREAM method=debit"), Run: grpcRefusedAlways, Invs: []string{judge.InvExecOnce, judge.InvAttemptsBounded, judge.InvRefusalReported, judge.InvNotCancelled}},
		{Name: "grpc_rst_cancel_after_headers", Doc: "the server executes a keyless debit, sends response HEADERS, then resets its stream with RST_STREAM CANCEL: how often it executed, and is the caller told CANCELLED for a call it never cancelled?", Fault: g("kind=rst code=CANCEL headers=true method=debit count=1"), Run: grpcExecutedOnce, Invs: []string{judge.InvExecOnce, judge.InvOKExecuted, judge.InvNotCancelled}},
		{Name: "grpc_rst_internal_after_exec", Doc: "the server executes a keyless debit, then resets its stream with RST_STREAM INTERNAL_ERROR before any response HEADERS", Fault: g("kind=rst code=INTERNAL_ERROR method=debit count=1"), Run: grpcExecutedOnce, Invs: []string{judge.InvExecOnce, judge.InvOKExecuted, judge.InvNotCancelled}},
		{Name: "grpc_reset_code", Doc: "ten gets one at a time, each of whose requests the server answers with a TCP RST: no caller may be told CANCELLED, a code that says it cancelled the call itself", Fault: g("kind=reset method=get"), Run: grpcResetCode, Invs: []string{judge.InvNotCancelled}},
		{Name: "grpc_pushback_malformed_abc", Doc: "the server refuses a keyless debit UNAVAILABLE unexecuted, once, with grpc-retry-pushback-ms: abc, which does not parse: by gRFC A6 the call is not retried", Fault: g("kind=unavailable method=debit count=1 pushback=abc"), Run: grpcPushbackMalformed, Invs: []string{judge.InvExecOnce, judge.InvPushback, judge.InvNotCancelled}, Kind: judge.KindRetry},
		{Name: "grpc_pushback_malformed_decimal", Doc: "as grpc_pushback_malformed_abc with grpc-retry-pushback-ms: 1.5, not a whole number of milliseconds: not retried", Fault: g("kind=unavailable method=debit count=1 pushback=1.5"), Run: grpcPushbackMalformed, Invs: []string{judge.InvExecOnce, judge.InvPushback, judge.InvNotCancelled}, Kind: judge.KindRetry},
		{Name: "grpc_pushback_malformed_suffix", Doc: "as grpc_pushback_malformed_abc with grpc-retry-pushback-ms: 1500x, a number with trailing junk: not retried", Fault: g("kind=unavailable method=debit count=1 pushback=1500x"), Run: grpcPushbackMalformed, Invs: []string{judge.InvExecOnce, judge.InvPushback, judge.InvNotCancelled}, Kind: judge.KindRetry},
		{Name: "grpc_pushback_negative", Doc: "as grpc_pushback_malformed_abc with grpc-retry-pushback-ms: -300, a negative value, which gRFC A6 reads as do not retry", Fault: g("kind=unavailable method=debit count=1 pushback=-300"), Run: grpcPushbackMalformed, Invs: []string{judge.InvExecOnce, judge.InvPushback, judge.InvNotCancelled}, Kind: judge.KindRetry},
		{Name: "grpc_pushback_honoured", Doc: "the server refuses a keyless debit UNAVAILABLE unexecuted with a 300ms retry-after hint (grpc-retry-pushback-ms), once: no retry reaches it sooner, and the call recovers", Fault: f("kind=unavailable method=debit count=1 retry_after=300ms"), Run: grpcPushback, Invs: []string{judge.InvExecOnce, judge.InvRecovers, judge.InvPushback}},
		{Name: "grpc_late_answer_not_crossed", Doc: "a get is answered after its 300ms deadline; the next get on the same channel, sent at once, gets its own answer, never the late one", Fault: f("kind=late method=get count=1 delay=200ms"), Run: grpcLateNotCrossed, Invs: []string{judge.InvOwnAnswer}, Timed: true},
		{Name: "grpc_throttling_caps_amplification", Doc: "a server refuses every get UNAVAILABLE unexecuted: 20 gets one at a time send at most 20x1.1+10 requests", Fault: f("kind=unavailable method=get"), Run: grpcThrottling, Invs: []string{judge.InvAmplification}},
		{Name: "grpc_timeout_is_time_left", Doc: "once a debit has connected the channel, a get refused UNAVAILABLE twice, each refusal 100ms after it arrived, then served, under a 10.08s deadline: each attempt's grpc-timeout is at most what was left by the harness's clock (the deadline less the time since the harness sent the call) at the earliest the attempt can have left the client (for a retry, its refusal), plus the time from sending to the first attempt's arrival (when the call's own clock started, at the latest) and 2ms of rounding; so the first attempt's is at most the deadline plus 2ms", Fault: g("kind=unavailable method=get count=2 delay=100ms"), Run: grpcTimeoutLeft, Invs: []string{judge.InvRecovers, judge.InvTimeoutLeft}},
		{Name: "grpc_connection_refused", Doc: "nothing listens at the address: a keyless debit ends with an error by its 1s deadline", NoServer: true, Run: grpcConnectionRefused, Invs: []string{judge.InvWithinDeadline}},
		{Name: "grpc_noreply_within_deadline", Doc: "the server executes a keyless debit and never answers: the call returns by its 500ms deadline, executed once", Fault: f("kind=noreply method=debit count=1"), Run: grpcNoReplyWithinDeadline, Invs: []string{judge.InvExecOnce, judge.InvWithinDeadline}},
		{Name: "grpc_server_skips_expired", Doc: "the server's only worker is busy with a 500ms get; a keyless debit with a 100ms deadline waits behind it: the server never executes it", Fault: f("kind=sleep method=get count=1 delay=500ms"), Run: grpcServerSkipsExpired, Invs: []string{judge.InvWithinDeadline, judge.InvExpiredSkipped}},
		{Name: "grpc_server_starts_late", Doc: "a keyless debit is made while nothing listens; the server binds 300ms later, and a second debit is made as soon as it listens: is it served?", Run: grpcServerStartsLate, Invs: []string{judge.InvExecOnce, judge.InvServesOnceUp}},
		{Name: "grpc_wait_for_ready", Doc: "a keyless debit with wait-for-ready is made while nothing listens, and the server binds 500ms later: does the call wait for it and get served, once, by its 3s deadline?", Run: grpcWaitForReady, Invs: []string{judge.InvExecOnce, judge.InvWaitsForReady}, Needs: []string{cut.CapWaitForReady}},
		{Name: "grpc_hedged_get_tail", Doc: "ten gets one at a time, the first slept 1s by the server: with hedging 100ms apart the slowest returns before the sleep ends, and only the slow get is hedged", Fault: f("kind=sleep method=get count=1 delay=1s"), Run: grpcHedgedGetTail, Invs: []string{judge.InvHedgeTail, judge.InvHedgeBounded}, Kind: judge.KindHedge},
		{Name: "grpc_hedged_debit", Doc: "the server executes a keyless debit at once and answers it 1s late: a stack hedging the whole service sends a second attempt after 100ms, which the server executes too; how often the debit ran", Fault: f("kind=late method=debit count=1 delay=1s"), Run: grpcExecutedOnce, Invs: []string{judge.InvExecOnce, judge.InvOKExecuted, judge.InvNotCancelled}, Kind: judge.KindHedge},
		{Name: "grpc_per_attempt_slow_get", Doc: "the server sleeps a get's first attempt 1s, under a 2s deadline: with a 200ms per-attempt timeout the attempt is abandoned and the next one answers, long before the second is up", Fault: f("kind=sleep method=get count=1 delay=1s"), Run: grpcPerAttemptSlowGet, Invs: []string{judge.InvAttemptCut}, Kind: judge.KindPerAttempt},
		{Name: "grpc_per_attempt_late_debit", Doc: "the server executes a keyless debit at once and answers it 1s late: a 200ms per-attempt timeout abandons the attempt the server executed, and the retry policy sends another; how often the debit ran", Fault: f("kind=late method=debit count=1 delay=1s"), Run: grpcExecutedOnce, Invs: []string{judge.InvExecOnce, judge.InvOKExecuted, judge.InvNotCancelled}, Kind: judge.KindPerAttempt},
		{Name: "grpc_silent_peer", Doc: "the server executes a keyless debit, then its connection goes silent (open and read, nothing written, PING ACKs included): when the client declares the peer dead, and how often the debit executed", Fault: g("kind=silent method=debit count=1"), Run: grpcSilentPeer, Invs: []string{judge.InvExecOnce, judge.InvDeadPeer}, Kind: judge.KindKeepalive},
		{Name: "grpc_half_open_link", Doc: "a keyless debit is in flight when the server host's link goes silent (a test host: no FIN, no RST), and the server executes it unheard; the link comes back once the kernel shows the client's connection given up: when the client gave it up, what the call returned, and how often the debit executed", Run: grpcHalfOpenLink, Invs: []string{judge.InvExecOnce, judge.InvDeadPeer}, Kind: judge.KindKeepalive, TestHost: true},
	}
}

// Suite is the grpc group's scenarios with no columns chosen: the judge
// command sets the stacks, configurations and pins of a user's stack.
func Suite() judge.Suite { return judge.Suite{Client: grpcScenarios(), Server: srvScenarios()} }
