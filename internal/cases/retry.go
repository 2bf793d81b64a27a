package cases

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

func deadlineServerSkipsExpired(t *T) {
	const (
		slowSleep     = 500 * time.Millisecond
		debitDeadline = 100 * time.Millisecond
	)
	s := t.startServer(serverOpts{Workers: 1})
	c := t.client(s.Addr, client.DefaultConfig())

	slow := getCall("acct-S")
	slow.Payload = fmt.Appendf(slow.Payload, " sleep=%d", slowSleep.Milliseconds())
	slow.Timeout, slow.AttemptTimeout = 2*time.Second, 2*time.Second
	slowDone := make(chan client.Result, 1)
	go func() { slowDone <- c.Do(t.ctx, slow) }()
	// The debit must queue behind the slow get: wait until the server has
	// received the get before sending it.
	if !waitFor(5*time.Second, func() bool { return t.counters(s).RequestsGet >= 1 }) {
		t.Fatalf("server never received the slow get")
	}

	d := debitCall("acct-D", 10, "")
	d.Timeout = debitDeadline
	rd := c.Do(t.ctx, d)
	rs := <-slowDone
	// The server's DEADLINE_EXCEEDED answer arrives after the debit's
	// deadline; wait for the reader to drop it.
	waitFor(5*time.Second, func() bool { return c.Stats().LateDropped >= 1 })
	ctr := t.counters(s)
	balance := t.balance(s, "acct-D")
	var expired serverapi.Event
	for _, e := range t.events(s) {
		if e.Name == serverapi.EventExpired {
			expired = e
			break
		}
	}

	expect(t, "debit", rd.Status, proto.StatusUnknown)
	t.Volatile("debitElapsed", ms(rd.Elapsed))
	expect(t, "attempts", rd.Attempts, 1)
	within(t, "budgetSent", budget(rd.Log[0].BudgetMs), debitDeadline)
	expect(t, "slowGet", rs.Status, proto.StatusOK)
	expectf(t, "serverDebitExec", ctr.ExecDebit, 0, "the server executed the expired debit")
	expect(t, "serverExpiredRejected", ctr.Expired, 1)
	expectf(t, "clientLateDropped", c.Stats().LateDropped, 1, "late DEADLINE_EXCEEDED answers dropped")
	expect(t, "balance", balance, bank.DefaultBalance)
	t.Volatile("serverLog", expired)
	t.Check(rd.Elapsed <= debitDeadline+slack, "debit returned after %v, deadline %v", rd.Elapsed, debitDeadline)
	t.Check(expired.Text(serverapi.KeyMethod) == bank.MethodDebit, "server log has no %s event for the debit: %v", serverapi.EventExpired, expired)
}

// findLogLine returns the first line of the log at path containing
func retryUnavailableNonIdempotent(t *T) {
	s := t.startServer(serverOpts{Faults: []string{"kind=unavailable method=debit count=2"}})
	cfg := client.DefaultConfig()
	c := t.client(s.Addr, cfg)
	r := c.Do(t.ctx, debitCall("acct-U", 10, ""))
	ctr := t.counters(s)
	t.Field("status", brief(r, "balance"))
	expect(t, "attempts", r.Attempts, 3)
	t.Field("outcomes", outcomes(r))
	t.Volatile("log", attemptLog(r))
	expect(t, "serverDebitExec", ctr.ExecDebit, 1)
	expect(t, "rejectedUnavailable", ctr.Unavailable, 2)
	pauses(t, "pause%d", r, cfg)
	t.Check(r.Status == proto.StatusOK, "status=%v, want OK", r.Status)
	for i, a := range r.Log[:max(0, len(r.Log)-1)] {
		t.Check(a.Class == client.ClassNotExecuted && a.Backoff > 0, "attempt %d: class %v backoff %v, want NOT_EXECUTED with a backoff", i+1, a.Class, a.Backoff)
	}
}

// noReplyDebit is the fault shared by the unknown-outcome scenarios: the
// first debit executes and is never answered.
const noReplyDebit = "kind=noreply method=debit count=1"

// debitWithoutReply makes one logical debit of 10 on account, with key,
// against a server whose first debit executes and is never answered, and
// returns the result, the server's counters and the final balance.
func (t *T) debitWithoutReply(cfg client.Config, account, key string) (client.Result, counters, int64) {
	s := t.startServer(serverOpts{Faults: []string{noReplyDebit}})
	c := t.client(s.Addr, cfg)
	r := c.Do(t.ctx, debitCall(account, 10, key))
	ctr := t.counters(s)
	return r, ctr, t.balance(s, account)
}

func unknownNotRetriedWithoutKey(t *T) {
	r, ctr, balance := t.debitWithoutReply(client.DefaultConfig(), "acct-N", "")
	expect(t, "status", r.Status, proto.StatusUnknown)
	expect(t, "attempts", r.Attempts, 1)
	t.Field("outcomes", outcomes(r))
	t.Volatile("log", attemptLog(r))
	t.Field("stop", r.Stop)
	expect(t, "serverDebitExec", ctr.ExecDebit, 1)
	expect(t, "balance", balance, bank.DefaultBalance-10)
}

func retryWithIdempotencyKey(t *T) {
	r, ctr, balance := t.debitWithoutReply(client.DefaultConfig(), "acct-K", "debit-acct-K-0001")
	expect(t, "status", r.Status, proto.StatusOK)
	expect(t, "attempts", r.Attempts, 2)
	t.Field("outcomes", outcomes(r))
	t.Volatile("log", attemptLog(r))
	expectf(t, "replayed", fields(r)["replayed"], "true", "the second attempt was not a replay: %q", r.Payload)
	t.Field("exec", fields(r)["exec"])
	t.Volatile("payload", string(r.Payload))
	expect(t, "serverDebitExec", ctr.ExecDebit, 1)
	expect(t, "dedupHits", ctr.DedupHits, 1)
	expect(t, "balance", balance, bank.DefaultBalance-10)
}

