package governance

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// amplificationCalls are the calls of the retry-budget scenarios, made by
// concurrency goroutines.
const (
	amplificationCalls = 1000
	concurrency        = 32
)

// amplify makes amplificationCalls gets against a server refusing every
// one UNAVAILABLE and returns how many requests reached it.
func amplify(t *scenario.T, budget *client.RetryBudget) (requests int64, stats client.Stats) {
	s := t.StartServer(scenario.ServerOpts{NoExecLog: true, Faults: []string{"kind=unavailable"}})
	cfg := client.DefaultConfig()
	cfg.BackoffInitial, cfg.BackoffMax, cfg.Jitter = time.Millisecond, 4*time.Millisecond, 0
	cfg.RetryBudget = budget
	c := t.Client(s.Addr, cfg)
	before := t.Counters(s).RequestsGet
	var wg sync.WaitGroup
	var next atomic.Int64
	for range concurrency {
		wg.Go(func() {
			for next.Add(1) <= amplificationCalls {
				c.Do(t.Ctx, scenario.GetCall("acct-A"))
			}
		})
	}
	wg.Wait()
	return t.Counters(s).RequestsGet - before, c.Stats()
}

// The retry budget of the budget scenarios: 10 tokens, a tenth of one
// given back by each answer.
const (
	budgetTokens = 10
	budgetRatio  = 0.1
)

func retryBudgetCapsAmplification(t *scenario.T) {
	t.Field("calls", amplificationCalls)
	t.Field("maxAttempts", client.DefaultConfig().MaxAttempts)
	requests, st := amplify(t, &client.RetryBudget{MaxTokens: budgetTokens, TokenRatio: budgetRatio})
	bound := int64(amplificationCalls*(1+budgetRatio)) + budgetTokens
	scenario.AtMost(t, "serverRequests", requests, bound, "the budget must cap the retries")
	scenario.AtLeast(t, "retriesThrottled", st.RetriesThrottled, 1, "the budget never refused a retry")
	budgetThreshold(t)
}

// budgetThreshold makes calls one at a time, so that the tokens, and
// with them the retries the budget allows, are exact; the server's
// request counter says how many attempts each call made. A refused
// attempt spends a token and the call may then retry only while more
// than half of the 10 are left; an answer gives back 0.1, up to 10.
//
//   - 20 answers on a full bucket leave it at 10, its cap.
//   - With every get refused, the first call spends 4 tokens on its 4
//     attempts (9, 8, 7: each leaves more than 5, so it retries), the
//     second one, leaving 5, which is not more than half, and so does
//     every call after it, down to 0 after 8 calls.
//   - 60 answers bring the bucket back to 6: a refused call is left
//     with 5 and is not retried. 11 more bring 5 to 6.1: a refused call
//     is left with 5.1 and is retried.
func budgetThreshold(t *scenario.T) {
	s := t.StartServer(scenario.ServerOpts{NoExecLog: true})
	cfg := client.DefaultConfig()
	cfg.BackoffInitial, cfg.BackoffMax, cfg.Jitter = time.Millisecond, time.Millisecond, 0
	cfg.RetryBudget = &client.RetryBudget{MaxTokens: budgetTokens, TokenRatio: budgetRatio}
	c := t.Client(s.Addr, cfg)
	call := func() (client.Result, int64) {
		before := t.Counters(s).RequestsGet
		r := c.Do(t.Ctx, scenario.GetCall("acct-R"))
		return r, t.Counters(s).RequestsGet - before
	}
	answer := func(n int) {
		for range n {
			if r, _ := call(); r.Status != proto.StatusOK {
				t.Fatalf("a get the server serves: %s", scenario.AttemptLog(r))
			}
		}
	}
	answer(20)
	t.Control(s, serverapi.MethodFault, "kind=unavailable method=get")
	var refused []string
	for range 8 {
		_, n := call()
		refused = append(refused, fmt.Sprint(n))
	}
	scenario.Expectf(t, "refusedCallAttempts", strings.Join(refused, ","), "4,1,1,1,1,1,1,1",
		"each call's requests to a server refusing all: 4 on a full bucket, then none retried at 5 tokens or fewer")
	t.Control(s, serverapi.MethodClear, "")
	answer(60)
	t.Control(s, serverapi.MethodFault, "kind=unavailable method=get count=1")
	r, n := call()
	scenario.Expectf(t, "refusedAfter60Answers", fmt.Sprintf("%s after %d", r.Status, n), "UNAVAILABLE after 1", "6 tokens, 5 after the refusal: %s", scenario.AttemptLog(r))
	answer(11)
	t.Control(s, serverapi.MethodFault, "kind=unavailable method=get count=1")
	r, n = call()
	scenario.Expectf(t, "refusedAfter11More", fmt.Sprintf("%s after %d", r.Status, n), "OK after 2", "6.1 tokens, 5.1 after the refusal: %s", scenario.AttemptLog(r))
}

