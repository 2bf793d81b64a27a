package cases

const GroupGRPC = "grpc"

// grpcGroup is every grpc scenario in every column (harness_grpc.go).
func grpcGroup() []Case { return grpcCases(grpcScenarios()) }

func grpcScenarios() []grpcScenario {
	return []grpcScenario{
		{"grpc_concurrent_own_answers", "32 gets of 32 accounts at once on one channel: each call gets the answer naming its own account", grpcConcurrentOwnAnswers},
		{"grpc_unavailable_before_exec", "the server refuses a keyless debit UNAVAILABLE without executing it, once: the call recovers, executed once", grpcUnavailableBeforeExec},
		{"grpc_unavailable_after_exec", "the server executes a keyless debit, then answers UNAVAILABLE (trailers-only), once: how often it executed, and what the caller was told", grpcUnavailableAfterExec},
		{"grpc_close_after_exec", "the server executes a keyless debit, then closes the connection with FIN before any response HEADERS", grpcCloseAfterExec},
		{"grpc_reset_after_exec", "the server executes a keyless debit, then resets the connection (TCP RST) before any response HEADERS", grpcResetAfterExec},
		{"grpc_refused_stream", "the server refuses the debit's stream with RST_STREAM REFUSED_STREAM, unexecuted, once: the call recovers, executed once", grpcRefusedStream},
		{"grpc_goaway_below", "the server sends GOAWAY with a last-stream-id below the debit's stream, unexecuted, then closes: the call recovers, executed once", grpcGoAwayBelow},
		{"grpc_goaway_cover", "the server executes a keyless debit, sends GOAWAY covering its stream, then closes unanswered", grpcGoAwayCover},
		{"grpc_noreply_within_deadline", "the server executes a keyless debit and never answers: the call returns by its 1s deadline, executed once", grpcNoReplyWithinDeadline},
	}
}
