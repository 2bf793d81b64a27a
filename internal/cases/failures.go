package cases

import (
	"errors"
	"strings"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/serverproc"
)

// execThenFail drives the scenarios where the server executes and then
// breaks the answer with fault kind: an idempotent get must be retried on
// a new connection and succeed; a keyless debit must end UNKNOWN after one
// attempt, executed exactly once.
func execThenFail(t *T, kind string) (get, debit client.Result, c *client.Client, ctr counters) {
	s := t.startServer(serverOpts{Faults: []string{
		"kind=" + kind + " method=get count=1",
		"kind=" + kind + " method=debit count=1",
	}})
	c = t.client(s.Addr, client.DefaultConfig())
	get = c.Do(t.ctx, getCall("acct-F"))
	debit = c.Do(t.ctx, debitCall("acct-F", 10, ""))
	conns := c.Stats().ConnsOpened
	ctr = t.counters(s)
	balance := t.balance(s, "acct-F")

	expectf(t, "get", brief(get, "account"), "OK account=acct-F", "payload %q", get.Payload)
	expect(t, "getAttempts", get.Attempts, 2)
	t.Field("getOutcomes", outcomes(get))
	t.Volatile("getLog", attemptLog(get))
	expect(t, "debit", debit.Status, proto.StatusUnknown)
	expect(t, "debitAttempts", debit.Attempts, 1)
	t.Field("debitOutcomes", outcomes(debit))
	t.Volatile("debitLog", attemptLog(debit))
	expect(t, "serverDebitExec", ctr.ExecDebit, 1)
	expect(t, "balance", balance, bank.DefaultBalance-10)
	t.Field("clientConnections", conns)
	t.Check(conns >= 2, "client connections=%d: the get was not retried on a new connection", conns)
	return get, debit, c, ctr
}

func closeAfterExec(t *T) {
	get, _, _, _ := execThenFail(t, "close")
	t.Check(len(get.Log) > 0 && get.Log[0].Outcome == client.OutcomeConnLost, "first get attempt %v, want %s", outcomes(get), client.OutcomeConnLost)
}

func halfWrittenResponseDiscarded(t *T) {
	get, debit, c, _ := execThenFail(t, "partial")
	st := c.Stats()
	t.Field("partialBytesDiscarded", st.PartialBytes)
	t.Check(st.PartialBytes > 0, "no partial bytes were buffered: the fault did not reach the client's decoder")
	for _, r := range []client.Result{get, debit} {
		if len(r.Log) > 0 {
			a := r.Log[0]
			var lost *client.ConnLostError
			t.Check(a.Outcome == client.OutcomeConnLost && errors.As(a.Cause, &lost) && lost.Partial > 0,
				"first attempt %s %q, want %s with partial bytes", a.Outcome, a.Err, client.OutcomeConnLost)
		}
	}
}

func invalidFrameFromServer(t *T) {
	get, debit, c, _ := execThenFail(t, "badmagic")
	t.Field("clientProtocolErrors", c.Stats().ProtocolErrors)
	for _, r := range []client.Result{get, debit} {
		if len(r.Log) > 0 {
			a := r.Log[0]
			var pe *proto.ProtocolError
			t.Check(a.Outcome == client.OutcomeProtocolError && errors.As(a.Cause, &pe) && pe.Reason == "bad magic 0xdead",
				"first attempt %s %q, want %s bad magic 0xdead", a.Outcome, a.Err, client.OutcomeProtocolError)
		}
	}
}

func connectRefusedBoundedRetry(t *T) {
	addr, err := freeAddr()
	if err != nil {
		t.Fatalf("free address: %v", err)
	}
	cfgLong := client.DefaultConfig()
	c := t.client(addr, cfgLong)
	long := getCall("acct-X")
	long.Timeout = 5 * time.Second
	rl := c.Do(t.ctx, long)

	// Exact pauses make the second limit deterministic: after attempt 2,
	// at least 20ms have passed and the next pause is 40ms, which would
	// end past the 60ms deadline.
	cfg := client.DefaultConfig()
	cfg.Jitter = 0
	cs := t.client(addr, cfg)
	short := getCall("acct-X")
	short.Timeout = 60 * time.Millisecond
	rs := cs.Do(t.ctx, short)

	expect(t, "deadline5s", rl.Status, proto.StatusUnavailable)
	expect(t, "attempts", rl.Attempts, 4)
	expect(t, "stop", rl.Stop, client.StopMaxAttempts)
	t.Field("classes", classes(rl))
	t.Volatile("elapsed", ms(rl.Elapsed))
	pauses(t, "pause%d", rl, cfgLong)
	t.Field("deadline60ms", rs.Status)
	expect(t, "attempts60ms", rs.Attempts, 2)
	expect(t, "stop60ms", rs.Stop, client.StopBackoffCrosses)
	t.Volatile("elapsed60ms", ms(rs.Elapsed))
	pauses(t, "pause%dOf60ms", rs, cfg)
	t.Check(rs.Elapsed <= short.Timeout+slack, "60ms call took %v", rs.Elapsed)
	for _, a := range append(rl.Log, rs.Log...) {
		if !t.Check(a.Class == client.ClassNotSent, "attempt %v, want NOT_SENT", a) {
			break
		}
	}
}

func classes(r client.Result) string {
	parts := make([]string, len(r.Log))
	for i, a := range r.Log {
		parts[i] = a.Class.String()
	}
	return strings.Join(parts, ",")
}

func serverStartsLateRecovery(t *T) {
	const startDelay = 200 * time.Millisecond
	addr, err := freeAddr()
	if err != nil {
		t.Fatalf("free address: %v", err)
	}
	s := t.startServerNoWait(serverOpts{Addr: addr, StartDelay: startDelay})
	cfg := client.DefaultConfig()
	cfg.MaxAttempts = 8
	c := t.client(addr, cfg)
	d := debitCall("acct-Z", 10, "")
	d.Timeout = 5 * time.Second
	r := c.Do(t.ctx, d)
	if err := s.Await(t.ctx, serverproc.StartTimeout); err != nil {
		t.Fatalf("server: %v", err)
	}
	ctr := t.counters(s)
	notSent := 0
	for _, a := range r.Log {
		if a.Class == client.ClassNotSent {
			notSent++
		}
	}
	t.Field("status", brief(r, "balance", "exec"))
	expectf(t, "refusedThenOk", notSent == r.Attempts-1 && notSent > 0, true,
		"%d of %d attempts were not sent; every attempt but the last should be, and at least one (else the server was up before the first)", notSent, r.Attempts)
	t.Volatile("attempts", r.Attempts)
	t.Volatile("refused", notSent)
	t.Volatile("log", attemptLog(r))
	expect(t, "serverDebitExec", ctr.ExecDebit, 1)
	t.Check(r.Status == proto.StatusOK, "status=%v, want OK", r.Status)
}