func negativeControlNoRetryBudget(t *scenario.T) {
	maxAttempts := client.DefaultConfig().MaxAttempts
	t.Field("expectAmplification", true)
	t.Field("calls", amplificationCalls)
	requests, _ := amplify(t, nil)
	scenario.Expectf(t, "serverRequests", requests, int64(amplificationCalls*maxAttempts),
		"without a budget every call sends all %d attempts to a server that refuses them all", maxAttempts)
}

// breakerConfig trips on half the attempts of at least 10 in a 2s window
// failing, stays open 300ms, and lets 2 probes through.
func breakerConfig() *client.BreakerConfig {
	return &client.BreakerConfig{Window: 2 * time.Second, Bucket: 100 * time.Millisecond, MinCalls: 10,
		FailureRate: 0.5, OpenFor: 300 * time.Millisecond, Probes: 2}
}

func breakerOpensAndRecovers(t *scenario.T) {
	s := t.StartServer(scenario.ServerOpts{})
	t.Control(s, serverapi.MethodFault, "kind=unavailable method=get")
	cfg := client.DefaultConfig()
	cfg.MaxAttempts = 1
	cfg.Breaker = breakerConfig()
	c := t.Client(s.Addr, cfg)

	failedBeforeOpen := 0
	for range 100 {
		if c.BreakerState() == "open" {
			break
		}
		c.Do(t.Ctx, scenario.GetCall("acct-B"))
		failedBeforeOpen++
	}
	scenario.Expect(t, "opened", c.BreakerState(), "open")
	scenario.Expectf(t, "failedBeforeOpen", failedBeforeOpen, int(breakerConfig().MinCalls), "every call fails, so the breaker opens at its MinCalls-th")

	before := t.Counters(s).RequestsGet
	fast := 0
	for range 50 {
		if r := c.Do(t.Ctx, scenario.GetCall("acct-B")); r.Status == proto.StatusCircuitOpen && len(r.Log) == 0 {
			fast++
		}
	}
	scenario.Expect(t, "failedFastWhileOpen", fast, 50)
	scenario.Expect(t, "serverRequestsWhileOpen", t.Counters(s).RequestsGet-before, 0)
	scenario.Expect(t, "rejectedCircuitOpen", c.Stats().RejectedCircuitOpen, int64(50))

	// A probe the server refuses opens the breaker again.
	halfOpen(t, c)
	r := c.Do(t.Ctx, scenario.GetCall("acct-B"))
	scenario.Expect(t, "failedProbe", r.Status.String(), proto.StatusUnavailable.String())
	scenario.Expect(t, "afterFailedProbe", c.BreakerState(), "open")

	// The server recovers, and holds the first get it sees: once the
	// open interval ends, 4 calls at once meet the half-open breaker.
	t.Control(s, serverapi.MethodClear, "")
	t.Control(s, serverapi.MethodFault, "kind=sleep method=get count=1 delay=500ms")
	halfOpen(t, c)
	before = t.Counters(s).RequestsGet
	results := make(chan client.Result, 4)
	held := scenario.GetCall("acct-B")
	held.AttemptTimeout, held.Timeout = 2*time.Second, 2*time.Second // longer than the hold
	for range 4 {
		go func() { results <- c.Do(t.Ctx, held) }()
	}
	ends := map[string]int{}
	for range 3 { // the refused calls and the probe not held
		ends[(<-results).Status.String()]++
	}
	// The held probe is still running: one probe of two has passed.
	afterOne := c.BreakerState()
	ends[(<-results).Status.String()]++
	scenario.Expectf(t, "probeRequests", t.Counters(s).RequestsGet-before, int64(breakerConfig().Probes), "half-open lets exactly Probes calls through")
	scenario.Expect(t, "halfOpenEnds", fmt.Sprint(ends), fmt.Sprint(map[string]int{"OK": 2, proto.StatusCircuitOpen.String(): 2}))
	scenario.Expect(t, "afterOneProbePassed", afterOne, "half-open")
	scenario.Expect(t, "afterBothProbesPassed", c.BreakerState(), "closed")
	var after []string
	for range 4 {
		after = append(after, scenario.Brief(c.Do(t.Ctx, scenario.GetCall("acct-B"))))
	}
	scenario.Expectf(t, "callsAfterRecovery", strings.Join(after, ","), "OK,OK,OK,OK", "once the breaker closes, every call reaches the server")
}

