package governance

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// The calls of hedge_cuts_tail: hedgeCalls gets, every hedgeSlowEvery-th
// of which meets a server that sleeps hedgeSlow before executing its
// first request, with hedges sent after hedgeDelay.
const (
	hedgeCalls     = 200
	hedgeSlowEvery = 10
	hedgeSlow      = 300 * time.Millisecond
	hedgeDelay     = 30 * time.Millisecond
	// hedgeP99Bound is the hedge delay plus a fast answer, with room for
	// a loaded 2-core machine; an unhedged slow call takes hedgeSlow.
	hedgeP99Bound = 150 * time.Millisecond
	// hedgeSpurious is how many hedges beyond one per slow call a loaded
	// machine may send, for fast calls that still took hedgeDelay.
	hedgeSpurious = hedgeCalls / 20
)

// slowNextGet makes the server sleep hedgeSlow before executing the next
// get it receives, and only that one. The slowness is the server's, not
// the payload's: a sleep field would make a hedge, which carries the same
// payload, just as slow.
func slowNextGet(t *scenario.T, s *scenario.Server) {
	t.Control(s, serverapi.MethodFault, fmt.Sprintf("kind=sleep method=get count=1 delay=%v", hedgeSlow))
}

func hedgeCutsTail(t *scenario.T) {
	// Enough workers that the abandoned slow requests, still sleeping,
	// leave some free for the hedges.
	s := t.StartServer(scenario.ServerOpts{Workers: 16})

	// Without hedging a slow get takes all of hedgeSlow.
	plain := t.Client(s.Addr, client.DefaultConfig())
	slowNextGet(t, s)
	r := plain.Do(t.Ctx, scenario.GetCall("acct-H"))
	scenario.Expect(t, "unhedgedStatus", r.Status.String(), proto.StatusOK.String())
	scenario.Between(t, "unhedgedSlow", r.Elapsed, hedgeSlow, -1)

	cfg := client.DefaultConfig()
	cfg.Hedge = &client.HedgeConfig{Delay: hedgeDelay}
	c := t.Client(s.Addr, cfg)
	before := t.Counters(s).RequestsGet
	lat := make([]time.Duration, 0, hedgeCalls)
	slow, failed := 0, 0
	for i := range hedgeCalls {
		if i%hedgeSlowEvery == 0 {
			slowNextGet(t, s)
			slow++
		}
		r := c.Do(t.Ctx, scenario.GetCall("acct-H"))
		if r.Status != proto.StatusOK {
			failed++
		}
		lat = append(lat, r.Elapsed)
	}
	requests := t.Counters(s).RequestsGet - before
	slices.Sort(lat)
	scenario.Expect(t, "failed", failed, 0)
	// The 99th percentile of 200 is the 198th fastest; with one call in
	// ten slow it is a slow call's, answered by its hedge.
	scenario.Within(t, "p99", lat[(len(lat)*99+99)/100-1], hedgeP99Bound)
	st := c.Stats()
	scenario.AtLeast(t, "hedgeWins", st.HedgeWins, int64(slow), "every slow call's hedge answers first")
	scenario.AtMost(t, "extraRequests", requests-hedgeCalls, int64(slow+hedgeSpurious), "one hedge per slow call, and few for fast calls")
	t.Volatile("hedges", st.Hedges)

	// A keyless debit is never hedged, however slow.
	debit := scenario.DebitCall("acct-H", 1, "")
	debit.Payload = append(debit.Payload, " sleep=100"...)
	r = c.Do(t.Ctx, debit)
	scenario.Expect(t, "debitStatus", r.Status.String(), proto.StatusOK.String())
	scenario.Expectf(t, "debitAttempts", r.Attempts, 1, "a keyless debit must not be hedged: %s", scenario.AttemptLog(r))
	scenario.Between(t, "debitSlow", r.Elapsed, 100*time.Millisecond, -1)
	scenario.Expect(t, "debitHedges", c.Stats().Hedges-st.Hedges, 0)
}

// The call of hedge_budget_is_time_left: hedgeTotal long, hedged after
// hedgeLate, with attempts allowed far longer than the call, so that the
// call's deadline, not the attempt timeout, is what limits each attempt.
const (
	hedgeTotal   = 600 * time.Millisecond
	hedgeLate    = 300 * time.Millisecond
	hedgeAttempt = 5 * time.Second
	// hedgeOverrun is how long past its deadline a call may end on a
	// loaded 2-core machine. A hedge sent its whole attempt, or the
	// budget its round started with, would end hedgeLate past it.
	hedgeOverrun = hedgeLate / 2
)

