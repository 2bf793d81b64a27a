package cases

import (
	"fmt"
	"sync"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
)

func backpressureBurst(t *T) {
	const (
		workers = 1
		queue   = 8
		burst   = 200
		retried = 40
		// A sleep field keeps a request off the reader's fast path, so it
		// must take the queue; 5 ms makes the burst outrun the worker.
		sleepMs = 5
		// Generous: no attempt may time out, or its outcome is unknown.
		attemptTimeout = 2 * time.Second
	)
	s := t.startServer(serverOpts{Workers: workers, QueueSize: queue})
	c := t.politeClient(s)
	w := t.watch(s)

	// With one attempt per call, each result says what happened to its
	// one request: OK executed, UNAVAILABLE rejected unexecuted.
	once := client.DefaultConfig()
	once.MaxAttempts = 1
	bc := t.client(s.Addr, once)
	wait := t.debitBurst(bc, "acct-B", burst, sleepMs, attemptTimeout)
	waitFor(settleTimeout, func() bool { return t.counters(s).RequestsDebit >= burst/2 })
	w.sampleDuring()
	ok, unavailable, other, firstOther := tally(wait())
	ctr1 := t.counters(s)
	balance := t.balance(s, "acct-B")

	// A retrying client: rejected attempts are retried, and each logical
	// debit executes exactly once.
	retry := client.DefaultConfig()
	retry.MaxAttempts, retry.Deadline = 10, 5*time.Second
	rc := t.client(s.Addr, retry)
	rresults := t.debitBurst(rc, "acct-C", retried, sleepMs, attemptTimeout)()
	bc.Close()
	rc.Close()
	ctr := w.settle()
	rok, runavailable, rother, rfirstOther := tally(rresults)
	attempts := 0
	for _, r := range rresults {
		attempts += r.Attempts
	}
	rbalance := t.balance(s, "acct-C")
	rexec := ctr.ExecDebit - ctr1.ExecDebit
	rrejected := ctr.QueueFull - ctr1.QueueFull
	var after polite
	after.gets(t, c, politeAfter)

	t.Field("workers", workers)
	t.Field("queue", queue)
	t.Field("burst", burst)
	t.Field("sleepMs", sleepMs)
	t.Volatile("ok", ok)
	t.Volatile("unavailable", unavailable)
	t.Field("other", other)
	t.Field("accounted", ok+unavailable)
	t.Field("bothOutcomes", ok > 0 && unavailable > 0)
	t.Field("okIsExecuted", int64(ok) == ctr1.ExecDebit)
	t.Field("unavailableIsQueueFull", int64(unavailable) == ctr1.QueueFull)
	t.Field("balanceIs1000MinusOk", balance == int64(bank.DefaultBalance-ok))
	t.Field("retried", retried)
	t.Field("retriedOk", rok)
	t.Field("retriedExec", rexec)
	t.Field("retriedBalance", rbalance)
	t.Volatile("retriedAttempts", attempts)
	t.Volatile("retriedRejected", rrejected)
	t.Field("politeAfter", &after)
	w.report(rssLimitKB)

	t.Check(other == 0, "%d calls ended neither OK nor UNAVAILABLE, the first %s", other, firstOther)
	t.Check(ok+unavailable == burst, "OK %d + UNAVAILABLE %d = %d, want %d", ok, unavailable, ok+unavailable, burst)
	t.Check(int64(ok) == ctr1.ExecDebit, "%d calls OK, server executed %d debits", ok, ctr1.ExecDebit)
	t.Check(int64(unavailable) == ctr1.QueueFull, "%d calls UNAVAILABLE, server found its queue full %d times", unavailable, ctr1.QueueFull)
	t.Check(balance == int64(bank.DefaultBalance-ok), "acct-B balance=%d, want %d", balance, bank.DefaultBalance-ok)
	t.Check(ok > 0 && unavailable > 0, "OK %d, UNAVAILABLE %d: the burst did not overflow the queue, the case proves nothing", ok, unavailable)

	t.Check(rok == retried, "retrying client: %d of %d OK, %d UNAVAILABLE, %d other, the first %s", rok, retried, runavailable, rother, rfirstOther)
	t.Check(rexec == retried, "retrying client: server executed %d debits, want %d", rexec, retried)
	t.Check(rbalance == bank.DefaultBalance-retried, "acct-C balance=%d, want %d", rbalance, bank.DefaultBalance-retried)
	t.Check(int64(attempts) == rexec+rrejected, "retrying client: %d attempts, server executed %d and rejected %d", attempts, rexec, rrejected)
	t.Check(rrejected > 0, "no retried debit was rejected: the retry phase proves nothing")
	after.check(t, "after the bursts")
}

// debitBurst starts n keyless debits of 1 on account through c, all at
// once, and returns a function that waits for their results.
func (t *T) debitBurst(c *client.Client, account string, n, sleepMs int, attemptTimeout time.Duration) func() []client.Result {
	results := make([]client.Result, n)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			call := debitCall(account, 1, "")
			call.Payload = fmt.Appendf(call.Payload, " sleep=%d", sleepMs)
			call.AttemptTimeout = attemptTimeout
			results[i] = c.Do(t.ctx, call)
		})
	}
	return func() []client.Result {
		wg.Wait()
		return results
	}
}

// tally counts OK, UNAVAILABLE and other results, and describes the
// first other one.
func tally(results []client.Result) (ok, unavailable, other int, first string) {
	for _, r := range results {
		switch r.Status {
		case proto.StatusOK:
			ok++
		case proto.StatusUnavailable:
			unavailable++
		default:
			if other++; other == 1 {
				first = fmt.Sprintf("%v %q (%v)", r.Status, r.Payload, r.Err)
			}
		}
	}
	return ok, unavailable, other, first
}
