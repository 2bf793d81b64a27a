package cases

const GroupGRPC = "grpc"

// grpcGroup is every grpc scenario in every column (harness_grpc.go).
func grpcGroup() []Case { return grpcCases(grpcScenarios()) }

func grpcScenarios() []grpcScenario {
	// f is a fault rule on both wires; g one on the gRPC side alone.
	f := func(rule string) grpcFault { return grpcFault{grpc: rule, rb: rule} }
	g := func(rule string) grpcFault { return grpcFault{grpc: rule} }
	return []grpcScenario{
		{"grpc_concurrent_own_answers", "32 gets of 32 accounts at once on one channel: each call gets the answer naming its own account", grpcFault{}, false, grpcConcurrentOwnAnswers, false},
		{"grpc_unavailable_before_exec", "the server refuses a keyless debit UNAVAILABLE without executing it, once: the call recovers, executed once", f("kind=unavailable method=debit count=1"), false, grpcRecovers, false},
		{"grpc_unavailable_after_exec", "the server executes a keyless debit, then answers UNAVAILABLE (trailers-only), once: how often it executed, and what the caller was told", f("kind=unavailable_after_exec method=debit count=1"), false, grpcExecutedOnce, false},
		{"grpc_close_after_exec", "the server executes a keyless debit, then closes the connection with FIN before any response HEADERS", f("kind=close method=debit count=1"), false, grpcExecutedOnce, false},
		{"grpc_reset_after_exec", "the server executes a keyless debit, then resets the connection (TCP RST) before any response HEADERS", g("kind=reset method=debit count=1"), false, grpcExecutedOnce, false},
		{"grpc_refused_stream", "the server refuses the debit's stream with RST_STREAM REFUSED_STREAM, unexecuted, once: the call recovers, executed once", g("kind=rst code=REFUSED_STREAM method=debit count=1"), false, grpcRecovers, false},
		{"grpc_goaway_below", "the server sends GOAWAY with a last-stream-id below the debit's stream, unexecuted, then closes: the call recovers, executed once", g("kind=goaway_below method=debit count=1"), false, grpcRecovers, false},
		{"grpc_goaway_cover", "the server executes a keyless debit, sends GOAWAY covering its stream, then closes unanswered", g("kind=goaway_cover method=debit count=1"), false, grpcExecutedOnce, false},
		{"grpc_unavailable_after_headers", "the server executes a keyless debit, sends response HEADERS, then trailers UNAVAILABLE: the control row, a call committed once headers came", g("kind=unavailable_after_headers method=debit count=1"), false, grpcExecutedOnce, false},
		{"grpc_cut_data_after_exec", "the server executes a keyless debit, sends HEADERS and half a DATA frame, then closes", g("kind=cut_data method=debit count=1"), false, grpcExecutedOnce, false},
		{"grpc_rst_cancel_after_exec", "the server executes a keyless debit, then resets its stream with RST_STREAM CANCEL", g("kind=rst code=CANCEL method=debit count=1"), false, grpcExecutedOnce, false},
		{"grpc_rst_internal_after_headers", "the server executes a keyless debit, sends HEADERS, then resets its stream with RST_STREAM INTERNAL_ERROR", g("kind=rst code=INTERNAL_ERROR headers=true method=debit count=1"), false, grpcExecutedOnce, false},
		{"grpc_rst_protocol_after_exec", "the server executes a keyless debit, then resets its stream with RST_STREAM PROTOCOL_ERROR", g("kind=rst code=PROTOCOL_ERROR method=debit count=1"), false, grpcExecutedOnce, false},
		{"grpc_pushback_honoured", "the server refuses a keyless debit UNAVAILABLE unexecuted with a 300ms retry-after hint (grpc-retry-pushback-ms), once: no retry reaches it sooner, and the call recovers", f("kind=unavailable method=debit count=1 retry_after=300ms"), false, grpcPushback, false},
		{"grpc_late_answer_not_crossed", "a get is answered after its 300ms deadline; the next get on the same channel, sent at once, gets its own answer, never the late one", f("kind=late method=get count=1 delay=200ms"), false, grpcLateNotCrossed, false},
		{"grpc_throttling_caps_amplification", "a server refuses every get UNAVAILABLE unexecuted: 20 gets one at a time send at most 20x1.1+10 requests", f("kind=unavailable method=get"), false, grpcThrottling, false},
		{"grpc_timeout_is_time_left", "a get refused UNAVAILABLE twice, then served, under a 2s deadline: each attempt's grpc-timeout is at most what was left of the deadline when it reached the server", g("kind=unavailable method=get count=2"), false, grpcTimeoutLeft, false},
		{"grpc_connection_refused", "nothing listens at the address: a keyless debit ends with an error by its 1s deadline", grpcFault{}, true, grpcConnectionRefused, false},
		{"grpc_noreply_within_deadline", "the server executes a keyless debit and never answers: the call returns by its 1s deadline, executed once", f("kind=noreply method=debit count=1"), false, grpcNoReplyWithinDeadline, false},
		{"grpc_server_skips_expired", "the server's only worker is busy with a 500ms get; a keyless debit with a 100ms deadline waits behind it: the server never executes it", f("kind=sleep method=get count=1 delay=500ms"), false, grpcServerSkipsExpired, false},
		{"grpc_server_starts_late", "a keyless debit is made while nothing listens; the server binds 300ms later, and a second debit is made as soon as it listens: is it served?", grpcFault{}, false, grpcServerStartsLate, false},
		{"grpc_silent_peer", "the server executes a keyless debit, then its connection goes silent (open and read, nothing written, PING ACKs included): when the client declares the peer dead, and how often the debit executed", g("kind=silent method=debit count=1"), false, grpcSilentPeer, true},
	}
}
