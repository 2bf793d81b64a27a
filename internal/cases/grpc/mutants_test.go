package grpc

import "github.com/rpcbench/rpcbench/internal/scenario/scenariotest"

// grpcMutants are the gRPC fault server's bugs (issue 22), one per fault
// kind the grpc group uses: each makes a fault do something else, and the
// grpc scenario that meets it must notice, through the server's log and
// the pins, never through what the adapter says.
var grpcMutants = []scenariotest.Mutant{
	{
		Name: "grpc_unavailable_executes",
		Bug:  "the gRPC side's unavailable fault is taken for one that executes first, and so answers as the handler did",
		File: "internal/grpcwire/fault.go",
		Old:  "\tcase FaultUnavailable, FaultGoAwayBelow:\n\t\treturn false\n",
		New:  "\tcase FaultGoAwayBelow:\n\t\treturn false\n",
		Catch: map[string]string{
			// The fault then answers as the handler did: nothing is
			// refused, and the pinned refusal no longer happens.
			"grpc_unavailable_before_exec_grpcgo_default": "recovers: stale pin",
		},
	},
	{
		Name: "grpc_unavailable_after_exec_answers",
		Bug:  "unavailable_after_exec answers the request normally instead of UNAVAILABLE",
		File: "internal/grpcwire/stream.go",
		Old:  "\t\tst.trailersOnly(Unavailable, \"injected unavailable after executing\", nil)\n",
		New:  "\t\tanswer()\n",
		Catch: map[string]string{
			"grpc_unavailable_after_exec_grpcgo_retry": "exec_at_most_once: stale pin",
		},
	},
	{
		Name: "grpc_unavailable_after_headers_trailers_only",
		Bug:  "unavailable_after_headers sends no HEADERS first: a trailers-only UNAVAILABLE",
		File: "internal/grpcwire/stream.go",
		Old:  "\t\tst.forget()\n\t\tc.queue(st.responseHeaders(), st.trailers(Unavailable, \"injected unavailable after headers\"))\n",
		New:  "\t\tst.trailersOnly(Unavailable, \"injected unavailable after headers\", nil)\n",
		Catch: map[string]string{
			"grpc_unavailable_after_headers_grpcgo_retry": "pins no such violation",
		},
	},
	{
		Name: "grpc_close_answers",
		Bug:  "the close and reset faults answer the request instead of closing the connection",
		File: "internal/grpcwire/stream.go",
		Old:  "\t\tc.closeWith(f.Kind == FaultReset)\n",
		New:  "\t\tanswer()\n",
		Catch: map[string]string{
			"grpc_close_after_exec_grpcgo_retry": "exec_at_most_once: stale pin",
			"grpc_reset_after_exec_grpcgo_retry": "exec_at_most_once: stale pin",
		},
	},
	{
		Name: "grpc_cut_data_without_headers",
		Bug:  "cut_data sends its half DATA frame without the response HEADERS before it",
		File: "internal/grpcwire/stream.go",
		Old:  "\t\tc.closeWith(false, st.responseHeaders(), op{kind: opRaw,",
		New:  "\t\tc.closeWith(false, op{kind: opRaw,",
		Catch: map[string]string{
			"grpc_cut_data_after_exec_grpcgo_retry": "pins no such violation",
		},
	},
	{
		Name: "grpc_rst_refuses_executed",
		Bug:  "an rst fault after executing sends REFUSED_STREAM, whatever its code: it says unprocessed of a request that ran",
		File: "internal/grpcwire/stream.go",
		Old:  "\t\tops := []op{{kind: opRST, stream: st.id, st: st, code: f.Code}}\n",
		New:  "\t\tops := []op{{kind: opRST, stream: st.id, st: st, code: http2.ErrCodeRefusedStream}}\n",
		Catch: map[string]string{
			"grpc_rst_cancel_after_exec_grpcgo_default": "pins no such violation",
		},
	},
	{
		Name: "grpc_goaway_below_covers",
		Bug:  "goaway_below names the stream itself as the last one taken, though it did not run it",
		File: "internal/grpcwire/stream.go",
		Old:  "\t\tlast := uint32(0)\n\t\tif st.id > 2 {\n\t\t\tlast = st.id - 2\n\t\t}\n",
		New:  "\t\tlast := st.id\n",
		Catch: map[string]string{
			"grpc_goaway_below_grpcgo_default": "recovers: grpc-go violated recovers",
		},
	},
	{
		Name: "grpc_goaway_cover_below",
		Bug:  "goaway_cover names no stream as taken (last-stream-id 0): it says unprocessed of a request that ran",
		File: "internal/grpcwire/stream.go",
		Old:  "\t\tc.closeWith(false, c.goAway(st.id, http2.ErrCodeNo, \"injected goaway_cover\"))\n",
		New:  "\t\tc.closeWith(false, c.goAway(0, http2.ErrCodeNo, \"injected goaway_cover\"))\n",
		Catch: map[string]string{
			"grpc_goaway_cover_grpcgo_default": "exec_at_most_once: grpc-go violated exec_at_most_once",
		},
	},
	{
		Name: "grpc_late_ignores_timeout",
		Bug:  "the late fault times its answer from the request's arrival plus its delay, forgetting the grpc-timeout",
		File: "internal/grpcwire/stream.go",
		Old:  "\t\t\tat = at.Add(st.timeout)\n",
		New:  "",
		Catch: map[string]string{
			"grpc_late_answer_not_crossed_grpcgo_default": "the first get's answer comes after its deadline, yet it ended OK",
		},
	},
	{
		Name: "grpc_noreply_answers",
		Bug:  "the noreply fault answers",
		File: "internal/grpcwire/stream.go",
		Old:  "\tcase FaultNoReply:\n",
		New:  "\tcase FaultNoReply:\n\t\tanswer()\n",
		Catch: map[string]string{
			"grpc_noreply_within_deadline_grpcgo_default": "the server never answers, yet the call ended OK",
		},
	},
	{
		Name: "grpc_pushback_zero",
		Bug:  "the unavailable fault's pushback header says 0 ms, whatever its retry_after",
		File: "internal/grpcwire/stream.go",
		Old:  "strconv.FormatInt(f.pushbackMs(), 10)",
		New:  "\"0\"",
		Catch: map[string]string{
			"grpc_pushback_honoured_grpcgo_retry": "pushback_honoured: grpc-go violated pushback_honoured",
		},
	},
	{
		Name: "grpc_executes_after_wait",
		Bug:  "a request waiting for a busy worker watches neither its grpc-timeout nor the client's reset, and its timeout counts from when a worker takes it, not from its arrival",
		File: "internal/grpcwire/stream.go",
		Old:  "\tselect {\n\tcase s.slots <- struct{}{}:\n\t\treturn release, true\n\tdefault:\n\t}\n",
		New:  "\ts.slots <- struct{}{}\n\tst.arrival = time.Now()\n\treturn release, true\n",
		Catch: map[string]string{
			"grpc_server_skips_expired_grpcgo_default": "expired_not_executed: grpc-go violated expired_not_executed",
		},
	},
	{
		Name: "grpc_wait_outlives_deadline",
		Bug:  "a handler's wait ends only on a reset, not at the request's deadline: it sleeps on past it and executes",
		File: "internal/grpcwire/stream.go",
		Old:  "\tif st.hasTimeout && s.h.MayBlock(&req) {\n\t\treq.Deadline, stop = deadlineAt(expiry)\n\t}\n",
		New:  "",
		Catch: map[string]string{
			"grpcserver_deadline_stops_handler_rpcserver": "srv_deadline_stops_handler: rpcserver violated srv_deadline_stops_handler",
		},
	},
	{
		Name: "grpc_silent_acks_pings",
		Bug:  "the silent fault only stops the answer: the connection still acknowledges PINGs, so it is a noreply",
		File: "internal/grpcwire/stream.go",
		Old:  "\tcase FaultSilent:\n\t\tc.silence()\n",
		New:  "\tcase FaultSilent:\n",
		Catch: map[string]string{
			"grpc_silent_peer_grpcgo_keepalive": "dead_peer_detected: grpc-go violated dead_peer_detected",
		},
	},
	{
		Name: "grpc_pushback_text_dropped",
		Bug:  "an unavailable fault's pushback= text is never sent: the refusal carries no grpc-retry-pushback-ms",
		File: "internal/grpcwire/stream.go",
		Old:  "\t\tcase f.Pushback != \"\":\n\t\t\textra = []hpack.HeaderField{{Name: \"grpc-retry-pushback-ms\", Value: f.Pushback}}\n",
		New:  "",
		Catch: map[string]string{
			// With no hint the retry policy retries, and the debit runs.
			"grpc_pushback_malformed_abc_grpcgo_retry": "pushback_honoured: grpc-go violated pushback_honoured",
		},
	},
	{
		Name: "judge_cancelled_misspelt",
		Bug:  "the judge looks for the code CANCELED, as Go spells the word, and so never sees a CANCELLED call",
		File: "internal/cases/grpc/client.go",
		Old:  "\t\tif a.Code == \"CANCELLED\" {\n",
		New:  "\t\tif a.Code == \"CANCELED\" {\n",
		Catch: map[string]string{
			"grpc_rst_cancel_after_exec_grpcgo_default": "never_cancelled: stale pin",
		},
	},
	{
		Name: "judge_refusal_any_error",
		Bug:  "refusal_reported accepts any code but OK, so a call that ran out its deadline against refusals reads as reported",
		File: "internal/cases/grpc/codes.go",
		Old:  "judge.Holds(n == 0 && a.Code == \"UNAVAILABLE\")",
		New:  "judge.Holds(n == 0 && a.Code != \"OK\")",
		Catch: map[string]string{
			"grpc_refused_stream_always_connectgo_default": "refusal_reported: stale pin",
		},
	},
	{
		Name: "judge_ok_trusts_reply",
		Bug:  "ok_only_if_executed takes an OK that carries a well-formed reply naming the account as executed, whatever the server's log says",
		File: "internal/cases/grpc/client.go",
		Old:  "judge.Holds(a.Code != \"OK\" || n >= 1)",
		New:  "judge.Holds(a.Code != \"OK\" || n >= 1 || a.Account == account)",
		Catch: map[string]string{
			"negative_control_grpc_adapter_says_ok": `its line holding ["ok_only_if_executed:=violated"]`,
		},
	},
	{
		Name: "judge_timing_trusts_adapter",
		Bug:  "hedge_cuts_tail reads how long the slowest get took from the adapter's own elapsed_ms, not the harness's clock",
		File: "internal/cases/grpc/client.go",
		Old:  "judge.Holds(slowest.Elapsed < grpcHedgeSlow)",
		New:  "judge.Holds(slowest.Claimed < grpcHedgeSlow)",
		Catch: map[string]string{
			"negative_control_grpc_adapter_fast_clock": "want FINDING",
		},
	},
	{
		Name: "judge_codes_misspelt",
		Bug:  "the judge's own reading of every answer looks for the code CANCELED, and so passes a scenario whose caller was told CANCELLED",
		File: "internal/cases/judge/judge.go",
		Old:  "\t\tif a.Code == \"CANCELLED\" {\n",
		New:  "\t\tif a.Code == \"CANCELED\" {\n",
		Catch: map[string]string{
			// The group's own control, whose fake says CANCELLED.
			"negative_control_grpc_adapter_says_cancelled": "the judge gave grpc_noreply_within_deadline_grpcgo_default",
		},
	},
}
