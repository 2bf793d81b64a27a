package evidence

import "github.com/rpcbench/rpcbench/internal/scenario"

// Group holds the scenarios whose lines make up
// evidence/output.txt: the seed article's.
const Group = "evidence"

// Cases lists the evidence group in run order.
func Cases() []scenario.Case {
	return []scenario.Case{
		{Name: "normal_multiplex", Group: Group, Doc: "8 goroutines share one connection for 400 gets and debits; no result reaches the wrong caller", Body: normalMultiplex},
		{Name: "decoder_split_model", Group: Group, NoServer: true, Doc: "in-process: 500 random frames decode identically when fed 1 byte at a time and in random pieces; the 64 KiB limit holds at the prefix", Body: decoderSplitModel},
		{Name: "half_packet_sticky_real", Group: Group, Doc: "the server writes responses in random 1-13 byte pieces; 400 calls still get their own results", Body: halfPacketStickyReal},
		{Name: "server_split_and_invalid_request", Group: Group, Doc: "a request sent byte by byte is served; a bad magic and a 2^31-1 length each close only their connection", Body: serverSplitAndInvalidRequest},
		{Name: "client_oversize_rejected_locally", Group: Group, Doc: "a request over 64 KiB fails INVALID_ARGUMENT before anything is sent", Body: clientOversizeRejectedLocally},
		{Name: "late_response_dropped_by_id", Group: Group, Doc: "A times out; its late answer arrives while B waits and is dropped by ID, not handed to B", Body: lateResponseDroppedByID},
		{Name: "negative_control_fifo_crosstalk", Group: Group, Doc: "negative control: a FIFO-matching client hands A's late answer to B with no error", Body: negativeControlFIFOCrosstalk},
		{Name: "late_then_retry_new_request_id", Group: Group, Doc: "a retry uses a new request ID, so the first attempt's late answer is dropped", Body: lateThenRetryNewRequestID},
		{Name: "deadline_server_skips_expired", Group: Group, Doc: "a debit whose budget ran out in the server's queue is never executed; the client says UNKNOWN in time", Body: deadlineServerSkipsExpired},
		{Name: "retry_unavailable_non_idempotent", Group: Group, Doc: "UNAVAILABLE means not executed, so a keyless debit is retried and executes once", Body: retryUnavailableNonIdempotent},
		{Name: "unknown_not_retried_without_key", Group: Group, Doc: "a keyless debit with no answer is not re-sent: UNKNOWN after one attempt, executed once", Body: unknownNotRetriedWithoutKey},
		{Name: "retry_with_idempotency_key", Group: Group, Doc: "with an idempotency key the retry gets the stored first result; executed once", Body: retryWithIdempotencyKey},
		{Name: "negative_control_naive_retry", Group: Group, Doc: "negative control: a naive retry executes one keyless debit twice behind an OK", Body: negativeControlNaiveRetry},
		{Name: "idempotency_key_reuse_rejected", Group: Group, Doc: "a key reused with a different body is rejected unexecuted; the same body is replayed", Body: idempotencyKeyReuseRejected},
		{Name: "close_after_exec", Group: Group, Doc: "the server executes then closes: the get is retried on a new connection, the keyless debit is UNKNOWN", Body: closeAfterExec},
		{Name: "half_written_response_discarded", Group: Group, Doc: "half a response frame then close: the partial bytes are never delivered", Body: halfWrittenResponseDiscarded},
		{Name: "invalid_frame_from_server", Group: Group, Doc: "a bad-magic answer drops the connection; the get is retried, the keyless debit is UNKNOWN", Body: invalidFrameFromServer},
		{Name: "connect_refused_bounded_retry", Group: Group, NoServer: true, Doc: "nothing listens: retries stop at 4 attempts, or earlier when the next pause would cross the deadline", Body: connectRefusedBoundedRetry},
		{Name: "server_starts_late_recovery", Group: Group, Doc: "the server binds late: refused attempts are retried and the keyless debit executes once", Body: serverStartsLateRecovery},
		{Name: "compare_per_request_vs_multiplex", Group: Group, Doc: "400 calls over a connection each versus one shared connection: connections and TIME_WAIT sockets", Body: comparePerRequestVsMultiplex},
		{Name: "budget_sent_is_time_left", Group: Group, Doc: "each attempt sends what is left of it: under 300 ms after a dial, 300 ms on an open connection, at most 100 ms under a 100 ms call timeout or context deadline", Body: budgetSentIsTimeLeft},
		{Name: "zero_budget_not_executed", Group: Group, Doc: "a debit sent with budget 0 is answered DEADLINE_EXCEEDED unexecuted, whether the reader or a worker takes it", Body: zeroBudgetNotExecuted},
		{Name: "duplicate_while_executing", Group: Group, Doc: "duplicates of a keyed debit still executing: one whose budget ends first is answered DEADLINE_EXCEEDED as it ends, one that waits gets the original's answer; executed once", Body: duplicateWhileExecuting},
		{Name: "keyed_unknown_stays_unknown", Group: Group, Doc: "a keyed debit executed unanswered, then refused UNAVAILABLE until its attempts run out, is UNKNOWN, not UNAVAILABLE", Body: keyedUnknownStaysUnknown},
		{Name: "deadline_exceeded_answer_retried", Group: Group, Doc: "a DEADLINE_EXCEEDED answer that arrives in time means not executed: a keyless debit is retried and executes once", Body: deadlineExceededAnswerRetried},
		{Name: "write_stall_written_not_resent", Group: Group, Doc: "the server stops reading mid-batch until the client's write times out, then resumes: written debits end UNKNOWN, unwritten ones are retried, none executes twice", Body: writeStallWrittenNotResent},
	}
}
