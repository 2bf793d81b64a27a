package evidence

import "github.com/rpcbench/rpcbench/internal/scenario/scenariotest"

// evidenceMutants are the bugs of issue 9 ("Scenarios that catch the bugs
// they exist for") that once passed the evidence group, one entry each;
// the decoder's three are separate. Those of issue 10 follow them; the
// network group's are in its own list.
var evidenceMutants = []scenariotest.Mutant{
	{
		Name: "give_up_status_last_attempt_only",
		Bug:  "a keyed debit whose first attempt timed out after executing, and whose retries were answered UNAVAILABLE, is reported UNAVAILABLE: the give-up status looks only at the last attempt",
		File: "internal/client/client.go",
		Old:  "\tif !call.Idempotent {\n\t\tfor _, a := range log {\n",
		New:  "\tif !call.Idempotent {\n\t\tfor _, a := range log[len(log)-1:] {\n",
		Catch: map[string]string{
			"keyed_unknown_stays_unknown": "status=UNAVAILABLE, want UNKNOWN",
		},
	},
	{
		Name: "write_timeout_batch_not_sent",
		Bug:  "a write that times out part-way through a batch puts the batch back as unwritten: requests already written end NOT_SENT and are re-sent",
		File: "internal/client/conn.go",
		Old:  "\t\tif _, err := c.nc.Write(buf); err != nil {\n\t\t\tc.fail(",
		New:  "\t\tif _, err := c.nc.Write(buf); err != nil {\n\t\t\tc.mu.Lock()\n\t\t\tc.queued = append(c.queued, ids...)\n\t\t\tc.mu.Unlock()\n\t\t\tc.fail(",
		Catch: map[string]string{
			"write_stall_written_not_resent": "want 0: a debit written before the stall was re-sent",
		},
	},
	{
		Name: "context_deadline_ignored",
		Bug:  "the caller's context deadline is ignored: the budget sent is the attempt timeout although the context allows 100 ms",
		File: "internal/client/call.go",
		Old:  "\tif d, ok := ctx.Deadline(); ok && d.Before(deadline) {\n\t\tdeadline = d\n\t}\n",
		New:  "",
		Catch: map[string]string{
			"budget_sent_is_time_left": "ctxDeadlineBudget=300ms, want at most 100ms",
		},
	},
	{
		Name: "dial_time_not_deducted",
		Bug:  "the first attempt on a freshly dialed connection sends the whole attempt timeout as its budget",
		File: "internal/client/client.go",
		Old:  "\t\tbudget = time.Until(deadline)\n\t\ta.BudgetMs = budgetMs(budget)\n",
		New:  "\t\tbudget = time.Until(deadline)\n",
		Catch: map[string]string{
			"budget_sent_is_time_left": "afterDialBudget=300ms, want at most 299ms",
		},
	},
	{
		Name: "expiry_off_by_one",
		Bug:  "the server's expiry check compares whole milliseconds with >, so a request with budgetMs 0 executes",
		File: "internal/server/worker.go",
		Old:  "if waited := time.Since(j.arrival); waited >= budget {",
		New:  "if waited := time.Since(j.arrival); waited.Milliseconds() > budget.Milliseconds() {",
		Catch: map[string]string{
			"zero_budget_not_executed": "readerPath=OK, want DEADLINE_EXCEEDED",
		},
	},
	{
		Name: "duplicate_executes_while_original_runs",
		Bug:  "a duplicate keyed request that arrives while its original is still executing executes too, as if it had no key",
		File: "internal/bank/bank.go",
		Old:  "\t\tcase ClaimRunning:\n\t\t\tans, err = b.store.Await(r.Key, fp, r.Expiry, r.Done)\n",
		New:  "\t\tcase ClaimRunning:\n\t\t\treturn b.apply(r, Hold{}, dst)\n",
		Catch: map[string]string{
			"duplicate_while_executing": "serverDebitExec=2, want 1",
		},
	},
	{
		Name: "duplicate_waits_past_budget",
		Bug:  "a duplicate keyed request waits for its original a second past its own budget",
		File: "internal/bank/bank.go",
		Old:  "b.store.Await(r.Key, fp, r.Expiry, r.Done)",
		New:  "b.store.Await(r.Key, fp, r.Expiry.Add(time.Second), r.Done)",
		Catch: map[string]string{
			"duplicate_while_executing": "replayed=true, want DEADLINE_EXCEEDED",
		},
	},
	{
		Name: "budget_not_capped_by_time_left",
		Bug:  "the budget is the attempt timeout, not capped by the time left before the call's deadline: 300 ms sent under a 100 ms deadline",
		File: "internal/client/call.go",
		Old:  "return min(s.attemptTimeout, s.deadline.Sub(now))",
		New:  "return s.attemptTimeout",
		Catch: map[string]string{
			"deadline_server_skips_expired": "budgetSent=300ms, want at most 100ms",
			"budget_sent_is_time_left":      "callTimeoutBudget=300ms, want at most 100ms",
		},
	},
	{
		Name: "decoder_accepts_length_23",
		Bug:  "the decoder accepts a length prefix of 23, one below the minimum, and waits for its body",
		File: "internal/proto/decoder.go",
		Old:  "if n < MinFrameLen || n > MaxFrameLen {",
		New:  "if n < MinFrameLen-1 || n > MaxFrameLen {",
		Catch: map[string]string{
			"decoder_split_model": "minMinus1Rejected=false",
		},
	},
	{
		Name: "decoder_not_dead_after_error",
		Bug:  "the decoder does not stay dead after an error: a later Feed decodes again",
		File: "internal/proto/decoder.go",
		Old:  "\tif d.err != nil {\n\t\treturn frames, d.err\n\t}\n",
		New:  "",
		Catch: map[string]string{
			"decoder_split_model": "deadAfterError=1 frames, error <nil>, want 0 frames, same error",
		},
	},
	{
		Name: "decoder_drops_frames_before_bad",
		Bug:  "the decoder drops the frames that were complete before a bad one in the same Feed",
		File: "internal/proto/decoder.go",
		Old:  "\t\t\td.fail(err)\n\t\t\treturn frames, d.err\n",
		New:  "\t\t\td.fail(err)\n\t\t\treturn nil, d.err\n",
		Catch: map[string]string{
			"decoder_split_model":              "framesBeforeBadMagic=0 frames, then bad magic 0xdead, want 2 frames",
			"server_split_and_invalid_request": "validThenBadAnswered=none, want 1",
		},
	},
	{
		Name: "frames_after_response_frame_served",
		Bug:  "the server drops a RESPONSE frame from a client but still serves the frames after it",
		File: "internal/proto/reader.go",
		Old:  "\t\t\tframes = frames[:i]\n",
		New:  "\t\t\tframes = append(frames[:i], frames[i+1:]...)\n",
		Catch: map[string]string{
			"server_split_and_invalid_request": "responseThenRequestBalance=990, want 1000",
		},
	},
	{
		Name: "deadline_exceeded_final",
		Bug:  "a server's DEADLINE_EXCEEDED answer is treated as final, so a debit it says was not executed is not retried",
		File: "internal/client/class.go",
		Old:  "case proto.StatusUnavailable, proto.StatusDeadlineExceeded:",
		New:  "case proto.StatusUnavailable:",
		Catch: map[string]string{
			"deadline_exceeded_answer_retried": "status=DEADLINE_EXCEEDED, want OK",
		},
	},
	{
		Name: "backoff_doubles_once_too_often",
		Bug:  "the backoff doubles once too often: 40, 80, 160 ms instead of 20, 40, 80",
		File: "internal/client/client.go",
		Old:  "for i := 1; i < n && d < c.cfg.BackoffMax; i++ {",
		New:  "for i := 0; i < n && d < c.cfg.BackoffMax; i++ {",
		Catch: map[string]string{
			"connect_refused_bounded_retry":    "pause1Of60ms=40ms, want 20ms",
			"retry_unavailable_non_idempotent": "want at most 24ms",
		},
	},
}

// statusMutants are the bugs of issue 26 ("Behaviours no test pins") in
// the server's limits that the evidence group must catch.
var statusMutants = []scenariotest.Mutant{
	{
		Name: "request_status_accepted",
		Bug:  "the decoder checks that a status is one that travels but not that a request carries none: a REQUEST with a status is served",
		File: "internal/proto/decoder.go",
		Old:  "\tif f.Type == TypeRequest && f.Status != StatusOK {\n\t\treturn f, protocolErrorf(\"request with status %d\", b[16])\n\t}\n",
		New:  "",
		Catch: map[string]string{
			"decoder_split_model":              "framesBeforeRequestWithStatus=2 frames, then <nil>",
			"server_split_and_invalid_request": "requestWithStatusAnswered=1,2, want none",
		},
	},
}
