package cases

import (
	"fmt"
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
	dropped := waitFor(5*time.Second, func() bool { return c.Stats().LateDropped >= 1 })
	ctr := t.counters(s)
	balance := t.balance(s, "acct-D")
	var expired serverapi.Event
	for _, e := range t.events(s) {
		if e.Name == serverapi.EventExpired {
			expired = e
			break
		}
	}

	t.Field("debit", rd.Status)
	t.Volatile("debitElapsed", ms(rd.Elapsed))
	t.Field("attempts", rd.Attempts)
	t.Volatile("budgetSent", rd.Log[0].BudgetMs)
	t.Field("slowGet", rs.Status)
	t.Field("serverDebitExec", ctr.ExecDebit)
	t.Field("serverExpiredRejected", ctr.Expired)
	t.Field("clientLateDropped", c.Stats().LateDropped)
	t.Field("balance", balance)
	t.Volatile("serverLog", expired)
	t.Check(rd.Status == proto.StatusUnknown, "debit=%v, want UNKNOWN", rd.Status)
	t.Check(rd.Elapsed <= debitDeadline+slack, "debit returned after %v, deadline %v", rd.Elapsed, debitDeadline)
	t.Check(rd.Attempts == 1, "attempts=%d, want 1", rd.Attempts)
	t.Check(rs.Status == proto.StatusOK, "slow get=%v, want OK", rs.Status)
	t.Check(ctr.ExecDebit == 0, "server executed the expired debit %d times", ctr.ExecDebit)
	t.Check(ctr.Expired == 1, "expired rejections=%d, want 1", ctr.Expired)
	t.Check(balance == bank.DefaultBalance, "balance=%d, want %d", balance, bank.DefaultBalance)
	t.Check(dropped && c.Stats().LateDropped == 1, "late DEADLINE_EXCEEDED answers dropped: %d, want 1", c.Stats().LateDropped)
	t.Check(expired.Text(serverapi.KeyMethod) == bank.MethodDebit, "server log has no %s event for the debit: %v", serverapi.EventExpired, expired)
}

// findLogLine returns the first line of the log at path containing
func retryUnavailableNonIdempotent(t *T) {
	s := t.startServer(serverOpts{Faults: []string{"kind=unavailable method=debit count=2"}})
	c := t.client(s.Addr, client.DefaultConfig())
	r := c.Do(t.ctx, debitCall("acct-U", 10, ""))
	ctr := t.counters(s)
	t.Field("status", brief(r, "balance"))
	t.Field("attempts", r.Attempts)
	t.Field("outcomes", outcomes(r))
	t.Volatile("log", attemptLog(r))
	t.Field("serverDebitExec", ctr.ExecDebit)
	t.Field("rejectedUnavailable", ctr.Unavailable)
	t.Check(r.Status == proto.StatusOK, "status=%v, want OK", r.Status)
	t.Check(r.Attempts == 3, "attempts=%d, want 3", r.Attempts)
	t.Check(ctr.ExecDebit == 1, "executed %d times, want 1", ctr.ExecDebit)
	t.Check(ctr.Unavailable == 2, "unavailable rejections=%d, want 2", ctr.Unavailable)
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
	t.Field("status", r.Status)
	t.Field("attempts", r.Attempts)
	t.Field("outcomes", outcomes(r))
	t.Volatile("log", attemptLog(r))
	t.Field("stop", r.Stop)
	t.Field("serverDebitExec", ctr.ExecDebit)
	t.Field("balance", balance)
	t.Check(r.Status == proto.StatusUnknown, "status=%v, want UNKNOWN", r.Status)
	t.Check(r.Attempts == 1, "attempts=%d, want 1", r.Attempts)
	t.Check(ctr.ExecDebit == 1 && balance == bank.DefaultBalance-10, "executed %d times, balance %d; want 1 and %d", ctr.ExecDebit, balance, bank.DefaultBalance-10)
}

func retryWithIdempotencyKey(t *T) {
	r, ctr, balance := t.debitWithoutReply(client.DefaultConfig(), "acct-K", "debit-acct-K-0001")
	t.Field("status", r.Status)
	t.Field("attempts", r.Attempts)
	t.Field("outcomes", outcomes(r))
	t.Volatile("log", attemptLog(r))
	t.Field("replayed", fields(r)["replayed"])
	t.Field("exec", fields(r)["exec"])
	t.Volatile("payload", string(r.Payload))
	t.Field("serverDebitExec", ctr.ExecDebit)
	t.Field("dedupHits", ctr.DedupHits)
	t.Field("balance", balance)
	t.Check(r.Status == proto.StatusOK && r.Attempts == 2, "status=%v attempts=%d, want OK after 2", r.Status, r.Attempts)
	t.Check(fields(r)["replayed"] == "true", "second attempt was not a replay: %q", r.Payload)
	t.Check(ctr.ExecDebit == 1 && ctr.DedupHits == 1, "executed %d times with %d dedup hits, want 1 and 1", ctr.ExecDebit, ctr.DedupHits)
	t.Check(balance == bank.DefaultBalance-10, "balance=%d, want %d", balance, bank.DefaultBalance-10)
}

// negativeControlNaiveRetry passes only if the naive policy really
// executed one logical debit twice.
func negativeControlNaiveRetry(t *T) {
	cfg := client.DefaultConfig()
	cfg.RetryUnknown = retryNaive
	r, ctr, balance := t.debitWithoutReply(cfg, "acct-V", "")
	t.Field("expectDoubleExecution", true)
	t.Field("policy", "NAIVE")
	t.Field("status", r.Status)
	t.Field("attempts", r.Attempts)
	t.Field("outcomes", outcomes(r))
	t.Field("serverDebitExec", ctr.ExecDebit)
	t.Field("balance", balance)
	t.Field("logicalDebits", 1)
	t.Field("amount", 10)
	t.Check(r.Status == proto.StatusOK, "naive client reported %v, want OK (the defect hides behind an OK)", r.Status)
	t.Check(ctr.ExecDebit == 2 && balance == bank.DefaultBalance-20,
		"expected a double execution: executed %d times, balance %d", ctr.ExecDebit, balance)
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
	t.Field("differentBody", fmt.Sprintf("%v %s", other.Status, other.Payload))
	t.Field("sameBody", brief(same, "balance", "replayed"))
	t.Field("serverDebitExec", ctr.ExecDebit)
	t.Field("keyConflicts", ctr.KeyConflicts)
	t.Field("balance", balance)
	t.Check(first.Status == proto.StatusOK, "first=%v, want OK", first.Status)
	t.Check(other.Status == proto.StatusInvalidArgument && string(other.Payload) == bank.ErrKeyReused,
		"different body: %v %q, want INVALID_ARGUMENT %q", other.Status, other.Payload, bank.ErrKeyReused)
	t.Check(other.Attempts == 1, "different body: attempts=%d, want 1 (final status)", other.Attempts)
	t.Check(same.Status == proto.StatusOK && fields(same)["replayed"] == "true", "same body: %v %q, want a replayed OK", same.Status, same.Payload)
	t.Check(ctr.ExecDebit == 1 && balance == bank.DefaultBalance-10, "executed %d times, balance %d; want 1 and %d", ctr.ExecDebit, balance, bank.DefaultBalance-10)
}
