package cases

import (
	"fmt"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// duplicateWhileExecuting sends two duplicates of a keyed debit while the
// original still executes (it sleeps): one whose budget ends first must
// be answered DEADLINE_EXCEEDED when its budget ends, unexecuted; one with
// a longer budget must wait and get the original's answer. The duplicates
// go over a raw connection, so that the scenario, not a client's attempt
// timeout, decides how long to wait for their answers.
func duplicateWhileExecuting(t *T) {
	const (
		origSleep = 600 * time.Millisecond
		dupBudget = 100 * time.Millisecond
		key       = "debit-acct-W-0001"
	)
	// A zero-length sleep fault on the first debit logs a FAULT event on
	// the worker right before the original claims its key and executes:
	// the barrier the duplicates wait for.
	s := t.startServer(serverOpts{Faults: []string{"kind=sleep method=debit count=1"}})
	c := t.client(s.Addr, client.DefaultConfig())
	orig := debitCall("acct-W", 10, key)
	orig.Payload = fmt.Appendf(orig.Payload, " sleep=%d", origSleep.Milliseconds())
	orig.Timeout, orig.AttemptTimeout = 5*time.Second, 5*time.Second
	done := make(chan client.Result, 1)
	go func() { done <- c.Do(t.ctx, orig) }()
	isBarrier := func(e serverapi.Event) bool {
		return e.Name == serverapi.EventFault && e.Text(serverapi.KeyMethod) == bank.MethodDebit
	}
	if !waitFor(5*time.Second, func() bool { return countEvents(t.events(s), isBarrier) > 0 }) {
		<-done
		t.Fatalf("the original debit never reached a worker")
	}

	nc := t.dialRaw(s.Addr)
	dup := func(id uint64, b time.Duration) (proto.Frame, time.Duration) {
		f := proto.Frame{Type: proto.TypeRequest, ID: id, BudgetMs: uint32(b.Milliseconds()), Method: bank.MethodDebit, Key: key, Payload: orig.Payload}
		start := time.Now()
		if err := writeTimed(nc, t.encode(f)); err != nil {
			t.Fatalf("duplicate %d: write: %v", id, err)
		}
		r, err := readFrame(nc)
		if err != nil {
			t.Fatalf("duplicate %d: no answer: %v", id, err)
		}
		return r, time.Since(start)
	}
	short, shortAfter := dup(1, dupBudget)
	long, _ := dup(2, 5*time.Second)
	ro := <-done
	ctr := t.counters(s)
	expiredLogged := countEvents(t.events(s), func(e serverapi.Event) bool { return e.Name == serverapi.EventDedupWaitExpired })

	expectf(t, "shortDuplicate", fmt.Sprintf("%v %s", short.Status, short.Payload), fmt.Sprintf("%v original request with this key still executing", proto.StatusDeadlineExceeded),
		"a duplicate whose budget ends while the original executes")
	// The server answers when the duplicate's budget ends, counted from
	// its arrival, so never sooner than dupBudget after it was written.
	between(t, "shortDuplicateAnswered", shortAfter, dupBudget, dupBudget+slack)
	expectf(t, "longDuplicate", brief(client.Result{Status: long.Status, Payload: long.Payload}, "balance", "replayed"), "OK balance=990 replayed=true",
		"payload %q", long.Payload)
	expectf(t, "original", brief(ro, "balance", "replayed"), "OK balance=990 replayed=false", "payload %q, log %s", ro.Payload, attemptLog(ro))
	expect(t, "serverDebitExec", ctr.ExecDebit, 1)
	expect(t, "dedupHits", ctr.DedupHits, 1)
	expect(t, "dedupWaitExpiredLogged", expiredLogged, 1)
	expect(t, "balance", t.balance(s, "acct-W"), bank.DefaultBalance-10)
}
