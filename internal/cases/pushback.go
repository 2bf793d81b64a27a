package cases

import (
	"time"

	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
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
func pushbackHonoured(t *T) {
	s := t.startServer(serverOpts{})
	c := t.client(s.Addr, client.DefaultConfig())

	// A hint longer than the backoff sets the pause before the retry.
	t.control(s, serverapi.MethodFault, "kind=unavailable method=get count=1 retry_after="+pushbackHint.String())
	r := c.Do(t.ctx, getCall("acct-P"))
	expect(t, "hintStatus", r.Status.String(), proto.StatusOK.String())
	expectf(t, "hintAttempts", r.Attempts, 2, "one UNAVAILABLE with the hint, then the answer: %s", attemptLog(r))
	if r.Attempts == 2 {
		expect(t, "hintRetryAfter", r.Log[0].RetryAfter, pushbackHint)
		between(t, "hintPause", r.Log[0].Backoff, pushbackHint, pushbackHint+slack)
		between(t, "hintElapsed", r.Elapsed, pushbackHint, pushbackHint+slack)
	}

	// A hint past what is left of the call's deadline stops it at once.
	t.control(s, serverapi.MethodFault, "kind=unavailable method=get count=1 retry_after="+pushbackLong.String())
	call := getCall("acct-P")
	call.Timeout = pushbackTimeout
	r = c.Do(t.ctx, call)
	expect(t, "longStatus", r.Status.String(), proto.StatusUnavailable.String())
	expect(t, "longStop", r.Stop.String(), client.StopPushback.String())
	expectf(t, "longAttempts", r.Attempts, 1, "the hint outlasts the call, so no retry: %s", attemptLog(r))
	within(t, "longElapsed", r.Elapsed, pushbackAtOnce+slack)

	// retry_after=never: one attempt, no retry.
	t.control(s, serverapi.MethodFault, "kind=unavailable method=get count=1 retry_after=never")
	r = c.Do(t.ctx, getCall("acct-P"))
	expect(t, "neverStatus", r.Status.String(), proto.StatusUnavailable.String())
	expect(t, "neverStop", r.Stop.String(), client.StopPushback.String())
	expectf(t, "neverAttempts", r.Attempts, 1, "the server said not to retry: %s", attemptLog(r))

	expect(t, "pushbacks", c.Stats().Pushbacks, int64(3))
}
