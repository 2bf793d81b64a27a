package cases

const GroupGRPC = "grpc"

// grpcGroup is every grpc scenario in every column (harness_grpc.go).
func grpcGroup() []Case { return grpcCases(grpcScenarios()) }

func grpcScenarios() []grpcScenario {
	// f is a fault rule on both wires; g one on the gRPC side alone.
	f := func(rule string) grpcFault { return grpcFault{grpc: rule, rb: rule} }
	g := func(rule string) grpcFault { return grpcFault{grpc: rule} }
	return []grpcScenario{
		{"grpc_concurrent_own_answers", "32 gets of 32 accounts at once on one channel: each call gets the answer naming its own account", grpcFault{}, grpcConcurrentOwnAnswers},
		{"grpc_unavailable_before_exec", "the server refuses a keyless debit UNAVAILABLE without executing it, once: the call recovers, executed once", f("kind=unavailable method=debit count=1"), grpcRecovers},
		{"grpc_unavailable_after_exec", "the server executes a keyless debit, then answers UNAVAILABLE (trailers-only), once: how often it executed, and what the caller was told", f("kind=unavailable_after_exec method=debit count=1"), grpcExecutedOnce},
		{"grpc_close_after_exec", "the server executes a keyless debit, then closes the connection with FIN before any response HEADERS", f("kind=close method=debit count=1"), grpcExecutedOnce},
		{"grpc_reset_after_exec", "the server executes a keyless debit, then resets the connection (TCP RST) before any response HEADERS", g("kind=reset method=debit count=1"), grpcExecutedOnce},
		{"grpc_refused_stream", "the server refuses the debit's stream with RST_STREAM REFUSED_STREAM, unexecuted, once: the call recovers, executed once", g("kind=rst code=REFUSED_STREAM method=debit count=1"), grpcRecovers},
		{"grpc_goaway_below", "the server sends GOAWAY with a last-stream-id below the debit's stream, unexecuted, then closes: the call recovers, executed once", g("kind=goaway_below method=debit count=1"), grpcRecovers},
		{"grpc_goaway_cover", "the server executes a keyless debit, sends GOAWAY covering its stream, then closes unanswered", g("kind=goaway_cover method=debit count=1"), grpcExecutedOnce},
		{"grpc_noreply_within_deadline", "the server executes a keyless debit and never answers: the call returns by its 1s deadline, executed once", f("kind=noreply method=debit count=1"), grpcNoReplyWithinDeadline},
	}
}
