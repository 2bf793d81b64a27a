package governance

import (
	"context"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// cancelSkipsQueuedWork: with one worker busy on a 300ms get, a keyless
// debit queued behind it is canceled by its caller after 50ms. With
// Config.CancelAbandoned the client sends ctl.cancel and the server drops
// the debit unexecuted when the worker frees up; without it, the debit,
// whose 2s budget has not run out, executes for nobody.
//
// The caller cancels rather than the attempt timing out: a timed-out
// attempt's budget ran out with it, so the server would not execute it
// anyway (it would count it expired).
func cancelSkipsQueuedWork(t *scenario.T) {
	on := abandonQueuedDebit(t, true)
	scenario.Expect(t, "outcome", on.outcome, client.OutcomeCanceled)
	scenario.Expect(t, "cancelsSent", on.cancelsSent, int64(1))
	scenario.Expectf(t, "execDebit", on.execDebit, int64(0), "the canceled debit executed")
	scenario.Expect(t, "canceled", on.canceled, int64(1))

	off := abandonQueuedDebit(t, false)
	scenario.Expect(t, "contrastCancelsSent", off.cancelsSent, int64(0))
	scenario.Expectf(t, "contrastExecDebit", off.execDebit, int64(1), "without ctl.cancel the abandoned debit should still execute")
	scenario.Expect(t, "contrastCanceled", off.canceled, int64(0))

	foreign := foreignCancel(t)
	scenario.Expectf(t, "foreignFound", foreign.found, "false", "a ctl.cancel on another connection naming the queued debit's ID")
	scenario.Expectf(t, "foreignWhileQueued", foreign.whileQueued, true, "the foreign cancel came after the debit left the queue: the check proves nothing")
	scenario.Expectf(t, "foreignDebit", foreign.debit, proto.StatusOK.String(), "the debit of the connection that canceled nothing")
	scenario.Expectf(t, "foreignExecDebit", foreign.execDebit, 1, "EXEC events of the debit")
	scenario.Expect(t, "foreignCanceled", foreign.canceled, 0)
}

// foreignCanceled is what foreignCancel saw.
type foreignCanceled struct {
	found       string // the cancel's answer's found field: true or false
	whileQueued bool   // the server took the cancel while the debit was queued
	debit       string // the debit's answer status
	execDebit   int    // the debit's EXEC events
	canceled    int    // CANCELED events
}

// foreignRole is the role the canceling connection declares, right after
// its cancel, so that the server's log dates the cancel.
const foreignRole = "foreign-cancel"

// foreignCancel: with one worker busy on a 500ms get, connection A has a
// debit with request ID 2 queued; connection B, which never sent a
// request 2, sends ctl.cancel id=2. A cancel names a request of its own
// connection (SPEC.md, ctl.cancel): B's finds nothing, and A's debit
// executes.
func foreignCancel(t *scenario.T) foreignCanceled {
	s := t.StartServer(scenario.ServerOpts{Workers: 1})
	const account = "acct-foreign"
	req := func(id uint64, method, payload string) proto.Frame {
		return proto.Frame{Type: proto.TypeRequest, ID: id, BudgetMs: 10_000, Method: method, Payload: []byte(payload)}
	}
	a := t.DialFrames(s.Addr)
	// The ping is answered by A's reader at once, after it queued the
	// debit: its answer says the debit is in the queue.
	a.Send(t,
		req(1, bank.MethodGet, "account="+account+" sleep=500"),
		req(2, bank.MethodDebit, "account="+account+" amount=10"),
		req(3, serverapi.MethodPing, ""))
	if f, err := a.Read(); err != nil || f.ID != 3 {
		t.Fatalf("connection A: first answer %v %v, want the ping's (3)", err, f.ID)
	}
	b := t.DialFrames(s.Addr)
	b.Send(t, req(1, serverapi.MethodCancel, "id=2"), req(2, serverapi.MethodHello, "role="+foreignRole))
	answersB := b.ReadN(t, 2)
	answersA := a.ReadN(t, 2)

	evs := t.Events(s)
	// B's reader took the cancel before it logged B's role; the worker
	// takes the debit only after it has executed the get.
	roleAt, getAt := -1, -1
	for i, e := range evs {
		switch {
		case e.Name == serverapi.EventConnRole && e.Text(serverapi.KeyRole) == foreignRole && roleAt < 0:
			roleAt = i
		case e.Name == serverapi.EventExec && e.Text(serverapi.KeyMethod) == bank.MethodGet &&
			e.Text(serverapi.KeyAccount) == account && getAt < 0:
			getAt = i
		}
	}
	return foreignCanceled{
		found:       scenario.FieldOf(answersB[1].Payload, "found"),
		whileQueued: roleAt >= 0 && getAt >= 0 && roleAt < getAt,
		debit:       answersA[2].Status.String(),
		execDebit: scenario.CountEvents(evs, func(e serverapi.Event) bool {
			return e.Name == serverapi.EventExec && e.Text(serverapi.KeyMethod) == bank.MethodDebit && e.Text(serverapi.KeyAccount) == account
		}),
		canceled: scenario.CountEvents(evs, func(e serverapi.Event) bool { return e.Name == serverapi.EventCanceled }),
	}
}

// abandonedDebit is what abandonQueuedDebit saw.
type abandonedDebit struct {
	outcome             client.Outcome
	cancelsSent         int64
	execDebit, canceled int64
}

// abandonQueuedDebit runs the setup of cancelSkipsQueuedWork on a server
// of its own, with Config.CancelAbandoned set to cancel, and returns once
// the worker has taken the debit.
func abandonQueuedDebit(t *scenario.T, cancel bool) abandonedDebit {
	s := t.StartServer(scenario.ServerOpts{Workers: 1})
	cfg := client.DefaultConfig()
	cfg.CancelAbandoned = cancel
	c := t.Client(s.Addr, cfg)

	slow := scenario.GetCall("acct-A")
	slow.Payload = append(slow.Payload, " sleep=300"...)
	slow.AttemptTimeout, slow.Timeout = 2*time.Second, 5*time.Second
	slowDone := make(chan client.Result, 1)
	go func() { slowDone <- c.Do(t.Ctx, slow) }()
	waitCounters(t, s, "the slow get to arrive", func(c scenario.Counters) bool { return c.RequestsGet >= 1 })

	ctx, stop := context.WithCancel(t.Ctx)
	defer stop()
	// Not WithTimeout: a context deadline would shorten the budget the
	// server is sent, and the debit would expire there instead.
	time.AfterFunc(50*time.Millisecond, stop)
	debit := scenario.DebitCall("acct-A", 10, "")
	debit.AttemptTimeout, debit.Timeout = 2*time.Second, 5*time.Second
	r := c.Do(ctx, debit)
	if len(r.Log) != 1 || r.Status != proto.StatusUnknown {
		t.Fatalf("debit: status %v after %d attempts (%v), want UNKNOWN after 1", r.Status, len(r.Log), r.Log)
	}
	if r := <-slowDone; r.Status != proto.StatusOK {
		t.Fatalf("slow get: %v (%v), want OK", r.Status, r.Log)
	}
	// The worker takes the debit right after the get: it either executes
	// it or drops it.
	n := waitCounters(t, s, "the worker to take the debit", func(c scenario.Counters) bool {
		return c.ExecDebit+c.Canceled+c.Expired >= 1
	})
	return abandonedDebit{
		outcome: r.Log[0].Outcome, cancelsSent: c.Stats().CancelsSent,
		execDebit: n.ExecDebit, canceled: n.Canceled,
	}
}

// waitCounters polls the server's counters until cond holds, for at most
// 5s, and returns the ones it held for.
func waitCounters(t *scenario.T, s *scenario.Server, what string, cond func(scenario.Counters) bool) scenario.Counters {
	deadline := time.Now().Add(5 * time.Second)
	for {
		c := t.Counters(s)
		if cond(c) {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 5s for %s; counters %v", what, c.Counters)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
