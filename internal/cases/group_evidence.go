package cases

// GroupEvidence holds the scenarios whose lines make up
// evidence/output.txt: the seed article's.
const GroupEvidence = "evidence"

// evidenceGroup lists the evidence group in run order.
func evidenceGroup() []Case {
	return []Case{
		{Name: "normal_multiplex", Group: GroupEvidence, Doc: "8 goroutines share one connection for 400 gets and debits; no result reaches the wrong caller", run: normalMultiplex},
		{Name: "decoder_split_model", Group: GroupEvidence, NoServer: true, Doc: "in-process: 500 random frames decode identically when fed 1 byte at a time and in random pieces; the 64 KiB limit holds at the prefix", run: decoderSplitModel},
		{Name: "half_packet_sticky_real", Group: GroupEvidence, Doc: "the server writes responses in random 1-13 byte pieces; 400 calls still get their own results", run: halfPacketStickyReal},
		{Name: "server_split_and_invalid_request", Group: GroupEvidence, Doc: "a request sent byte by byte is served; a bad magic and a 2^31-1 length each close only their connection", run: serverSplitAndInvalidRequest},
		{Name: "client_oversize_rejected_locally", Group: GroupEvidence, Doc: "a request over 64 KiB fails INVALID_ARGUMENT before anything is sent", run: clientOversizeRejectedLocally},
		{Name: "late_response_dropped_by_id", Group: GroupEvidence, Doc: "A times out; its late answer arrives while B waits and is dropped by ID, not handed to B", run: lateResponseDroppedByID},
		{Name: "negative_control_fifo_crosstalk", Group: GroupEvidence, Doc: "negative control: a FIFO-matching client hands A's late answer to B with no error", run: negativeControlFIFOCrosstalk},
		{Name: "late_then_retry_new_request_id", Group: GroupEvidence, Doc: "a retry uses a new request ID, so the first attempt's late answer is dropped", run: lateThenRetryNewRequestID},
		{Name: "deadline_server_skips_expired", Group: GroupEvidence, Doc: "a debit whose budget ran out in the server's queue is never executed; the client says UNKNOWN in time", run: deadlineServerSkipsExpired},
		{Name: "retry_unavailable_non_idempotent", Group: GroupEvidence, Doc: "UNAVAILABLE means not executed, so a keyless debit is retried and executes once", run: retryUnavailableNonIdempotent},
		{Name: "unknown_not_retried_without_key", Group: GroupEvidence, Doc: "a keyless debit with no answer is not re-sent: UNKNOWN after one attempt, executed once", run: unknownNotRetriedWithoutKey},
		{Name: "retry_with_idempotency_key", Group: GroupEvidence, Doc: "with an idempotency key the retry gets the stored first result; executed once", run: retryWithIdempotencyKey},
		{Name: "negative_control_naive_retry", Group: GroupEvidence, Doc: "negative control: a naive retry executes one keyless debit twice behind an OK", run: negativeControlNaiveRetry},
		{Name: "idempotency_key_reuse_rejected", Group: GroupEvidence, Doc: "a key reused with a different body is rejected unexecuted; the same body is replayed", run: idempotencyKeyReuseRejected},
		{Name: "close_after_exec", Group: GroupEvidence, Doc: "the server executes then closes: the get is retried on a new connection, the keyless debit is UNKNOWN", run: closeAfterExec},
		{Name: "half_written_response_discarded", Group: GroupEvidence, Doc: "half a response frame then close: the partial bytes are never delivered", run: halfWrittenResponseDiscarded},
		{Name: "invalid_frame_from_server", Group: GroupEvidence, Doc: "a bad-magic answer drops the connection; the get is retried, the keyless debit is UNKNOWN", run: invalidFrameFromServer},
		{Name: "connect_refused_bounded_retry", Group: GroupEvidence, NoServer: true, Doc: "nothing listens: retries stop at 4 attempts, or earlier when the next pause would cross the deadline", run: connectRefusedBoundedRetry},
		{Name: "server_starts_late_recovery", Group: GroupEvidence, Doc: "the server binds late: refused attempts are retried and the keyless debit executes once", run: serverStartsLateRecovery},
		{Name: "compare_per_request_vs_multiplex", Group: GroupEvidence, Doc: "400 calls over a connection each versus one shared connection: connections and TIME_WAIT sockets", run: comparePerRequestVsMultiplex},
		{Name: "budget_sent_is_time_left", Group: GroupEvidence, Doc: "each attempt sends what is left of it: under 300 ms after a dial, 300 ms on an open connection, at most 100 ms under a 100 ms call timeout or context deadline", run: budgetSentIsTimeLeft},
		{Name: "zero_budget_not_executed", Group: GroupEvidence, Doc: "a debit sent with budget 0 is answered DEADLINE_EXCEEDED unexecuted, whether the reader or a worker takes it", run: zeroBudgetNotExecuted},
		{Name: "duplicate_while_executing", Group: GroupEvidence, Doc: "duplicates of a keyed debit still executing: one whose budget ends first is answered DEADLINE_EXCEEDED as it ends, one that waits gets the original's answer; executed once", run: duplicateWhileExecuting},
		{Name: "keyed_unknown_stays_unknown", Group: GroupEvidence, Doc: "a keyed debit executed unanswered, then refused UNAVAILABLE until its attempts run out, is UNKNOWN, not UNAVAILABLE", run: keyedUnknownStaysUnknown},
		{Name: "deadline_exceeded_answer_retried", Group: GroupEvidence, Doc: "a DEADLINE_EXCEEDED answer that arrives in time means not executed: a keyless debit is retried and executes once", run: deadlineExceededAnswerRetried},
		{Name: "write_stall_written_not_resent", Group: GroupEvidence, Doc: "the server stops reading mid-batch until the client's write times out, then resumes: written debits end UNKNOWN, unwritten ones are retried, none executes twice", run: writeStallWrittenNotResent},
	}
}
