package cases

import (
	"fmt"
	"slices"
	"time"

	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
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
func slowNextGet(t *T, s *server) {
	t.control(s, serverapi.MethodFault, fmt.Sprintf("kind=sleep method=get count=1 delay=%v", hedgeSlow))
}

func hedgeCutsTail(t *T) {
	// Enough workers that the abandoned slow requests, still sleeping,
	// leave some free for the hedges.
	s := t.startServer(serverOpts{Workers: 16})

	// Without hedging a slow get takes all of hedgeSlow.
	plain := t.client(s.Addr, client.DefaultConfig())
	slowNextGet(t, s)
	r := plain.Do(t.ctx, getCall("acct-H"))
	expect(t, "unhedgedStatus", r.Status.String(), proto.StatusOK.String())
	between(t, "unhedgedSlow", r.Elapsed, hedgeSlow, -1)

	cfg := client.DefaultConfig()
	cfg.Hedge = &client.HedgeConfig{Delay: hedgeDelay}
	c := t.client(s.Addr, cfg)
	before := t.counters(s).RequestsGet
	lat := make([]time.Duration, 0, hedgeCalls)
	slow, failed := 0, 0
	for i := range hedgeCalls {
		if i%hedgeSlowEvery == 0 {
			slowNextGet(t, s)
			slow++
		}
		r := c.Do(t.ctx, getCall("acct-H"))
		if r.Status != proto.StatusOK {
			failed++
		}
		lat = append(lat, r.Elapsed)
	}
	requests := t.counters(s).RequestsGet - before
	slices.Sort(lat)
	expect(t, "failed", failed, 0)
	// The 99th percentile of 200 is the 198th fastest; with one call in
	// ten slow it is a slow call's, answered by its hedge.
	within(t, "p99", lat[(len(lat)*99+99)/100-1], hedgeP99Bound)
	st := c.Stats()
	atLeast(t, "hedgeWins", st.HedgeWins, int64(slow), "every slow call's hedge answers first")
	atMost(t, "extraRequests", requests-hedgeCalls, int64(slow+hedgeSpurious), "one hedge per slow call, and few for fast calls")
	t.Volatile("hedges", st.Hedges)

	// A keyless debit is never hedged, however slow.
	debit := debitCall("acct-H", 1, "")
	debit.Payload = append(debit.Payload, " sleep=100"...)
	r = c.Do(t.ctx, debit)
	expect(t, "debitStatus", r.Status.String(), proto.StatusOK.String())
	expectf(t, "debitAttempts", r.Attempts, 1, "a keyless debit must not be hedged: %s", attemptLog(r))
	between(t, "debitSlow", r.Elapsed, 100*time.Millisecond, -1)
	expect(t, "debitHedges", c.Stats().Hedges-st.Hedges, 0)
}
