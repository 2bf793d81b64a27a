package governance

import (
	"time"

	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// pushbackHint is the retry-after hint of the first part of
// pushbackHonoured, and pushbackLong the one that outlasts the call's
// pushbackTimeout.
const (
	pushbackHint    = 200 * time.Millisecond
	pushbackLong    = 2 * time.Second
	pushbackTimeout = 500 * time.Millisecond
	// pushbackAtOnce is how soon a call stopped by a hint should return:
	// one local round trip, well under the hint and the call's timeout.
	pushbackAtOnce = 100 * time.Millisecond
)

// pushbackHonoured checks the client against UNAVAILABLE answers carrying
// a retry-after hint (internal/client/POLICY.md, "Retry policy"). Each part adds its one-shot
// rule with ctl.fault only once the previous one is spent, so that one
// server serves all three.
func pushbackHonoured(t *scenario.T) {
	s := t.StartServer(scenario.ServerOpts{})
	c := t.Client(s.Addr, client.DefaultConfig())

	// A hint longer than the backoff sets the pause before the retry.
	t.Control(s, serverapi.MethodFault, "kind=unavailable method=get count=1 retry_after="+pushbackHint.String())
	r := c.Do(t.Ctx, scenario.GetCall("acct-P"))
	scenario.Expect(t, "hintStatus", r.Status.String(), proto.StatusOK.String())
	scenario.Expectf(t, "hintAttempts", r.Attempts, 2, "one UNAVAILABLE with the hint, then the answer: %s", scenario.AttemptLog(r))
	if r.Attempts == 2 {
		scenario.Expect(t, "hintRetryAfter", r.Log[0].RetryAfter, pushbackHint)
		scenario.Between(t, "hintPause", r.Log[0].Backoff, pushbackHint, pushbackHint+scenario.Slack)
		scenario.Between(t, "hintElapsed", r.Elapsed, pushbackHint, pushbackHint+scenario.Slack)
	}

	// A hint past what is left of the call's deadline stops it at once.
	t.Control(s, serverapi.MethodFault, "kind=unavailable method=get count=1 retry_after="+pushbackLong.String())
	call := scenario.GetCall("acct-P")
	call.Timeout = pushbackTimeout
	r = c.Do(t.Ctx, call)
	scenario.Expect(t, "longStatus", r.Status.String(), proto.StatusUnavailable.String())
	scenario.Expect(t, "longStop", r.Stop.String(), client.StopPushback.String())
	scenario.Expectf(t, "longAttempts", r.Attempts, 1, "the hint outlasts the call, so no retry: %s", scenario.AttemptLog(r))
	scenario.Within(t, "longElapsed", r.Elapsed, pushbackAtOnce+scenario.Slack)

	// retry_after=never: one attempt, no retry.
	t.Control(s, serverapi.MethodFault, "kind=unavailable method=get count=1 retry_after=never")
	r = c.Do(t.Ctx, scenario.GetCall("acct-P"))
	scenario.Expect(t, "neverStatus", r.Status.String(), proto.StatusUnavailable.String())
	scenario.Expect(t, "neverStop", r.Stop.String(), client.StopPushback.String())
	scenario.Expectf(t, "neverAttempts", r.Attempts, 1, "the server said not to retry: %s", scenario.AttemptLog(r))

	scenario.Expect(t, "pushbacks", c.Stats().Pushbacks, int64(3))
}
