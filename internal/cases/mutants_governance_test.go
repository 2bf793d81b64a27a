package cases

// governanceMutants are the bugs of issue 26 ("Behaviours no test pins")
// that the governance group must catch: the breaker's and the retry
// budget's exact thresholds, and hedges under deadlines and governance.
var governanceMutants = []mutant{
	{
		name: "breaker_extra_probe",
		bug:  "the half-open breaker lets one probe more than Probes through",
		file: "internal/client/breaker.go",
		old:  "if b.probes < b.cfg.Probes {",
		new:  "if b.probes <= b.cfg.Probes {",
		catch: map[string]string{
			"breaker_opens_and_recovers": "probeRequests=3, want 2",
		},
	},
	{
		name: "breaker_closes_on_first_probe",
		bug:  "the half-open breaker closes as soon as one probe passes, whatever Probes says",
		file: "internal/client/breaker.go",
		old:  "b.passed >= b.cfg.Probes {",
		new:  "b.passed >= 1 {",
		catch: map[string]string{
			"breaker_opens_and_recovers": "afterOneProbePassed=closed, want half-open",
		},
	},
	{
		name: "breaker_slow_probe_passes",
		bug:  "a half-open breaker set on slow calls reopens only on a failed probe: one answered OK but slowly closes it",
		file: "internal/client/breaker.go",
		old:  "case b.st == breakerHalfOpen && (v == verdictFailure || slow):",
		new:  "case b.st == breakerHalfOpen && v == verdictFailure:",
		catch: map[string]string{
			"breaker_trips_on_slow_calls": "afterSlowProbe=closed, want open",
		},
	},
	{
		name: "breaker_min_calls_off_by_one",
		bug:  "the breaker needs one attempt more than MinCalls in its window before it may open",
		file: "internal/client/breaker.go",
		old:  "return b.total.calls >= b.cfg.MinCalls &&",
		new:  "return b.total.calls > b.cfg.MinCalls &&",
		catch: map[string]string{
			"breaker_opens_and_recovers": "failedBeforeOpen=11, want 10",
		},
	},
	{
		name: "retry_budget_threshold_inclusive",
		bug:  "the retry budget lets a call retry with exactly half its tokens left, not only with more than half",
		file: "internal/client/governance.go",
		old:  "return 2*b.tokens.Load() > b.max",
		new:  "return 2*b.tokens.Load() >= b.max",
		catch: map[string]string{
			"retry_budget_caps_amplification": "refusedCallAttempts=4,2,1,1,1,1,1,1, want 4,1,1,1,1,1,1,1",
		},
	},
	{
		name: "retry_budget_uncapped",
		bug:  "answers give tokens back past MaxTokens: a budget that saw many answers allows a burst of retries",
		file: "internal/client/governance.go",
		old:  "n := min(max(old+delta, 0), b.max)",
		new:  "n := max(old+delta, 0)",
		catch: map[string]string{
			"retry_budget_caps_amplification": "refusedCallAttempts=4,3,1,1,1,1,1,1, want 4,1,1,1,1,1,1,1",
		},
	},
	{
		name: "hedge_budget_from_round_start",
		bug:  "a hedge sends the budget its round started with, not what is left of the call at its own launch, and outlives the call's deadline",
		file: "internal/client/hedge.go",
		old:  "i, budget, prev := len(starts), s.budget(at), s.previous()",
		new:  "i, budget, prev := len(starts), s.budget(now), s.previous()",
		catch: map[string]string{
			"hedge_budget_is_time_left": "want at most 300ms",
		},
	},
	{
		name: "hedge_budget_whole_attempt",
		bug:  "a hedge sends the whole attempt timeout as its budget, ignoring the call's deadline",
		file: "internal/client/hedge.go",
		old:  "i, budget, prev := len(starts), s.budget(at), s.previous()",
		new:  "i, budget, prev := len(starts), s.attemptTimeout, s.previous()",
		catch: map[string]string{
			"hedge_budget_is_time_left": "want at most 300ms",
		},
	},
	{
		name: "abandoned_attempt_is_failure",
		bug:  "an attempt abandoned because its hedge won is judged a failure: the breaker and the retry budget count every hedge win against the server",
		file: "internal/client/governance.go",
		old:  ", errors.Is(ctx.Err(), context.Canceled),\n\t\terrors.Is(r.err, errAbandoned), r.drained:",
		new:  ", errors.Is(ctx.Err(), context.Canceled),\n\t\tr.drained:",
		catch: map[string]string{
			"hedge_wins_not_failures": "breaker=open, want closed",
		},
	},
	{
		name: "retry_budget_spends_on_abandoned",
		bug:  "the retry budget spends a token on every attempt without a FINAL answer, abandoned ones included, so hedge wins drain it until it refuses the hedges themselves",
		file: "internal/client/governance.go",
		old:  "\tcase verdictFailure:\n\t\tdelta = -tokenScale\n\tdefault:\n\t\treturn\n",
		new:  "\tdefault:\n\t\tdelta = -tokenScale\n",
		catch: map[string]string{
			"hedge_wins_not_failures": "want map[OK:20]",
		},
	},
}
