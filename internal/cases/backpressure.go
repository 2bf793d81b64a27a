package cases

import (
	"fmt"
	"sync"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
)

// Settings of backpressure_burst.
const (
	burstWorkers = 1
	burstQueue   = 8
	burstSize    = 200
	burstRetried = 40
	// A sleep field keeps a request off the reader's fast path, so it
	// must take the queue; 5 ms makes the burst outrun the worker.
	burstSleepMs = 5
	// Generous: no attempt may time out, or its outcome is unknown.
	burstAttemptTimeout = 2 * time.Second
)

func backpressureBurst(t *T) {
	s := t.startServer(serverOpts{Workers: burstWorkers, QueueSize: burstQueue})
	c := t.politeClient(s)
	w := t.watch(s)
	t.Field("workers", burstWorkers)
	t.Field("queue", burstQueue)
	t.Field("burst", burstSize)
	t.Field("sleepMs", burstSleepMs)

	before := t.burstOnce(s, w)
	t.burstRetried(s, w, before)

	var after polite
	after.gets(t, c, politeAfter)
	t.Field("politeAfter", &after)
	w.report(rssLimitKB)
	after.check(t, "after the bursts")
}

// burstOnce sends the burst through a client that makes one attempt per
// call, so that each result says what happened to its one request: OK
// executed, UNAVAILABLE rejected unexecuted. It checks each against the
// server's counters, which it returns.
func (t *T) burstOnce(s *server, w *watch) counters {
	once := client.DefaultConfig()
	once.MaxAttempts = 1
	bc := t.client(s.Addr, once)
	wait := t.debitBurst(bc, "acct-B", burstSize, burstSleepMs, burstAttemptTimeout)
	waitFor(settleTimeout, func() bool { return t.counters(s).RequestsDebit >= burstSize/2 })
	w.sampleDuring()
	ok, unavailable, other, firstOther := tally(wait())
	bc.Close()
	ctr := t.counters(s)
	balance := t.balance(s, "acct-B")

	t.Volatile("ok", ok)
	t.Volatile("unavailable", unavailable)
	expectf(t, "other", other, 0, "calls ended neither OK nor UNAVAILABLE, the first %s", firstOther)
	expect(t, "accounted", ok+unavailable, burstSize)
	expectf(t, "bothOutcomes", ok > 0 && unavailable > 0, true, "OK %d, UNAVAILABLE %d: the burst did not overflow the queue, the case proves nothing", ok, unavailable)
	expectf(t, "okIsExecuted", int64(ok) == ctr.ExecDebit, true, "%d calls OK, server executed %d debits", ok, ctr.ExecDebit)
	expectf(t, "unavailableIsQueueFull", int64(unavailable) == ctr.QueueFull, true, "%d calls UNAVAILABLE, server found its queue full %d times", unavailable, ctr.QueueFull)
	expectf(t, "balanceIs1000MinusOk", balance == int64(bank.DefaultBalance-ok), true, "acct-B balance=%d, want %d", balance, bank.DefaultBalance-ok)
	return ctr
}

// burstRetried sends a smaller burst through a retrying client: rejected
// attempts are retried, and each logical debit executes exactly once.
// before are the counters before it.
func (t *T) burstRetried(s *server, w *watch, before counters) {
	retry := client.DefaultConfig()
	retry.MaxAttempts, retry.Deadline = 10, 5*time.Second
	rc := t.client(s.Addr, retry)
	results := t.debitBurst(rc, "acct-C", burstRetried, burstSleepMs, burstAttemptTimeout)()
	rc.Close()
	ctr := w.settle()
	ok, unavailable, other, firstOther := tally(results)
	attempts := 0
	for _, r := range results {
		attempts += r.Attempts
	}
	balance := t.balance(s, "acct-C")
	exec := ctr.ExecDebit - before.ExecDebit
	rejected := ctr.QueueFull - before.QueueFull

	t.Field("retried", burstRetried)
	expectf(t, "retriedOk", ok, burstRetried, "%d UNAVAILABLE, %d other, the first %s", unavailable, other, firstOther)
	expect(t, "retriedExec", exec, int64(burstRetried))
	expect(t, "retriedBalance", balance, int64(bank.DefaultBalance-burstRetried))
	t.Volatile("retriedAttempts", attempts)
	t.Volatile("retriedRejected", rejected)
	t.Check(int64(attempts) == exec+rejected, "retrying client: %d attempts, server executed %d and rejected %d", attempts, exec, rejected)
	t.Check(rejected > 0, "no retried debit was rejected: the retry phase proves nothing")
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
