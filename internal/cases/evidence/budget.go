package evidence

import (
	"context"
	"strconv"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/scenario"
)

// budgetSentIsTimeLeft checks the budget each attempt sends against what
// is left of it (internal/client/POLICY.md, "Calls, attempts and budgets"), as the server
// received it: a get's OK answer echoes the budget.
func budgetSentIsTimeLeft(t *scenario.T) {
	const short = 100 * time.Millisecond
	s := t.StartServer(scenario.ServerOpts{})
	cfg := client.DefaultConfig()
	c := t.Client(s.Addr, cfg)

	// The first call dials, which takes part of its attempt.
	fresh := c.Do(t.Ctx, scenario.GetCall("acct-T"))
	open := c.Do(t.Ctx, scenario.GetCall("acct-T"))
	timed := scenario.GetCall("acct-T")
	timed.Timeout = short
	rt := c.Do(t.Ctx, timed)
	ctx, cancel := context.WithTimeout(t.Ctx, short)
	rc := c.Do(ctx, scenario.GetCall("acct-T"))
	cancel()

	scenario.Within(t, "afterDialBudget", echoedBudget(t, "afterDial", fresh), cfg.AttemptTimeout-time.Millisecond)
	scenario.Expectf(t, "openConnBudget", scenario.Millis(echoedBudget(t, "openConn", open)), scenario.Millis(cfg.AttemptTimeout), "an open connection sends the whole attempt timeout")
	scenario.Within(t, "callTimeoutBudget", echoedBudget(t, "callTimeout", rt), short)
	scenario.Within(t, "ctxDeadlineBudget", echoedBudget(t, "ctxDeadline", rc), short)
	t.Field("clientConns", c.Stats().ConnsOpened)
}

// echoedBudget returns the budget the server says a get carried, failing
// the scenario unless the get succeeded in one attempt that sent that
// budget.
func echoedBudget(t *scenario.T, what string, r client.Result) time.Duration {
	if r.Status != proto.StatusOK || len(r.Log) != 1 {
		t.Fatalf("%s get: %v after %d attempts (%s), want OK after 1", what, r.Status, r.Attempts, scenario.AttemptLog(r))
	}
	n, err := strconv.ParseUint(scenario.PayloadFields(r)["budget"], 10, 32)
	if err != nil {
		t.Fatalf("%s get: answer %q has no budget", what, r.Payload)
	}
	if sent := r.Log[0].BudgetMs; uint64(sent) != n {
		t.Fatalf("%s get: the client logged budget %d, the server received %d", what, sent, n)
	}
	return scenario.Budget(uint32(n))
}

// zeroBudgetNotExecuted sends debits whose budgetMs is 0, which the
// client never sends, on both of the server's paths: run by the reader
// itself, and queued for a worker (a sleep field, even sleep=0, sends a
// request through the queue). A budget of 0 has always run out.
func zeroBudgetNotExecuted(t *scenario.T) {
	s := t.StartServer(scenario.ServerOpts{})
	nc := t.DialRaw(s.Addr)
	batch := t.Encode(
		proto.Frame{Type: proto.TypeRequest, ID: 1, BudgetMs: 0, Method: bank.MethodDebit, Payload: []byte("account=acct-0 amount=10")},
		proto.Frame{Type: proto.TypeRequest, ID: 2, BudgetMs: 0, Method: bank.MethodDebit, Payload: []byte("account=acct-0 amount=10 sleep=0")},
	)
	if err := scenario.WriteTimed(nc, batch); err != nil {
		t.Fatalf("write: %v", err)
	}
	got := map[uint64]proto.Frame{}
	fr := proto.NewFrameReader(nc, proto.TypeResponse, 0)
	nc.SetReadDeadline(time.Now().Add(scenario.IOTimeout))
	for len(got) < 2 {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("read answers (%d of 2 so far): %v", len(got), err)
		}
		got[f.ID] = f
	}
	ctr := t.Counters(s)

	scenario.Expectf(t, "readerPath", got[1].Status, proto.StatusDeadlineExceeded, "payload %q", got[1].Payload)
	scenario.Expectf(t, "queuedPath", got[2].Status, proto.StatusDeadlineExceeded, "payload %q", got[2].Payload)
	scenario.Expect(t, "serverExpired", ctr.Expired, 2)
	scenario.Expectf(t, "serverDebitExec", ctr.ExecDebit, 0, "a debit with budget 0 executed")
	scenario.Expect(t, "balance", t.Balance(s, "acct-0"), bank.DefaultBalance)
}
