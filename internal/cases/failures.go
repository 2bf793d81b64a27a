package cases

import (
	"strings"
	"time"

	"github.com/rpcbench/rpcbench/internal/proto"
)

// execThenFail drives the scenarios where the server executes and then
// breaks the answer with fault kind: an idempotent get must be retried on
// a new connection and succeed; a keyless debit must end UNKNOWN after one
// attempt, executed exactly once.
func execThenFail(t *T, kind string) (get, debit proto.Result, c *proto.Client, ctr map[string]int64) {
	s := t.startServer(serverOpts{Faults: []string{
		"kind=" + kind + " method=get count=1",
		"kind=" + kind + " method=debit count=1",
	}})
	c = t.client(s.Addr, proto.DefaultConfig())
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
	t.Field("serverDebitExec", ctr["exec.debit"])
	t.Field("balance", balance)
	t.Field("clientConnections", conns)
	t.Check(get.Status == proto.StatusOK && fields(get)["account"] == "acct-F", "get=%v %q, want OK acct-F", get.Status, get.Payload)
	t.Check(get.Attempts == 2, "get attempts=%d, want 2", get.Attempts)
	t.Check(debit.Status == proto.StatusUnknown && debit.Attempts == 1, "debit=%v after %d attempts, want UNKNOWN after 1", debit.Status, debit.Attempts)
	t.Check(ctr["exec.debit"] == 1 && balance == proto.DefaultBalance-10, "debit executed %d times, balance %d; want 1 and %d", ctr["exec.debit"], balance, proto.DefaultBalance-10)
	t.Check(conns >= 2, "client connections=%d: the get was not retried on a new connection", conns)
	return get, debit, c, ctr
}

func closeAfterExec(t *T) {
	get, _, _, _ := execThenFail(t, "close")
	t.Check(len(get.Log) > 0 && get.Log[0].Outcome == proto.OutcomeConnLost, "first get attempt %v, want %s", outcomes(get), proto.OutcomeConnLost)
}

func halfWrittenResponseDiscarded(t *T) {
	get, debit, c, _ := execThenFail(t, "partial")
	st := c.Stats()
	t.Field("partialBytesDiscarded", st.PartialBytes)
	t.Check(st.PartialBytes > 0, "no partial bytes were buffered: the fault did not reach the client's decoder")
	for _, r := range []proto.Result{get, debit} {
		if len(r.Log) > 0 {
			a := r.Log[0]
			t.Check(a.Outcome == proto.OutcomeConnLost && strings.Contains(a.Err, "buffered partial bytes="),
				"first attempt %s %q, want %s with partial bytes", a.Outcome, a.Err, proto.OutcomeConnLost)
		}
	}
}

func invalidFrameFromServer(t *T) {
	get, debit, c, _ := execThenFail(t, "badmagic")
	t.Field("clientProtocolErrors", c.Stats().ProtocolErrors)
	for _, r := range []proto.Result{get, debit} {
		if len(r.Log) > 0 {
			a := r.Log[0]
			t.Check(a.Outcome == proto.OutcomeProtocolError && strings.Contains(a.Err, "bad magic 0xdead"),
				"first attempt %s %q, want %s bad magic 0xdead", a.Outcome, a.Err, proto.OutcomeProtocolError)
		}
	}
}

func connectRefusedBoundedRetry(t *T) {
	addr, err := freeAddr()
	if err != nil {
		t.Fatalf("free address: %v", err)
	}
	c := t.client(addr, proto.DefaultConfig())
	long := getCall("acct-X")
	long.Timeout = 5 * time.Second
	rl := c.Do(t.ctx, long)

	// Exact pauses make the second limit deterministic: after attempt 2,
	// at least 20ms have passed and the next pause is 40ms, which would
	// end past the 60ms deadline.
	cfg := proto.DefaultConfig()
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
	t.Check(rl.Status == proto.StatusUnavailable && rl.Attempts == 4 && rl.Stop == proto.StopMaxAttempts,
		"5s deadline: %v after %d attempts (%s), want UNAVAILABLE after 4 (%s)", rl.Status, rl.Attempts, rl.Stop, proto.StopMaxAttempts)
	t.Check(rs.Attempts == 2 && rs.Stop == proto.StopBackoffCrosses,
		"60ms deadline: %d attempts (%s), want 2 (%s)", rs.Attempts, rs.Stop, proto.StopBackoffCrosses)
	t.Check(rs.Elapsed <= short.Timeout+slack, "60ms call took %v", rs.Elapsed)
	for _, a := range append(rl.Log, rs.Log...) {
		if !t.Check(a.Class == proto.ClassNotSent, "attempt %v, want NOT_SENT", a) {
			break
		}
	}
}

func classes(r proto.Result) string {
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
	s := t.startServer(serverOpts{Addr: addr, StartDelay: startDelay, NoWait: true})
	cfg := proto.DefaultConfig()
	cfg.MaxAttempts = 8
	c := t.client(addr, cfg)
	d := debitCall("acct-Z", 10, "")
	d.Timeout = 5 * time.Second
	r := c.Do(t.ctx, d)
	if err := s.awaitListen(t.ctx, startTimeout); err != nil {
		t.Fatalf("server: %v", err)
	}
	ctr := t.counters(s)
	notSent := 0
	for _, a := range r.Log {
		if a.Class == proto.ClassNotSent {
			notSent++
		}
	}
	t.Field("status", brief(r, "balance", "exec"))
	t.Field("refusedThenOk", notSent == r.Attempts-1 && notSent > 0)
	t.Volatile("attempts", r.Attempts)
	t.Volatile("refused", notSent)
	t.Volatile("log", attemptLog(r))
	t.Field("serverDebitExec", ctr["exec.debit"])
	t.Check(r.Status == proto.StatusOK, "status=%v, want OK", r.Status)
	t.Check(notSent > 0, "no attempt was refused: the server was up before the first attempt")
	t.Check(notSent == r.Attempts-1, "%d of %d attempts were not sent; every attempt but the last should be", notSent, r.Attempts)
	t.Check(ctr["exec.debit"] == 1, "executed %d times, want 1", ctr["exec.debit"])
}
