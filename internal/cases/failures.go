package cases

import (
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

	t.Field("get", brief(get, "account"))
	t.Field("getAttempts", get.Attempts)
	t.Field("getOutcomes", outcomes(get))
	t.Volatile("getLog", attemptLog(get))
	t.Field("debit", debit.Status)
	t.Field("debitAttempts", debit.Attempts)
	t.Field("debitOutcomes", outcomes(debit))
	t.Volatile("debitLog", attemptLog(debit))
	t.Field("serverDebitExec", ctr.ExecDebit)
	t.Field("balance", balance)
	t.Field("clientConnections", conns)
	t.Check(get.Status == proto.StatusOK && fields(get)["account"] == "acct-F", "get=%v %q, want OK acct-F", get.Status, get.Payload)
	t.Check(get.Attempts == 2, "get attempts=%d, want 2", get.Attempts)
	t.Check(debit.Status == proto.StatusUnknown && debit.Attempts == 1, "debit=%v after %d attempts, want UNKNOWN after 1", debit.Status, debit.Attempts)
	t.Check(ctr.ExecDebit == 1 && balance == bank.DefaultBalance-10, "debit executed %d times, balance %d; want 1 and %d", ctr.ExecDebit, balance, bank.DefaultBalance-10)
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
			t.Check(a.Outcome == client.OutcomeConnLost && strings.Contains(a.Err, "buffered partial bytes="),
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
			t.Check(a.Outcome == client.OutcomeProtocolError && strings.Contains(a.Err, "bad magic 0xdead"),
				"first attempt %s %q, want %s bad magic 0xdead", a.Outcome, a.Err, client.OutcomeProtocolError)
		}
	}
}

func connectRefusedBoundedRetry(t *T) {
	addr, err := freeAddr()
	if err != nil {
		t.Fatalf("free address: %v", err)
	}
	c := t.client(addr, client.DefaultConfig())
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

	t.Field("deadline5s", rl.Status)
	t.Field("attempts", rl.Attempts)
	t.Field("stop", rl.Stop)
	t.Field("classes", classes(rl))
	t.Volatile("elapsed", ms(rl.Elapsed))
	t.Field("deadline60ms", rs.Status)
	t.Field("attempts60ms", rs.Attempts)
	t.Field("stop60ms", rs.Stop)
	t.Volatile("elapsed60ms", ms(rs.Elapsed))
	t.Check(rl.Status == proto.StatusUnavailable && rl.Attempts == 4 && rl.Stop == client.StopMaxAttempts,
		"5s deadline: %v after %d attempts (%s), want UNAVAILABLE after 4 (%s)", rl.Status, rl.Attempts, rl.Stop, client.StopMaxAttempts)
	t.Check(rs.Attempts == 2 && rs.Stop == client.StopBackoffCrosses,
		"60ms deadline: %d attempts (%s), want 2 (%s)", rs.Attempts, rs.Stop, client.StopBackoffCrosses)
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
	t.Field("refusedThenOk", notSent == r.Attempts-1 && notSent > 0)
	t.Volatile("attempts", r.Attempts)
	t.Volatile("refused", notSent)
	t.Volatile("log", attemptLog(r))
	t.Field("serverDebitExec", ctr.ExecDebit)
	t.Check(r.Status == proto.StatusOK, "status=%v, want OK", r.Status)
	t.Check(notSent > 0, "no attempt was refused: the server was up before the first attempt")
	t.Check(notSent == r.Attempts-1, "%d of %d attempts were not sent; every attempt but the last should be", notSent, r.Attempts)
	t.Check(ctr.ExecDebit == 1, "executed %d times, want 1", ctr.ExecDebit)
}