// hedgeBudgetIsTimeLeft checks the budget rule on hedges: each hedge
// sends what is left of the call at its own launch, and the call ends by
// its deadline.
//
//   - The server holds the first get of a call for longer than the call;
//     its hedge, sent hedgeLate in, is answered at once, and the server's
//     answer says what budget it received: at most hedgeTotal-hedgeLate.
//   - Every attempt of the next call is held, by its payload, for longer
//     than the call: the call must end at its deadline, hedge included,
//     not when an attempt's own timeout or a stale budget would have.
func hedgeBudgetIsTimeLeft(t *scenario.T) {
	s := t.StartServer(scenario.ServerOpts{Workers: 8})
	cfg := client.DefaultConfig()
	cfg.AttemptTimeout = hedgeAttempt
	cfg.Hedge = &client.HedgeConfig{Delay: hedgeLate}
	c := t.Client(s.Addr, cfg)
	if r := c.Do(t.Ctx, scenario.GetCall("acct-HB")); r.Status != proto.StatusOK {
		t.Fatalf("first get, to open the connection: %s", scenario.AttemptLog(r))
	}
	t.Field("callTimeout", scenario.Millis(hedgeTotal))
	t.Field("hedgeDelay", scenario.Millis(hedgeLate))
	t.Field("attemptTimeout", scenario.Millis(hedgeAttempt))

	t.Control(s, serverapi.MethodFault, fmt.Sprintf("kind=sleep method=get count=1 delay=%v", hedgeAttempt))
	call := scenario.GetCall("acct-HB")
	call.Timeout = hedgeTotal
	r := c.Do(t.Ctx, call)
	won := len(r.Log) == 2 && r.Log[1].Hedge && r.Log[1].Class == client.ClassFinal
	scenario.Expectf(t, "heldCall", fmt.Sprintf("%s hedgeWon=%v", r.Status, won), "OK hedgeWon=true", "%s", scenario.AttemptLog(r))
	if won {
		n, err := strconv.ParseUint(scenario.PayloadFields(r)["budget"], 10, 32)
		if err != nil {
			t.Fatalf("the hedge's answer %q has no budget", r.Payload)
		}
		scenario.Within(t, "primaryBudget", scenario.Budget(r.Log[0].BudgetMs), hedgeTotal)
		scenario.Within(t, "hedgeBudget", scenario.Budget(uint32(n)), hedgeTotal-hedgeLate)
	}

	slow := scenario.GetCall("acct-HB")
	slow.Timeout = hedgeTotal
	slow.Payload = fmt.Appendf(slow.Payload, " sleep=%d", hedgeAttempt.Milliseconds())
	r = c.Do(t.Ctx, slow)
	hedged := len(r.Log) == 2 && r.Log[1].Hedge
	scenario.Expectf(t, "slowCall", fmt.Sprintf("%s hedged=%v", r.Status, hedged), proto.StatusDeadlineExceeded.String()+" hedged=true", "%s", scenario.AttemptLog(r))
	scenario.Within(t, "slowCallElapsed", r.Elapsed, hedgeTotal+hedgeOverrun)
}

// hedgeWinsNotFailures runs hedging with the breaker and the retry
// budget on. The server holds the first attempt of every call; each
// call's hedge wins and the held attempt is abandoned. An abandoned
// attempt says nothing about the server: counted as a failure, half the
// attempts would have failed, which opens this breaker (a quarter of at
// least 5) and empties the budget. So the breaker must stay closed, and
// the budget full: a call the server then refuses makes all 4 of its
// attempts, which needs more than 8 of the 10 tokens.
func hedgeWinsNotFailures(t *scenario.T) {
	s := t.StartServer(scenario.ServerOpts{Workers: 16})
	cfg := client.DefaultConfig()
	cfg.BackoffInitial, cfg.BackoffMax, cfg.Jitter = time.Millisecond, time.Millisecond, 0
	cfg.Hedge = &client.HedgeConfig{Delay: hedgeDelay}
	cfg.Breaker = &client.BreakerConfig{Window: 10 * time.Second, Bucket: time.Second, MinCalls: 5,
		FailureRate: 0.25, OpenFor: 10 * time.Second, Probes: 1}
	cfg.RetryBudget = &client.RetryBudget{MaxTokens: budgetTokens, TokenRatio: budgetRatio}
	c := t.Client(s.Addr, cfg)
	const calls = 20
	ends := map[string]int{}
	for range calls {
		slowNextGet(t, s)
		ends[c.Do(t.Ctx, scenario.GetCall("acct-HW")).Status.String()]++
	}
	st := c.Stats()
	scenario.Expect(t, "ends", fmt.Sprint(ends), fmt.Sprint(map[string]int{"OK": calls}))
	scenario.Expectf(t, "hedgeWins", st.HedgeWins, int64(calls), "each call's held attempt must lose to its hedge")
	scenario.Expect(t, "breaker", c.BreakerState(), "closed")
	scenario.Expect(t, "rejectedCircuitOpen", st.RejectedCircuitOpen, int64(0))
	scenario.Expect(t, "retriesThrottled", st.RetriesThrottled, int64(0))

	t.Control(s, serverapi.MethodFault, "kind=unavailable method=get")
	before := t.Counters(s).RequestsGet
	r := c.Do(t.Ctx, scenario.GetCall("acct-HW"))
	scenario.Expectf(t, "refusedCallRequests", t.Counters(s).RequestsGet-before, int64(client.DefaultConfig().MaxAttempts),
		"a full budget retries a refused call to its last attempt: %s", scenario.AttemptLog(r))
}
