package evidence

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

func deadlineServerSkipsExpired(t *scenario.T) {
	const (
		slowSleep     = 500 * time.Millisecond
		debitDeadline = 100 * time.Millisecond
	)
	s := t.StartServer(scenario.ServerOpts{Workers: 1})
	c := t.Client(s.Addr, client.DefaultConfig())

	slow := scenario.GetCall("acct-S")
	slow.Payload = fmt.Appendf(slow.Payload, " sleep=%d", slowSleep.Milliseconds())
	slow.Timeout, slow.AttemptTimeout = 2*time.Second, 2*time.Second
	slowDone := make(chan client.Result, 1)
	go func() { slowDone <- c.Do(t.Ctx, slow) }()
	// The debit must queue behind the slow get: wait until the server has
	// received the get before sending it.
	if !scenario.WaitFor(5*time.Second, func() bool { return t.Counters(s).RequestsGet >= 1 }) {
		t.Fatalf("server never received the slow get")
	}

	d := scenario.DebitCall("acct-D", 10, "")
	d.Timeout = debitDeadline
	rd := c.Do(t.Ctx, d)
	rs := <-slowDone
	// The server's DEADLINE_EXCEEDED answer arrives after the debit's
	// deadline; wait for the reader to drop it.
	scenario.WaitFor(5*time.Second, func() bool { return c.Stats().LateDropped >= 1 })
	ctr := t.Counters(s)
	balance := t.Balance(s, "acct-D")
	var expired serverapi.Event
	for _, e := range t.Events(s) {
		if e.Name == serverapi.EventExpired {
			expired = e
			break
		}
	}

	scenario.Expect(t, "debit", rd.Status, proto.StatusUnknown)
	t.Volatile("debitElapsed", scenario.Millis(rd.Elapsed))
	scenario.Expect(t, "attempts", rd.Attempts, 1)
	scenario.Within(t, "budgetSent", scenario.Budget(rd.Log[0].BudgetMs), debitDeadline)
	scenario.Expect(t, "slowGet", rs.Status, proto.StatusOK)
	scenario.Expectf(t, "serverDebitExec", ctr.ExecDebit, 0, "the server executed the expired debit")
	scenario.Expect(t, "serverExpiredRejected", ctr.Expired, 1)
	scenario.Expectf(t, "clientLateDropped", c.Stats().LateDropped, 1, "late DEADLINE_EXCEEDED answers dropped")
	scenario.Expect(t, "balance", balance, bank.DefaultBalance)
	t.Volatile("serverLog", expired)
	t.Check(rd.Elapsed <= debitDeadline+scenario.Slack, "debit returned after %v, deadline %v", rd.Elapsed, debitDeadline)
	t.Check(expired.Text(serverapi.KeyMethod) == bank.MethodDebit, "server log has no %s event for the debit: %v", serverapi.EventExpired, expired)
}

