package cases

import "slices"

// registry lists every scenario in run order.
var registry = []Case{
	{"normal_multiplex", GroupEvidence, "8 goroutines share one connection for 400 gets and debits; no result reaches the wrong caller", normalMultiplex},
	{"decoder_split_model", GroupEvidence, "in-process: 500 random frames decode identically when fed 1 byte at a time and in random pieces; the 64 KiB limit holds at the prefix", decoderSplitModel},
	{"half_packet_sticky_real", GroupEvidence, "the server writes responses in random 1-13 byte pieces; 400 calls still get their own results", halfPacketStickyReal},
	{"server_split_and_invalid_request", GroupEvidence, "a request sent byte by byte is served; a bad magic and a 2^31-1 length each close only their connection", serverSplitAndInvalidRequest},
	{"client_oversize_rejected_locally", GroupEvidence, "a request over 64 KiB fails INVALID_ARGUMENT before anything is sent", clientOversizeRejectedLocally},
	{"late_response_dropped_by_id", GroupEvidence, "A times out; its late answer arrives while B waits and is dropped by ID, not handed to B", lateResponseDroppedByID},
	{"negative_control_fifo_crosstalk", GroupEvidence, "negative control: a FIFO-matching client hands A's late answer to B with no error", negativeControlFIFOCrosstalk},
	{"late_then_retry_new_request_id", GroupEvidence, "a retry uses a new request ID, so the first attempt's late answer is dropped", lateThenRetryNewRequestID},
	{"deadline_server_skips_expired", GroupEvidence, "a debit whose budget ran out in the server's queue is never executed; the client says UNKNOWN in time", deadlineServerSkipsExpired},
	{"retry_unavailable_non_idempotent", GroupEvidence, "UNAVAILABLE means not executed, so a keyless debit is retried and executes once", retryUnavailableNonIdempotent},
	{"unknown_not_retried_without_key", GroupEvidence, "a keyless debit with no answer is not re-sent: UNKNOWN after one attempt, executed once", unknownNotRetriedWithoutKey},
	{"retry_with_idempotency_key", GroupEvidence, "with an idempotency key the retry gets the stored first result; executed once", retryWithIdempotencyKey},
	{"negative_control_naive_retry", GroupEvidence, "negative control: a naive retry executes one keyless debit twice behind an OK", negativeControlNaiveRetry},
	{"idempotency_key_reuse_rejected", GroupEvidence, "a key reused with a different body is rejected unexecuted; the same body is replayed", idempotencyKeyReuseRejected},
	{"close_after_exec", GroupEvidence, "the server executes then closes: the get is retried on a new connection, the keyless debit is UNKNOWN", closeAfterExec},
	{"half_written_response_discarded", GroupEvidence, "half a response frame then close: the partial bytes are never delivered", halfWrittenResponseDiscarded},
	{"invalid_frame_from_server", GroupEvidence, "a bad-magic answer drops the connection; the get is retried, the keyless debit is UNKNOWN", invalidFrameFromServer},
	{"connect_refused_bounded_retry", GroupEvidence, "nothing listens: retries stop at 4 attempts, or earlier when the next pause would cross the deadline", connectRefusedBoundedRetry},
	{"server_starts_late_recovery", GroupEvidence, "the server binds late: refused attempts are retried and the keyless debit executes once", serverStartsLateRecovery},
	{"compare_per_request_vs_multiplex", GroupEvidence, "400 calls over a connection each versus one shared connection: connections and TIME_WAIT sockets", comparePerRequestVsMultiplex},

	{"hostile_garbage_bytes", GroupRobustness, "50 connections send random bytes: each is closed as a protocol error while a polite client is served", hostileGarbageBytes},
	{"hostile_huge_length_prefix", GroupRobustness, "a 0x7fffffff length prefix closes its connection without the server's memory growing", hostileHugeLengthPrefix},
	{"hostile_reset_mid_frame", GroupRobustness, "half a frame then an RST: the server logs it and reaps the connection, leaking no goroutine", hostileResetMidFrame},
	{"hostile_slow_sender", GroupRobustness, "a request sent one byte per 100 ms holds no worker: with one worker, other gets succeed meanwhile", hostileSlowSender},
	{"hostile_idle_connections", GroupRobustness, "500 idle connections cost two goroutines each, block no one, and are reaped when closed", hostileIdleConnections},
	{"hostile_connect_churn", GroupRobustness, "2000 connections opened and closed or reset at once: the server keeps serving and accepting", hostileConnectChurn},
	{"hostile_never_reads", GroupRobustness, "clients that never read their answers are held back by TCP and dropped at the write timeout", hostileNeverReads},
	{"backpressure_burst", GroupRobustness, "a burst past a queue of 8: each debit is executed or UNAVAILABLE unexecuted, and a retrying client gets each executed once", backpressureBurst},
}

// All returns every scenario in run order.
func All() []Case { return slices.Clone(registry) }

// Group returns the scenarios of group g in run order.
func Group(g string) []Case {
	var out []Case
	for _, c := range registry {
		if c.Group == g {
			out = append(out, c)
		}
	}
	return out
}

// Groups returns the group names in the order they first appear.
func Groups() []string {
	var out []string
	for _, c := range registry {
		if !slices.Contains(out, c.Group) {
			out = append(out, c.Group)
		}
	}
	return out
}

// Lookup returns the scenario called name.
func Lookup(name string) (Case, bool) {
	i := slices.IndexFunc(registry, func(c Case) bool { return c.Name == name })
	if i < 0 {
		return Case{}, false
	}
	return registry[i], true
}

// Names returns every scenario name in run order.
func Names() []string {
	out := make([]string, len(registry))
	for i, c := range registry {
		out[i] = c.Name
	}
	return out
}