// halfOpen waits for the breaker of c to turn half-open.
func halfOpen(t *scenario.T, c *client.Client) {
	if !scenario.WaitFor(5*time.Second, func() bool { return c.BreakerState() == "half-open" }) {
		t.Fatalf("the breaker never turned half-open: %s", c.BreakerState())
	}
}

func breakerTripsOnSlowCalls(t *scenario.T) {
	// The slow answers take twice SlowCall, and a fast one on a loaded
	// machine stays well under it.
	s := t.StartServer(scenario.ServerOpts{Faults: []string{"kind=sleep method=get delay=300ms"}})
	cfg := client.DefaultConfig()
	cfg.MaxAttempts = 1
	cfg.AttemptTimeout = 2 * time.Second
	cfg.Breaker = &client.BreakerConfig{Window: 5 * time.Second, Bucket: 100 * time.Millisecond, MinCalls: 5,
		SlowCall: 150 * time.Millisecond, SlowRate: 0.5, OpenFor: time.Second, Probes: 1}
	c := t.Client(s.Addr, cfg)
	var answers []string
	for range 30 {
		if c.BreakerState() == "open" {
			break
		}
		answers = append(answers, c.Do(t.Ctx, scenario.GetCall("acct-S")).Status.String())
	}
	allOK := true
	for _, a := range answers {
		allOK = allOK && a == "OK"
	}
	scenario.Expectf(t, "answersBeforeOpen", allOK, true, "every call was answered OK, slowly: %v", answers)
	scenario.Expect(t, "opened", c.BreakerState(), "open")
	r := c.Do(t.Ctx, scenario.GetCall("acct-S"))
	scenario.Expect(t, "next", r.Status.String(), proto.StatusCircuitOpen.String())

	// A probe answered OK, but slowly, opens it again; a fast one closes
	// it.
	halfOpen(t, c)
	r = c.Do(t.Ctx, scenario.GetCall("acct-S"))
	scenario.Expect(t, "slowProbe", r.Status.String(), proto.StatusOK.String())
	scenario.Expect(t, "afterSlowProbe", c.BreakerState(), "open")
	t.Control(s, serverapi.MethodClear, "")
	halfOpen(t, c)
	r = c.Do(t.Ctx, scenario.GetCall("acct-S"))
	scenario.Expect(t, "fastProbe", r.Status.String(), proto.StatusOK.String())
	scenario.Expect(t, "afterFastProbe", c.BreakerState(), "closed")
}

// inflightCap is the in-flight cap of the permit scenarios.
const inflightCap = 8

// fillCap starts inflightCap slow gets and reports whether all of them
// were admitted and a further call was refused CLIENT_BUSY while they ran.
func fillCap(t *scenario.T, c *client.Client) (admitted int, extra proto.Status) {
	var wg sync.WaitGroup
	results := make(chan client.Result, inflightCap)
	slow := scenario.GetCall("acct-P")
	slow.Payload = append(slow.Payload, " sleep=300"...)
	slow.AttemptTimeout, slow.Timeout = 2*time.Second, 2*time.Second
	for range inflightCap {
		wg.Go(func() { results <- c.Do(t.Ctx, slow) })
	}
	busy := func() bool { return c.InFlight() >= inflightCap }
	if !scenario.WaitFor(5*time.Second, busy) {
		wg.Wait()
		return 0, proto.StatusOK
	}
	extra = c.Do(t.Ctx, scenario.GetCall("acct-P")).Status
	wg.Wait()
	close(results)
	for r := range results {
		if r.Status == proto.StatusOK {
			admitted++
		}
	}
	return admitted, extra
}

