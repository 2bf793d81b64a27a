package cases

import "github.com/rpcbench/rpcbench/internal/cut"

const GroupGRPC = "grpc"

// grpcGroup is every grpc scenario in every column (harness_grpc.go),
// then every grpcserver scenario in every server column
// (harness_grpcserver.go).
func grpcGroup() []Case {
	return append(grpcCases(grpcScenarios()), srvCases(srvScenarios())...)
}

func grpcScenarios() []grpcScenario {
	// f is a fault rule on both wires; g one on the gRPC side alone.
	f := func(rule string) grpcFault { return grpcFault{grpc: rule, rb: rule} }
	g := func(rule string) grpcFault { return grpcFault{grpc: rule} }
	return []grpcScenario{
		{name: "grpc_concurrent_own_answers", doc: "32 gets of 32 accounts at once on one channel: each call gets the answer naming its own account", run: grpcConcurrentOwnAnswers, invs: []string{invOwnAnswer}},
		{name: "grpc_unavailable_before_exec", doc: "the server refuses a keyless debit UNAVAILABLE without executing it, once: the call recovers, executed once", fault: f("kind=unavailable method=debit count=1"), run: grpcRecovers, invs: []string{invExecOnce, invOKExecuted, invRecovers}},
		{name: "grpc_unavailable_after_exec", doc: "the server executes a keyless debit, then answers UNAVAILABLE (trailers-only), once: how often it executed, and what the caller was told", fault: f("kind=unavailable_after_exec method=debit count=1"), run: grpcExecutedOnce, invs: []string{invExecOnce, invOKExecuted}},
		{name: "grpc_close_after_exec", doc: "the server executes a keyless debit, then closes the connection with FIN before any response HEADERS", fault: f("kind=close method=debit count=1"), run: grpcExecutedOnce, invs: []string{invExecOnce, invOKExecuted}},
		{name: "grpc_reset_after_exec", doc: "the server executes a keyless debit, then resets the connection (TCP RST) before any response HEADERS", fault: g("kind=reset method=debit count=1"), run: grpcExecutedOnce, invs: []string{invExecOnce, invOKExecuted}},
		{name: "grpc_refused_stream", doc: "the server refuses the debit's stream with RST_STREAM REFUSED_STREAM, unexecuted, once: the call recovers, executed once", fault: g("kind=rst code=REFUSED_STREAM method=debit count=1"), run: grpcRecovers, invs: []string{invExecOnce, invOKExecuted, invRecovers}},
		{name: "grpc_goaway_below", doc: "the server sends GOAWAY with a last-stream-id below the debit's stream, unexecuted, then closes: the call recovers, executed once", fault: g("kind=goaway_below method=debit count=1"), run: grpcRecovers, invs: []string{invExecOnce, invOKExecuted, invRecovers}},
		{name: "grpc_goaway_cover", doc: "the server executes a keyless debit, sends GOAWAY covering its stream, then closes unanswered", fault: g("kind=goaway_cover method=debit count=1"), run: grpcExecutedOnce, invs: []string{invExecOnce, invOKExecuted}},
		{name: "grpc_unavailable_after_headers", doc: "the server executes a keyless debit, sends response HEADERS, then trailers UNAVAILABLE: the control row, a call committed once headers came", fault: g("kind=unavailable_after_headers method=debit count=1"), run: grpcExecutedOnce, invs: []string{invExecOnce, invOKExecuted}},
		{name: "grpc_cut_data_after_exec", doc: "the server executes a keyless debit, sends HEADERS and half a DATA frame, then closes", fault: g("kind=cut_data method=debit count=1"), run: grpcExecutedOnce, invs: []string{invExecOnce, invOKExecuted}},
		{name: "grpc_rst_cancel_after_exec", doc: "the server executes a keyless debit, then resets its stream with RST_STREAM CANCEL", fault: g("kind=rst code=CANCEL method=debit count=1"), run: grpcExecutedOnce, invs: []string{invExecOnce, invOKExecuted}},
		{name: "grpc_rst_internal_after_headers", doc: "the server executes a keyless debit, sends HEADERS, then resets its stream with RST_STREAM INTERNAL_ERROR", fault: g("kind=rst code=INTERNAL_ERROR headers=true method=debit count=1"), run: grpcExecutedOnce, invs: []string{invExecOnce, invOKExecuted}},
		{name: "grpc_rst_protocol_after_exec", doc: "the server executes a keyless debit, then resets its stream with RST_STREAM PROTOCOL_ERROR", fault: g("kind=rst code=PROTOCOL_ERROR method=debit count=1"), run: grpcExecutedOnce, invs: []string{invExecOnce, invOKExecuted}},
		{name: "grpc_pushback_honoured", doc: "the server refuses a keyless debit UNAVAILABLE unexecuted with a 300ms retry-after hint (grpc-retry-pushback-ms), once: no retry reaches it sooner, and the call recovers", fault: f("kind=unavailable method=debit count=1 retry_after=300ms"), run: grpcPushback, invs: []string{invExecOnce, invRecovers, invPushback}},
		{name: "grpc_late_answer_not_crossed", doc: "a get is answered after its 300ms deadline; the next get on the same channel, sent at once, gets its own answer, never the late one", fault: f("kind=late method=get count=1 delay=200ms"), run: grpcLateNotCrossed, invs: []string{invOwnAnswer}, timed: true},
		{name: "grpc_throttling_caps_amplification", doc: "a server refuses every get UNAVAILABLE unexecuted: 20 gets one at a time send at most 20x1.1+10 requests", fault: f("kind=unavailable method=get"), run: grpcThrottling, invs: []string{invAmplification}},
		{name: "grpc_timeout_is_time_left", doc: "a get refused UNAVAILABLE twice, each refusal 100ms after it arrived, then served, under a 2s deadline: each attempt's grpc-timeout is at most what was left of the deadline when it reached the server", fault: g("kind=unavailable method=get count=2 delay=100ms"), run: grpcTimeoutLeft, invs: []string{invRecovers, invTimeoutLeft}},
		{name: "grpc_connection_refused", doc: "nothing listens at the address: a keyless debit ends with an error by its 1s deadline", noServer: true, run: grpcConnectionRefused, invs: []string{invWithinDeadline}},
		{name: "grpc_noreply_within_deadline", doc: "the server executes a keyless debit and never answers: the call returns by its 1s deadline, executed once", fault: f("kind=noreply method=debit count=1"), run: grpcNoReplyWithinDeadline, invs: []string{invExecOnce, invWithinDeadline}},
		{name: "grpc_server_skips_expired", doc: "the server's only worker is busy with a 500ms get; a keyless debit with a 100ms deadline waits behind it: the server never executes it", fault: f("kind=sleep method=get count=1 delay=500ms"), run: grpcServerSkipsExpired, invs: []string{invWithinDeadline, invExpiredSkipped}},
		{name: "grpc_server_starts_late", doc: "a keyless debit is made while nothing listens; the server binds 300ms later, and a second debit is made as soon as it listens: is it served?", run: grpcServerStartsLate, invs: []string{invExecOnce, invServesOnceUp}},
		{name: "grpc_wait_for_ready", doc: "a keyless debit with wait-for-ready is made while nothing listens, and the server binds 300ms later: does the call wait for it and get served, once, by its 2s deadline?", run: grpcWaitForReady, invs: []string{invExecOnce, invWaitsForReady}, needs: []string{cut.CapWaitForReady}},
		{name: "grpc_hedged_get_tail", doc: "ten gets one at a time, the first slept 1s by the server: with hedging 100ms apart the slowest returns before the sleep ends, and only the slow get is hedged", fault: f("kind=sleep method=get count=1 delay=1s"), run: grpcHedgedGetTail, invs: []string{invHedgeTail, invHedgeBounded}, kind: kindHedge},
		{name: "grpc_hedged_debit", doc: "the server executes a keyless debit at once and answers it 1s late: a stack hedging the whole service sends a second attempt after 100ms, which the server executes too; how often the debit ran", fault: f("kind=late method=debit count=1 delay=1s"), run: grpcExecutedOnce, invs: []string{invExecOnce, invOKExecuted}, kind: kindHedge},
		{name: "grpc_per_attempt_slow_get", doc: "the server sleeps a get's first attempt 1s, under a 2s deadline: with a 200ms per-attempt timeout the attempt is abandoned and the next one answers, long before the second is up", fault: f("kind=sleep method=get count=1 delay=1s"), run: grpcPerAttemptSlowGet, invs: []string{invAttemptCut}, kind: kindPerAttempt},
		{name: "grpc_per_attempt_late_debit", doc: "the server executes a keyless debit at once and answers it 1s late: a 200ms per-attempt timeout abandons the attempt the server executed, and the retry policy sends another; how often the debit ran", fault: f("kind=late method=debit count=1 delay=1s"), run: grpcExecutedOnce, invs: []string{invExecOnce, invOKExecuted}, kind: kindPerAttempt},
		{name: "grpc_silent_peer", doc: "the server executes a keyless debit, then its connection goes silent (open and read, nothing written, PING ACKs included): when the client declares the peer dead, and how often the debit executed", fault: g("kind=silent method=debit count=1"), run: grpcSilentPeer, invs: []string{invExecOnce, invDeadPeer}, kind: kindKeepalive},
		{name: "grpc_half_open_link", doc: "a keyless debit is in flight when the server host's link goes silent (a test host: no FIN, no RST), and the server executes it unheard; the link comes back once the kernel shows the client's connection given up: when the client gave it up, what the call returned, and how often the debit executed", run: grpcHalfOpenLink, invs: []string{invExecOnce, invDeadPeer}, kind: kindKeepalive, testHost: true},
	}
}
