package governance

import "github.com/rpcbench/rpcbench/internal/scenario/scenariotest"

// governanceMutants are the bugs of issue 26 ("Behaviours no test pins")
// that the governance group must catch: the breaker's and the retry
// budget's exact thresholds, and hedges under deadlines and governance.
var governanceMutants = []scenariotest.Mutant{
	{
		Name: "breaker_extra_probe",
		Bug:  "the half-open breaker lets one probe more than Probes through",
		File: "internal/client/breaker.go",
		Old:  "if b.probes < b.cfg.Probes {",
		New:  "if b.probes <= b.cfg.Probes {",
		Catch: map[string]string{
			"breaker_opens_and_recovers": "probeRequests=3, want 2",
		},
	},
	{
		Name: "breaker_closes_on_first_probe",
		Bug:  "the half-open breaker closes as soon as one probe passes, whatever Probes says",
		File: "internal/client/breaker.go",
		Old:  "b.passed >= b.cfg.Probes {",
		New:  "b.passed >= 1 {",
		Catch: map[string]string{
			"breaker_opens_and_recovers": "afterOneProbePassed=closed, want half-open",
		},
	},
	{
		Name: "breaker_slow_probe_passes",
		Bug:  "a half-open breaker set on slow calls reopens only on a failed probe: one answered OK but slowly closes it",
		File: "internal/client/breaker.go",
		Old:  "case b.st == breakerHalfOpen && (v == verdictFailure || slow):",
		New:  "case b.st == breakerHalfOpen && v == verdictFailure:",
		Catch: map[string]string{
			"breaker_trips_on_slow_calls": "afterSlowProbe=closed, want open",
		},
	},
	{
		Name: "breaker_min_calls_off_by_one",
		Bug:  "the breaker needs one attempt more than MinCalls in its window before it may open",
		File: "internal/client/breaker.go",
		Old:  "return b.total.calls >= b.cfg.MinCalls &&",
		New:  "return b.total.calls > b.cfg.MinCalls &&",
		Catch: map[string]string{
			"breaker_opens_and_recovers": "failedBeforeOpen=11, want 10",
		},
	},
	{
		Name: "retry_budget_threshold_inclusive",
		Bug:  "the retry budget lets a call retry with exactly half its tokens left, not only with more than half",
		File: "internal/client/governance.go",
		Old:  "return 2*b.tokens.Load() > b.max",
		New:  "return 2*b.tokens.Load() >= b.max",
		Catch: map[string]string{
			"retry_budget_caps_amplification": "refusedCallAttempts=4,2,1,1,1,1,1,1, want 4,1,1,1,1,1,1,1",
		},
	},
	{
		Name: "retry_budget_uncapped",
		Bug:  "answers give tokens back past MaxTokens: a budget that saw many answers allows a burst of retries",
		File: "internal/client/governance.go",
		Old:  "n := min(max(old+delta, 0), b.max)",
		New:  "n := max(old+delta, 0)",
		Catch: map[string]string{
			"retry_budget_caps_amplification": "refusedCallAttempts=4,3,1,1,1,1,1,1, want 4,1,1,1,1,1,1,1",
		},
	},
	{
		Name: "hedge_budget_from_round_start",
		Bug:  "a hedge sends the budget its round started with, not what is left of the call at its own launch, and outlives the call's deadline",
		File: "internal/client/hedge.go",
		Old:  "i, budget, prev := len(starts), s.budget(at), s.previous()",
		New:  "i, budget, prev := len(starts), s.budget(now), s.previous()",
		Catch: map[string]string{
			"hedge_budget_is_time_left": "want at most 300ms",
		},
	},
	{
		Name: "hedge_budget_whole_attempt",
		Bug:  "a hedge sends the whole attempt timeout as its budget, ignoring the call's deadline",
		File: "internal/client/hedge.go",
		Old:  "i, budget, prev := len(starts), s.budget(at), s.previous()",
		New:  "i, budget, prev := len(starts), s.attemptTimeout, s.previous()",
		Catch: map[string]string{
			"hedge_budget_is_time_left": "want at most 300ms",
		},
	},
	{
		Name: "abandoned_attempt_is_failure",
		Bug:  "an attempt abandoned because its hedge won is judged a failure: the breaker and the retry budget count every hedge win against the server",
		File: "internal/client/governance.go",
		Old:  ", errors.Is(ctx.Err(), context.Canceled),\n\t\terrors.Is(r.err, errAbandoned), r.drained:",
		New:  ", errors.Is(ctx.Err(), context.Canceled),\n\t\tr.drained:",
		Catch: map[string]string{
			"hedge_wins_not_failures": "breaker=open, want closed",
		},
	},
	{
		Name: "retry_budget_spends_on_abandoned",
		Bug:  "the retry budget spends a token on every attempt without a FINAL answer, abandoned ones included, so hedge wins drain it until it refuses the hedges themselves",
		File: "internal/client/governance.go",
		Old:  "\tcase verdictFailure:\n\t\tdelta = -tokenScale\n\tdefault:\n\t\treturn\n",
		New:  "\tdefault:\n\t\tdelta = -tokenScale\n",
		Catch: map[string]string{
			"hedge_wins_not_failures": "want map[OK:20]",
		},
	},
}

// cancelMutants are the bugs of issue 26 ("Behaviours no test pins") in
// the server's cancellation that the governance group must catch.
var cancelMutants = []scenariotest.Mutant{
	{
		Name: "cancel_matches_any_conn",
		Bug:  "ctl.cancel marks the queued request with the ID named whatever its connection: a cancel on connection B drops connection A's request",
		File: "internal/server/queue.go",
		Old:  "if j := &q.jobs[i]; j.c == c && j.f.ID == id {",
		New:  "if j := &q.jobs[i]; j.f.ID == id {",
		Catch: map[string]string{
			"cancel_skips_queued_work": "foreignFound=true, want false",
		},
	},
}