// negativeControlNaiveRetry passes only if the naive policy really
// executed one logical debit twice.
func negativeControlNaiveRetry(t *T) {
	cfg := client.DefaultConfig()
	cfg.RetryUnknown = retryNaive
	r, ctr, balance := t.debitWithoutReply(cfg, "acct-V", "")
	t.Field("expectDoubleExecution", true)
	t.Field("policy", "NAIVE")
	expectf(t, "status", r.Status, proto.StatusOK, "the naive client's defect hides behind an OK")
	t.Field("attempts", r.Attempts)
	t.Field("outcomes", outcomes(r))
	expectf(t, "serverDebitExec", ctr.ExecDebit, 2, "expected a double execution")
	expectf(t, "balance", balance, bank.DefaultBalance-20, "expected a double execution")
	t.Field("logicalDebits", 1)
	t.Field("amount", 10)
}

func idempotencyKeyReuseRejected(t *T) {
	s := t.startServer(serverOpts{})
	c := t.client(s.Addr, client.DefaultConfig())
	const key = "debit-acct-R-0001"
	first := c.Do(t.ctx, debitCall("acct-R", 10, key))
	other := c.Do(t.ctx, debitCall("acct-R", 20, key))
	same := c.Do(t.ctx, debitCall("acct-R", 10, key))
	ctr := t.counters(s)
	balance := t.balance(s, "acct-R")
	t.Field("first", brief(first, "balance", "replayed"))
	expect(t, "differentBody", fmt.Sprintf("%v %s", other.Status, other.Payload), fmt.Sprintf("%v %s", proto.StatusInvalidArgument, bank.ErrKeyReused))
	t.Field("sameBody", brief(same, "balance", "replayed"))
	expect(t, "serverDebitExec", ctr.ExecDebit, 1)
	t.Field("keyConflicts", ctr.KeyConflicts)
	expect(t, "balance", balance, bank.DefaultBalance-10)
	t.Check(first.Status == proto.StatusOK, "first=%v, want OK", first.Status)
	t.Check(other.Attempts == 1, "different body: attempts=%d, want 1 (final status)", other.Attempts)
	t.Check(same.Status == proto.StatusOK && fields(same)["replayed"] == "true", "same body: %v %q, want a replayed OK", same.Status, same.Payload)
}

// keyedUnknownStaysUnknown: a keyed debit executes and is never answered;
// its retries are refused UNAVAILABLE until the attempts run out. The
// refusals say nothing of the first attempt, which executed: the call is
// UNKNOWN, not UNAVAILABLE.
func keyedUnknownStaysUnknown(t *T) {
	s := t.startServer(serverOpts{Faults: []string{noReplyDebit, "kind=unavailable method=debit count=3"}})
	cfg := client.DefaultConfig()
	c := t.client(s.Addr, cfg)
	r := c.Do(t.ctx, debitCall("acct-Q", 10, "debit-acct-Q-0001"))
	ctr := t.counters(s)
	expectf(t, "status", r.Status, proto.StatusUnknown, "the first attempt may have executed, whatever the later ones met")
	expect(t, "attempts", r.Attempts, cfg.MaxAttempts)
	expect(t, "outcomes", outcomes(r), "TIMEOUT,RESPONSE/UNAVAILABLE,RESPONSE/UNAVAILABLE,RESPONSE/UNAVAILABLE")
	expect(t, "stop", r.Stop, client.StopMaxAttempts)
	t.Volatile("log", attemptLog(r))
	pauses(t, "pause%d", r, cfg)
	expect(t, "serverDebitExec", ctr.ExecDebit, 1)
	expect(t, "rejectedUnavailable", ctr.Unavailable, 3)
	expect(t, "balance", t.balance(s, "acct-Q"), bank.DefaultBalance-10)
}

// deadlineExceededAnswerRetried: the server's DEADLINE_EXCEEDED answers
// normally reach the client after its attempt timed out (SPEC
// "Statuses"); one that arrives in time says the request was not executed, so
// even a keyless debit is retried. A relay in front of the server answers
// the first debit DEADLINE_EXCEEDED at once, as an expired request is
// answered, and passes everything else on.
func deadlineExceededAnswerRetried(t *T) {
	s := t.startServer(serverOpts{})
	var taken atomic.Bool
	relay := t.startAnswerRelay(s.Addr, func(f *proto.Frame) (proto.Status, string, bool) {
		if f.Method != bank.MethodDebit || taken.Swap(true) {
			return 0, "", false
		}
		return proto.StatusDeadlineExceeded, "expired before execution waited=0", true
	})
	cfg := client.DefaultConfig()
	c := t.client(relay.Addr(), cfg)
	r := c.Do(t.ctx, debitCall("acct-E", 10, ""))
	ctr := t.counters(s)
	expect(t, "relayAnswered", relay.Answered(), 1)
	expectf(t, "status", brief(r, "balance"), "OK balance=990", "log %s", attemptLog(r))
	expect(t, "attempts", r.Attempts, 2)
	expect(t, "outcomes", outcomes(r), "RESPONSE/DEADLINE_EXCEEDED,RESPONSE/OK")
	expect(t, "classes", classes(r), "NOT_EXECUTED,FINAL")
	t.Volatile("log", attemptLog(r))
	pauses(t, "pause%d", r, cfg)
	expect(t, "serverDebitExec", ctr.ExecDebit, 1)
	expect(t, "balance", t.balance(s, "acct-E"), bank.DefaultBalance-10)
}
