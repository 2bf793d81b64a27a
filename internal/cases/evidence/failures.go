package evidence

import (
	"errors"
	"strings"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/serverproc"
)

// execThenFail drives the scenarios where the server executes and then
// breaks the answer with fault kind: an idempotent get must be retried on
// a new connection and succeed; a keyless debit must end UNKNOWN after one
// attempt, executed exactly once.
func execThenFail(t *scenario.T, kind string) (get, debit client.Result, c *client.Client, ctr scenario.Counters) {
	s := t.StartServer(scenario.ServerOpts{Faults: []string{
		"kind=" + kind + " method=get count=1",
		"kind=" + kind + " method=debit count=1",
	}})
	c = t.Client(s.Addr, client.DefaultConfig())
	get = c.Do(t.Ctx, scenario.GetCall("acct-F"))
	debit = c.Do(t.Ctx, scenario.DebitCall("acct-F", 10, ""))
	conns := c.Stats().ConnsOpened
	ctr = t.Counters(s)
	balance := t.Balance(s, "acct-F")

	scenario.Expectf(t, "get", scenario.Brief(get, "account"), "OK account=acct-F", "payload %q", get.Payload)
	scenario.Expect(t, "getAttempts", get.Attempts, 2)
	t.Field("getOutcomes", scenario.Outcomes(get))
	t.Volatile("getLog", scenario.AttemptLog(get))
	scenario.Expect(t, "debit", debit.Status, proto.StatusUnknown)
	scenario.Expect(t, "debitAttempts", debit.Attempts, 1)
	t.Field("debitOutcomes", scenario.Outcomes(debit))
	t.Volatile("debitLog", scenario.AttemptLog(debit))
	scenario.Expect(t, "serverDebitExec", ctr.ExecDebit, 1)
	scenario.Expect(t, "balance", balance, bank.DefaultBalance-10)
	t.Field("clientConnections", conns)
	t.Check(conns >= 2, "client connections=%d: the get was not retried on a new connection", conns)
	return get, debit, c, ctr
}

func closeAfterExec(t *scenario.T) {
	get, _, _, _ := execThenFail(t, "close")
	t.Check(len(get.Log) > 0 && get.Log[0].Outcome == client.OutcomeConnLost, "first get attempt %v, want %s", scenario.Outcomes(get), client.OutcomeConnLost)
}

func halfWrittenResponseDiscarded(t *scenario.T) {
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

func invalidFrameFromServer(t *scenario.T) {
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

func connectRefusedBoundedRetry(t *scenario.T) {
	addr, err := scenario.FreeAddr()
	if err != nil {
		t.Fatalf("free address: %v", err)
	}
	cfgLong := client.DefaultConfig()
	c := t.Client(addr, cfgLong)
	long := scenario.GetCall("acct-X")
	long.Timeout = 5 * time.Second
	rl := c.Do(t.Ctx, long)

	// Exact pauses make the second limit deterministic: after attempt 2,
	// at least 20ms have passed and the next pause is 40ms, which would
	// end past the 60ms deadline.
	cfg := client.DefaultConfig()
	cfg.Jitter = 0
	cs := t.Client(addr, cfg)
	short := scenario.GetCall("acct-X")
	short.Timeout = 60 * time.Millisecond
	rs := cs.Do(t.Ctx, short)

	scenario.Expect(t, "deadline5s", rl.Status, proto.StatusUnavailable)
	scenario.Expect(t, "attempts", rl.Attempts, 4)
	scenario.Expect(t, "stop", rl.Stop, client.StopMaxAttempts)
	t.Field("classes", classes(rl))
	t.Volatile("elapsed", scenario.Millis(rl.Elapsed))
	scenario.Pauses(t, "pause%d", rl, cfgLong)
	t.Field("deadline60ms", rs.Status)
	scenario.Expect(t, "attempts60ms", rs.Attempts, 2)
	scenario.Expect(t, "stop60ms", rs.Stop, client.StopBackoffCrosses)
	t.Volatile("elapsed60ms", scenario.Millis(rs.Elapsed))
	scenario.Pauses(t, "pause%dOf60ms", rs, cfg)
	t.Check(rs.Elapsed <= short.Timeout+scenario.Slack, "60ms call took %v", rs.Elapsed)
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

func serverStartsLateRecovery(t *scenario.T) {
	const startDelay = 200 * time.Millisecond
	addr, err := scenario.FreeAddr()
	if err != nil {
		t.Fatalf("free address: %v", err)
	}
	s := t.StartServerNoWait(scenario.ServerOpts{Addr: addr, StartDelay: startDelay})
	cfg := client.DefaultConfig()
	cfg.MaxAttempts = 8
	c := t.Client(addr, cfg)
	d := scenario.DebitCall("acct-Z", 10, "")
	d.Timeout = 5 * time.Second
	r := c.Do(t.Ctx, d)
	if err := s.Await(t.Ctx, serverproc.StartTimeout); err != nil {
		t.Fatalf("server: %v", err)
	}
	ctr := t.Counters(s)
	notSent := 0
	for _, a := range r.Log {
		if a.Class == client.ClassNotSent {
			notSent++
		}
	}
	t.Field("status", scenario.Brief(r, "balance", "exec"))
	scenario.Expectf(t, "refusedThenOk", notSent == r.Attempts-1 && notSent > 0, true,
		"%d of %d attempts were not sent; every attempt but the last should be, and at least one (else the server was up before the first)", notSent, r.Attempts)
	t.Volatile("attempts", r.Attempts)
	t.Volatile("refused", notSent)
	t.Volatile("log", scenario.AttemptLog(r))
	scenario.Expect(t, "serverDebitExec", ctr.ExecDebit, 1)
	t.Check(r.Status == proto.StatusOK, "status=%v, want OK", r.Status)
}
