package evidence

import (
	"fmt"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// duplicateWhileExecuting sends two duplicates of a keyed debit while the
// original still executes (it sleeps): one whose budget ends first must
// be answered DEADLINE_EXCEEDED when its budget ends, unexecuted; one with
// a longer budget must wait and get the original's answer. The duplicates
// go over a raw connection, so that the scenario, not a client's attempt
// timeout, decides how long to wait for their answers.
func duplicateWhileExecuting(t *scenario.T) {
	const (
		origSleep = 600 * time.Millisecond
		dupBudget = 100 * time.Millisecond
		key       = "debit-acct-W-0001"
	)
	// A zero-length sleep fault on the first debit logs a FAULT event on
	// the worker right before the original claims its key and executes:
	// the barrier the duplicates wait for.
	s := t.StartServer(scenario.ServerOpts{Faults: []string{"kind=sleep method=debit count=1"}})
	c := t.Client(s.Addr, client.DefaultConfig())
	orig := scenario.DebitCall("acct-W", 10, key)
	orig.Payload = fmt.Appendf(orig.Payload, " sleep=%d", origSleep.Milliseconds())
	orig.Timeout, orig.AttemptTimeout = 5*time.Second, 5*time.Second
	done := make(chan client.Result, 1)
	go func() { done <- c.Do(t.Ctx, orig) }()
	isBarrier := func(e serverapi.Event) bool {
		return e.Name == serverapi.EventFault && e.Text(serverapi.KeyMethod) == bank.MethodDebit
	}
	if !scenario.WaitFor(5*time.Second, func() bool { return scenario.CountEvents(t.Events(s), isBarrier) > 0 }) {
		<-done
		t.Fatalf("the original debit never reached a worker")
	}

	nc := t.DialRaw(s.Addr)
	dup := func(id uint64, b time.Duration) (proto.Frame, time.Duration) {
		f := proto.Frame{Type: proto.TypeRequest, ID: id, BudgetMs: uint32(b.Milliseconds()), Method: bank.MethodDebit, Key: key, Payload: orig.Payload}
		start := time.Now()
		if err := scenario.WriteTimed(nc, t.Encode(f)); err != nil {
			t.Fatalf("duplicate %d: write: %v", id, err)
		}
		r, err := scenario.ReadFrame(nc)
		if err != nil {
			t.Fatalf("duplicate %d: no answer: %v", id, err)
		}
		return r, time.Since(start)
	}
	short, shortAfter := dup(1, dupBudget)
	long, _ := dup(2, 5*time.Second)
	ro := <-done
	ctr := t.Counters(s)
	expiredLogged := scenario.CountEvents(t.Events(s), func(e serverapi.Event) bool { return e.Name == serverapi.EventDedupWaitExpired })

	scenario.Expectf(t, "shortDuplicate", fmt.Sprintf("%v %s", short.Status, short.Payload), fmt.Sprintf("%v original request with this key still executing", proto.StatusDeadlineExceeded),
		"a duplicate whose budget ends while the original executes")
	// The server answers when the duplicate's budget ends, counted from
	// its arrival, so never sooner than dupBudget after it was written.
	scenario.Between(t, "shortDuplicateAnswered", shortAfter, dupBudget, dupBudget+scenario.Slack)
	scenario.Expectf(t, "longDuplicate", scenario.Brief(client.Result{Status: long.Status, Payload: long.Payload}, "balance", "replayed"), "OK balance=990 replayed=true",
		"payload %q", long.Payload)
	scenario.Expectf(t, "original", scenario.Brief(ro, "balance", "replayed"), "OK balance=990 replayed=false", "payload %q, log %s", ro.Payload, scenario.AttemptLog(ro))
	scenario.Expect(t, "serverDebitExec", ctr.ExecDebit, 1)
	scenario.Expect(t, "dedupHits", ctr.DedupHits, 1)
	scenario.Expect(t, "dedupWaitExpiredLogged", expiredLogged, 1)
	scenario.Expect(t, "balance", t.Balance(s, "acct-W"), bank.DefaultBalance-10)
}
