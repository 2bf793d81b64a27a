package governance

import "github.com/rpcbench/rpcbench/internal/scenario"

// Group holds the scenarios of the client's opt-in governance:
// retry budget, circuit breaker, in-flight cap, rate limit.
const Group = "governance"

// Cases lists the governance group in run order.
func Cases() []scenario.Case {
	g := func(name, doc string, run func(*scenario.T)) scenario.Case {
		return scenario.Case{Name: name, Group: Group, Doc: doc, Body: run}
	}
	return []scenario.Case{
		g("retry_budget_caps_amplification", "a server refusing every request: with a retry budget (10 tokens, ratio 0.1) 1000 calls send at most 1000x1.1+10 requests; made one at a time, calls retry exactly while more than 5 tokens are left after a refusal: 4 attempts on a full bucket, then 1, and again 2 after 61 answers", retryBudgetCapsAmplification),
		g("negative_control_no_retry_budget", "negative control: the same without a budget sends every call's 4 attempts, 4000 requests", negativeControlNoRetryBudget),
		g("breaker_opens_and_recovers", "a failing server opens the breaker; while open calls fail fast and reach no server; a failed probe opens it again; once the server recovers, half-open lets exactly its 2 probes through among 4 calls at once, stays half-open after the first passes and closes after the second", breakerOpensAndRecovers),
		g("breaker_trips_on_slow_calls", "a server answering OK but slowly opens a breaker set on slow calls alone; a slow probe, answered OK, opens it again, a fast one closes it", breakerTripsOnSlowCalls),
		g("inflight_permits_released_on_every_path", "calls ending in success, timeout, cancel, connection loss and local rejection all give their in-flight permit back: the full cap is usable afterwards", inflightPermitsReleased),
		g("hedge_budget_is_time_left", "a 600ms call hedged after 300ms, attempts allowed 5s: the hedge sends at most the 300ms left at its own launch, and a call whose every attempt is held ends by its deadline, hedge included", hedgeBudgetIsTimeLeft),
		g("hedge_wins_not_failures", "hedging with a breaker and a retry budget on: 20 calls whose held first attempts lose to their hedges all end OK, the breaker stays closed and the budget full, so a refused call then makes all 4 attempts", hedgeWinsNotFailures),
		g("hedge_cuts_tail", "200 gets, one in ten slowed 300ms by the server: hedged after 30ms, p99 stays near the hedge delay plus a fast answer, at most one extra request per slow call (plus slack); a keyless debit is never hedged", hedgeCutsTail),
		g("pushback_honoured", "UNAVAILABLE with a retry-after hint: the client pauses at least the hint (200ms) before retrying, stops at once (server_pushback) when the hint outlasts the call's deadline, and does not retry on retry_after=never", pushbackHonoured),
		g("cancel_skips_queued_work", "one worker busy with a 300ms get; a keyless debit queued behind it is canceled by its caller after 50ms: with CancelAbandoned the client sends ctl.cancel and the server drops the debit unexecuted (exec.debit=0, canceled=1); without it the debit executes once the worker frees (exec.debit=1)", cancelSkipsQueuedWork),
		g("negative_control_inflight_leak", "negative control: a limiter that keeps the permit of a timed-out call (a release missing on the timeout path) is exhausted by timeouts and refuses everything after", negativeControlInflightLeak),
	}
}