// findLogLine returns the first line of the log at path containing
func retryUnavailableNonIdempotent(t *scenario.T) {
	s := t.StartServer(scenario.ServerOpts{Faults: []string{"kind=unavailable method=debit count=2"}})
	cfg := client.DefaultConfig()
	c := t.Client(s.Addr, cfg)
	r := c.Do(t.Ctx, scenario.DebitCall("acct-U", 10, ""))
	ctr := t.Counters(s)
	t.Field("status", scenario.Brief(r, "balance"))
	scenario.Expect(t, "attempts", r.Attempts, 3)
	t.Field("outcomes", scenario.Outcomes(r))
	t.Volatile("log", scenario.AttemptLog(r))
	scenario.Expect(t, "serverDebitExec", ctr.ExecDebit, 1)
	scenario.Expect(t, "rejectedUnavailable", ctr.Unavailable, 2)
	scenario.Pauses(t, "pause%d", r, cfg)
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
func debitWithoutReply(t *scenario.T, cfg client.Config, account, key string) (client.Result, scenario.Counters, int64) {
	s := t.StartServer(scenario.ServerOpts{Faults: []string{noReplyDebit}})
	c := t.Client(s.Addr, cfg)
	r := c.Do(t.Ctx, scenario.DebitCall(account, 10, key))
	ctr := t.Counters(s)
	return r, ctr, t.Balance(s, account)
}

func unknownNotRetriedWithoutKey(t *scenario.T) {
	r, ctr, balance := debitWithoutReply(t, client.DefaultConfig(), "acct-N", "")
	scenario.Expect(t, "status", r.Status, proto.StatusUnknown)
	scenario.Expect(t, "attempts", r.Attempts, 1)
	t.Field("outcomes", scenario.Outcomes(r))
	t.Volatile("log", scenario.AttemptLog(r))
	t.Field("stop", r.Stop)
	scenario.Expect(t, "serverDebitExec", ctr.ExecDebit, 1)
	scenario.Expect(t, "balance", balance, bank.DefaultBalance-10)
}

func retryWithIdempotencyKey(t *scenario.T) {
	r, ctr, balance := debitWithoutReply(t, client.DefaultConfig(), "acct-K", "debit-acct-K-0001")
	scenario.Expect(t, "status", r.Status, proto.StatusOK)
	scenario.Expect(t, "attempts", r.Attempts, 2)
	t.Field("outcomes", scenario.Outcomes(r))
	t.Volatile("log", scenario.AttemptLog(r))
	scenario.Expectf(t, "replayed", scenario.PayloadFields(r)["replayed"], "true", "the second attempt was not a replay: %q", r.Payload)
	t.Field("exec", scenario.PayloadFields(r)["exec"])
	t.Volatile("payload", string(r.Payload))
	scenario.Expect(t, "serverDebitExec", ctr.ExecDebit, 1)
	scenario.Expect(t, "dedupHits", ctr.DedupHits, 1)
	scenario.Expect(t, "balance", balance, bank.DefaultBalance-10)
}

// negativeControlNaiveRetry passes only if the naive policy really
// executed one logical debit twice.
func negativeControlNaiveRetry(t *scenario.T) {
	cfg := client.DefaultConfig()
	cfg.RetryUnknown = retryNaive
	r, ctr, balance := debitWithoutReply(t, cfg, "acct-V", "")
	t.Field("expectDoubleExecution", true)
	t.Field("policy", "NAIVE")
	scenario.Expectf(t, "status", r.Status, proto.StatusOK, "the naive client's defect hides behind an OK")
	t.Field("attempts", r.Attempts)
	t.Field("outcomes", scenario.Outcomes(r))
	scenario.Expectf(t, "serverDebitExec", ctr.ExecDebit, 2, "expected a double execution")
	scenario.Expectf(t, "balance", balance, bank.DefaultBalance-20, "expected a double execution")
	t.Field("logicalDebits", 1)
	t.Field("amount", 10)
}

func idempotencyKeyReuseRejected(t *scenario.T) {
	s := t.StartServer(scenario.ServerOpts{})
	c := t.Client(s.Addr, client.DefaultConfig())
	const key = "debit-acct-R-0001"
	first := c.Do(t.Ctx, scenario.DebitCall("acct-R", 10, key))
	other := c.Do(t.Ctx, scenario.DebitCall("acct-R", 20, key))
	same := c.Do(t.Ctx, scenario.DebitCall("acct-R", 10, key))
	ctr := t.Counters(s)
	balance := t.Balance(s, "acct-R")
	t.Field("first", scenario.Brief(first, "balance", "replayed"))
	scenario.Expect(t, "differentBody", fmt.Sprintf("%v %s", other.Status, other.Payload), fmt.Sprintf("%v %s", proto.StatusInvalidArgument, bank.ErrKeyReused))
	t.Field("sameBody", scenario.Brief(same, "balance", "replayed"))
	scenario.Expect(t, "serverDebitExec", ctr.ExecDebit, 1)
	t.Field("keyConflicts", ctr.KeyConflicts)
	scenario.Expect(t, "balance", balance, bank.DefaultBalance-10)
	t.Check(first.Status == proto.StatusOK, "first=%v, want OK", first.Status)
	t.Check(other.Attempts == 1, "different body: attempts=%d, want 1 (final status)", other.Attempts)
	t.Check(same.Status == proto.StatusOK && scenario.PayloadFields(same)["replayed"] == "true", "same body: %v %q, want a replayed OK", same.Status, same.Payload)
}

// keyedUnknownStaysUnknown: a keyed debit executes and is never answered;
// its retries are refused UNAVAILABLE until the attempts run out. The
// refusals say nothing of the first attempt, which executed: the call is
// UNKNOWN, not UNAVAILABLE.
func keyedUnknownStaysUnknown(t *scenario.T) {
	s := t.StartServer(scenario.ServerOpts{Faults: []string{noReplyDebit, "kind=unavailable method=debit count=3"}})
	cfg := client.DefaultConfig()
	c := t.Client(s.Addr, cfg)
	r := c.Do(t.Ctx, scenario.DebitCall("acct-Q", 10, "debit-acct-Q-0001"))
	ctr := t.Counters(s)
	scenario.Expectf(t, "status", r.Status, proto.StatusUnknown, "the first attempt may have executed, whatever the later ones met")
	scenario.Expect(t, "attempts", r.Attempts, cfg.MaxAttempts)
	scenario.Expect(t, "outcomes", scenario.Outcomes(r), "TIMEOUT,RESPONSE/UNAVAILABLE,RESPONSE/UNAVAILABLE,RESPONSE/UNAVAILABLE")
	scenario.Expect(t, "stop", r.Stop, client.StopMaxAttempts)
	t.Volatile("log", scenario.AttemptLog(r))
	scenario.Pauses(t, "pause%d", r, cfg)
	scenario.Expect(t, "serverDebitExec", ctr.ExecDebit, 1)
	scenario.Expect(t, "rejectedUnavailable", ctr.Unavailable, 3)
	scenario.Expect(t, "balance", t.Balance(s, "acct-Q"), bank.DefaultBalance-10)
}

// deadlineExceededAnswerRetried: the server's DEADLINE_EXCEEDED answers
// normally reach the client after its attempt timed out (SPEC
// "Statuses"); one that arrives in time says the request was not executed, so
// even a keyless debit is retried. A relay in front of the server answers
// the first debit DEADLINE_EXCEEDED at once, as an expired request is
// answered, and passes everything else on.
func deadlineExceededAnswerRetried(t *scenario.T) {
	s := t.StartServer(scenario.ServerOpts{})
	var taken atomic.Bool
	relay := t.StartAnswerRelay(s.Addr, func(f *proto.Frame) (proto.Status, string, bool) {
		if f.Method != bank.MethodDebit || taken.Swap(true) {
			return 0, "", false
		}
		return proto.StatusDeadlineExceeded, "expired before execution waited=0", true
	})
	cfg := client.DefaultConfig()
	c := t.Client(relay.Addr(), cfg)
	r := c.Do(t.Ctx, scenario.DebitCall("acct-E", 10, ""))
	ctr := t.Counters(s)
	scenario.Expect(t, "relayAnswered", relay.Answered(), 1)
	scenario.Expectf(t, "status", scenario.Brief(r, "balance"), "OK balance=990", "log %s", scenario.AttemptLog(r))
	scenario.Expect(t, "attempts", r.Attempts, 2)
	scenario.Expect(t, "outcomes", scenario.Outcomes(r), "RESPONSE/DEADLINE_EXCEEDED,RESPONSE/OK")
	scenario.Expect(t, "classes", classes(r), "NOT_EXECUTED,FINAL")
	t.Volatile("log", scenario.AttemptLog(r))
	scenario.Pauses(t, "pause%d", r, cfg)
	scenario.Expect(t, "serverDebitExec", ctr.ExecDebit, 1)
	scenario.Expect(t, "balance", t.Balance(s, "acct-E"), bank.DefaultBalance-10)
}
