package cases

// grpcMutants are the gRPC fault server's bugs (issue 22), one per fault
// kind the grpc group uses: each makes a fault do something else, and the
// grpc scenario that meets it must notice, through the server's log and
// the pins, never through what the adapter says.
var grpcMutants = []mutant{
	{
		name: "grpc_unavailable_executes",
		bug:  "the gRPC side's unavailable fault is taken for one that executes first, and so answers as the handler did",
		file: "internal/grpcwire/fault.go",
		old:  "\tcase FaultUnavailable, FaultGoAwayBelow:\n\t\treturn false\n",
		new:  "\tcase FaultGoAwayBelow:\n\t\treturn false\n",
		catch: map[string]string{
			// The fault then answers as the handler did: nothing is
			// refused, and the pinned refusal no longer happens.
			"grpc_unavailable_before_exec_grpcgo_default": "recovers: stale pin",
		},
	},
	{
		name: "grpc_unavailable_after_exec_answers",
		bug:  "unavailable_after_exec answers the request normally instead of UNAVAILABLE",
		file: "internal/grpcwire/stream.go",
		old:  "\t\tst.trailersOnly(Unavailable, \"injected unavailable after executing\", nil)\n",
		new:  "\t\tanswer()\n",
		catch: map[string]string{
			"grpc_unavailable_after_exec_grpcgo_retry": "exec_at_most_once: stale pin",
		},
	},
	{
		name: "grpc_unavailable_after_headers_trailers_only",
		bug:  "unavailable_after_headers sends no HEADERS first: a trailers-only UNAVAILABLE",
		file: "internal/grpcwire/stream.go",
		old:  "\t\tst.forget()\n\t\tc.queue(st.responseHeaders(), st.trailers(Unavailable, \"injected unavailable after headers\"))\n",
		new:  "\t\tst.trailersOnly(Unavailable, \"injected unavailable after headers\", nil)\n",
		catch: map[string]string{
			"grpc_unavailable_after_headers_grpcgo_retry": "pins no such violation",
		},
	},
	{
		name: "grpc_close_answers",
		bug:  "the close and reset faults answer the request instead of closing the connection",
		file: "internal/grpcwire/stream.go",
		old:  "\t\tc.closeWith(f.Kind == FaultReset)\n",
		new:  "\t\tanswer()\n",
		catch: map[string]string{
			"grpc_close_after_exec_grpcgo_retry": "exec_at_most_once: stale pin",
			"grpc_reset_after_exec_grpcgo_retry": "exec_at_most_once: stale pin",
		},
	},
	{
		name: "grpc_cut_data_without_headers",
		bug:  "cut_data sends its half DATA frame without the response HEADERS before it",
		file: "internal/grpcwire/stream.go",
		old:  "\t\tc.closeWith(false, st.responseHeaders(), op{kind: opRaw,",
		new:  "\t\tc.closeWith(false, op{kind: opRaw,",
		catch: map[string]string{
			"grpc_cut_data_after_exec_grpcgo_retry": "pins no such violation",
		},
	},
	{
		name: "grpc_rst_refuses_executed",
		bug:  "an rst fault after executing sends REFUSED_STREAM, whatever its code: it says unprocessed of a request that ran",
		file: "internal/grpcwire/stream.go",
		old:  "\t\tops := []op{{kind: opRST, stream: st.id, st: st, code: f.Code}}\n",
		new:  "\t\tops := []op{{kind: opRST, stream: st.id, st: st, code: http2.ErrCodeRefusedStream}}\n",
		catch: map[string]string{
			"grpc_rst_cancel_after_exec_grpcgo_default": "pins no such violation",
		},
	},
	{
		name: "grpc_goaway_below_covers",
		bug:  "goaway_below names the stream itself as the last one taken, though it did not run it",
		file: "internal/grpcwire/stream.go",
		old:  "\t\tlast := uint32(0)\n\t\tif st.id > 2 {\n\t\t\tlast = st.id - 2\n\t\t}\n",
		new:  "\t\tlast := st.id\n",
		catch: map[string]string{
			"grpc_goaway_below_grpcgo_default": "recovers: grpc-go violated recovers",
		},
	},
	{
		name: "grpc_goaway_cover_below",
		bug:  "goaway_cover names no stream as taken (last-stream-id 0): it says unprocessed of a request that ran",
		file: "internal/grpcwire/stream.go",
		old:  "\t\tc.closeWith(false, c.goAway(st.id, http2.ErrCodeNo, \"injected goaway_cover\"))\n",
		new:  "\t\tc.closeWith(false, c.goAway(0, http2.ErrCodeNo, \"injected goaway_cover\"))\n",
		catch: map[string]string{
			"grpc_goaway_cover_grpcgo_default": "exec_at_most_once: grpc-go violated exec_at_most_once",
		},
	},
	{
		name: "grpc_late_ignores_timeout",
		bug:  "the late fault times its answer from the request's arrival plus its delay, forgetting the grpc-timeout",
		file: "internal/grpcwire/stream.go",
		old:  "\t\t\tat = at.Add(st.timeout)\n",
		new:  "",
		catch: map[string]string{
			"grpc_late_answer_not_crossed_grpcgo_default": "the first get's answer comes after its deadline, yet it ended OK",
		},
	},
	{
		name: "grpc_noreply_answers",
		bug:  "the noreply fault answers",
		file: "internal/grpcwire/stream.go",
		old:  "\tcase FaultNoReply:\n",
		new:  "\tcase FaultNoReply:\n\t\tanswer()\n",
		catch: map[string]string{
			"grpc_noreply_within_deadline_grpcgo_default": "the server never answers, yet the call ended OK",
		},
	},
	{
		name: "grpc_pushback_zero",
		bug:  "the unavailable fault's pushback header says 0 ms, whatever its retry_after",
		file: "internal/grpcwire/stream.go",
		old:  "strconv.FormatInt(f.pushbackMs(), 10)",
		new:  "\"0\"",
		catch: map[string]string{
			"grpc_pushback_honoured_grpcgo_retry": "pushback_honoured: grpc-go violated pushback_honoured",
		},
	},
	{
		name: "grpc_executes_after_wait",
		bug:  "a request waiting for a busy worker watches neither its grpc-timeout nor the client's reset, and its timeout counts from when a worker takes it, not from its arrival",
		file: "internal/grpcwire/stream.go",
		old:  "\tselect {\n\tcase s.slots <- struct{}{}:\n\t\treturn release, true\n\tdefault:\n\t}\n",
		new:  "\ts.slots <- struct{}{}\n\tst.arrival = time.Now()\n\treturn release, true\n",
		catch: map[string]string{
			"grpc_server_skips_expired_grpcgo_default": "expired_not_executed: grpc-go violated expired_not_executed",
		},
	},
	{
		name: "grpc_wait_outlives_deadline",
		bug:  "a handler's wait ends only on a reset, not at the request's deadline: it sleeps on past it and executes",
		file: "internal/grpcwire/stream.go",
		old:  "\tif st.hasTimeout && s.h.MayBlock(&req) {\n\t\treq.Deadline, stop = deadlineAt(expiry)\n\t}\n",
		new:  "",
		catch: map[string]string{
			"grpcserver_deadline_stops_handler_rpcserver": "srv_deadline_stops_handler: rpcserver violated srv_deadline_stops_handler",
		},
	},
	{
		name: "grpc_silent_acks_pings",
		bug:  "the silent fault only stops the answer: the connection still acknowledges PINGs, so it is a noreply",
		file: "internal/grpcwire/stream.go",
		old:  "\tcase FaultSilent:\n\t\tc.silence()\n",
		new:  "\tcase FaultSilent:\n",
		catch: map[string]string{
			"grpc_silent_peer_grpcgo_keepalive": "dead_peer_detected: grpc-go violated dead_peer_detected",
		},
	},
}
