package cases

// robustnessMutants are the bugs of issue 26 ("Behaviours no test pins") that
// the robustness and evidence groups' server limits must catch.
var robustnessMutants = []mutant{
	{
		name: "conn_share_one_more",
		bug:  "the per-connection share is checked with > instead of >=: a connection may have -queue-per-conn+1 requests queued or executing",
		file: "internal/server/conn.go",
		old:  "if c.queued.Load() >= int32(s.cfg.MaxQueuedPerConn) {",
		new:  "if c.queued.Load() > int32(s.cfg.MaxQueuedPerConn) {",
		catch: map[string]string{
			"backpressure_conn_share": "shareAccepted=5, want 4",
		},
	},
	{
		name: "conn_share_one_fewer",
		bug:  "the per-connection share counts the arriving request as well as those it holds: a connection gets only -queue-per-conn-1 requests queued or executing",
		file: "internal/server/conn.go",
		old:  "if c.queued.Load() >= int32(s.cfg.MaxQueuedPerConn) {",
		new:  "if c.queued.Load()+1 >= int32(s.cfg.MaxQueuedPerConn) {",
		catch: map[string]string{
			"backpressure_conn_share": "shareAccepted=3, want 4",
		},
	},
	{
		name: "max_conns_one_more",
		bug:  "the connection limit is checked with > instead of >=: -max-conns+1 connections are served",
		file: "internal/server/server.go",
		old:  "if open := len(s.conns); open >= s.cfg.MaxConns {",
		new:  "if open := len(s.conns); open > s.cfg.MaxConns {",
		catch: map[string]string{
			"hostile_conns_past_limit": "served=9, want 8",
		},
	},
	{
		name: "max_conns_one_fewer",
		bug:  "the connection limit counts the connection just accepted among those open: only -max-conns-1 connections are served",
		file: "internal/server/server.go",
		old:  "if open := len(s.conns); open >= s.cfg.MaxConns {",
		new:  "if open := len(s.conns) + 1; open >= s.cfg.MaxConns {",
		catch: map[string]string{
			"hostile_conns_past_limit": "served=7, want 8",
		},
	},
	{
		name: "inline_claim_ignores_queue",
		bug:  "the reader's fast path claims a slot whenever one is free, queued requests or not: a get runs inline ahead of a debit queued before it and not yet taken by a worker",
		file: "internal/server/queue.go",
		old:  "if q.closed.Load() || q.waiting.Load() > 0 {",
		new:  "if q.closed.Load() {",
		catch: map[string]string{
			"inline_never_overtakes_queue": "rounds whose get executed before the debit queued ahead of it",
		},
	},
	{
		name: "cancel_matches_any_conn",
		bug:  "ctl.cancel marks the queued request with the ID named whatever its connection: a cancel on connection B drops connection A's request",
		file: "internal/server/queue.go",
		old:  "if j := &q.jobs[i]; j.c == c && j.f.ID == id {",
		new:  "if j := &q.jobs[i]; j.f.ID == id {",
		catch: map[string]string{
			"cancel_skips_queued_work": "foreignFound=true, want false",
		},
	},
	{
		name: "request_status_accepted",
		bug:  "the decoder checks that a status is one that travels but not that a request carries none: a REQUEST with a status is served",
		file: "internal/proto/decoder.go",
		old:  "\tif f.Type == TypeRequest && f.Status != StatusOK {\n\t\treturn f, protocolErrorf(\"request with status %d\", b[16])\n\t}\n",
		new:  "",
		catch: map[string]string{
			"decoder_split_model":              "framesBeforeRequestWithStatus=2 frames, then <nil>",
			"server_split_and_invalid_request": "requestWithStatusAnswered=1,2, want none",
		},
	},
}