func inflightPermitsReleased(t *scenario.T) {
	s := t.StartServer(scenario.ServerOpts{})
	cfg := client.DefaultConfig()
	cfg.MaxInFlight = inflightCap
	cfg.MaxAttempts = 1
	cfg.RateLimits = map[string]client.RateLimit{bank.MethodDebit: {PerSecond: 1, Burst: 1}}
	c := t.Client(s.Addr, cfg)

	ends := map[string]int{}
	// Success.
	for range 20 {
		ends[c.Do(t.Ctx, scenario.GetCall("acct-P")).Status.String()]++
	}
	// Timeout: the server never answers these.
	t.Control(s, serverapi.MethodFault, "kind=noreply method=get count=20")
	for range 20 {
		call := scenario.GetCall("acct-P")
		call.Timeout = 50 * time.Millisecond
		ends["timeout/"+c.Do(t.Ctx, call).Status.String()]++
	}
	// Caller cancel.
	for range 20 {
		ctx, cancel := context.WithCancel(t.Ctx)
		call := scenario.GetCall("acct-P")
		call.Payload = append(call.Payload, " sleep=200"...)
		call.AttemptTimeout, call.Timeout = time.Second, time.Second
		done := make(chan client.Result, 1)
		go func() { done <- c.Do(ctx, call) }()
		scenario.WaitFor(time.Second, func() bool { return c.InFlight() > 0 })
		cancel()
		ends["cancel/"+(<-done).Status.String()]++
	}
	// Connection loss: the server closes after executing.
	t.Control(s, serverapi.MethodFault, "kind=close method=get count=20")
	for range 20 {
		ends["close/"+c.Do(t.Ctx, scenario.GetCall("acct-P")).Status.String()]++
	}
	// Local rejection: the debit rate limit of one a second.
	for range 20 {
		ends["ratelimit/"+c.Do(t.Ctx, scenario.DebitCall("acct-P", 1, "")).Status.String()]++
	}
	// How each path ends varies with timing (a connection closed after
	// executing may end UNAVAILABLE or DEADLINE_EXCEEDED); that each ran
	// and gave its permit back does not.
	t.Volatile("ends", fmt.Sprint(ends))
	paths := 0
	for _, n := range ends {
		paths += n
	}
	scenario.Expect(t, "calls", paths, 100)
	lost := 0
	for k, n := range ends {
		if strings.HasPrefix(k, "close/") && k != "close/OK" {
			lost += n
		}
	}
	scenario.AtLeast(t, "connLost", lost, 1, "no call met a closed connection")
	scenario.Expect(t, "inFlightAfter", c.InFlight(), 0)
	admitted, extra := fillCap(t, c)
	scenario.Expectf(t, "admittedAfter", admitted, inflightCap, "every permit must be back: the full cap is usable")
	scenario.Expect(t, "beyondCap", extra.String(), proto.StatusClientBusy.String())
}

// leakyLimiter is an in-flight limiter wrong on purpose, as one written
// with a release on the success path only is: it
// takes a permit before a call and gives it back when the call ends,
// except when the call timed out, the path its author forgot.
type leakyLimiter struct {
	c       *client.Client
	permits chan struct{}
}

func (l *leakyLimiter) Do(ctx context.Context, call client.Call) client.Result {
	select {
	case l.permits <- struct{}{}:
	default:
		return client.Result{Status: proto.StatusClientBusy}
	}
	r := l.c.Do(ctx, call)
	if n := len(r.Log); n > 0 && r.Log[n-1].Outcome == client.OutcomeTimeout {
		return r // the leak: no release on the timeout path
	}
	<-l.permits
	return r
}

func negativeControlInflightLeak(t *scenario.T) {
	s := t.StartServer(scenario.ServerOpts{})
	cfg := client.DefaultConfig()
	cfg.MaxAttempts = 1
	c := t.Client(s.Addr, cfg)
	l := &leakyLimiter{c: c, permits: make(chan struct{}, inflightCap)}
	t.Field("expectLeak", true)
	t.Control(s, serverapi.MethodFault, "kind=noreply method=get")
	for range inflightCap {
		call := scenario.GetCall("acct-L")
		call.Timeout = 50 * time.Millisecond
		l.Do(t.Ctx, call)
	}
	t.Control(s, serverapi.MethodClear, "")
	busy := 0
	for range 20 {
		if l.Do(t.Ctx, scenario.GetCall("acct-L")).Status == proto.StatusClientBusy {
			busy++
		}
	}
	scenario.Expectf(t, "refusedAfterTimeouts", busy, 20, "after %d timeouts a leaking limiter has no permit left", inflightCap)
}
