package robustness

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// Settings of backpressure_burst.
const (
	burstWorkers = 1
	burstQueue   = 8
	burstSize    = 200
	burstRetried = 40
	// A sleep field keeps a request off the reader's fast path, so it
	// must take the queue; 5 ms makes the burst outrun the worker.
	burstSleepMs = 5
	// Generous: no attempt may time out, or its outcome is unknown.
	burstAttemptTimeout = 2 * time.Second
)

func backpressureBurst(t *scenario.T) {
	s := t.StartServer(scenario.ServerOpts{Workers: burstWorkers, QueueSize: burstQueue})
	c := t.PoliteClient(s)
	w := t.Watch(s)
	t.Field("workers", burstWorkers)
	t.Field("queue", burstQueue)
	t.Field("burst", burstSize)
	t.Field("sleepMs", burstSleepMs)

	before := burstOnce(t, s, w)
	burstRetry(t, s, w, before)

	var after scenario.Polite
	after.Gets(t, c, scenario.PoliteAfter)
	t.Field("politeAfter", &after)
	w.Report(scenario.RSSLimitKB)
	after.Check(t, "after the bursts")
}

// burstOnce sends the burst through a client that makes one attempt per
// call, so that each result says what happened to its one request: OK
// executed, UNAVAILABLE rejected unexecuted. It checks each against the
// server's counters, which it returns.
func burstOnce(t *scenario.T, s *scenario.Server, w *scenario.Watch) scenario.Counters {
	once := client.DefaultConfig()
	once.MaxAttempts = 1
	bc := t.Client(s.Addr, once)
	wait := debitBurst(t, bc, "acct-B", burstSize, burstSleepMs, burstAttemptTimeout)
	scenario.WaitFor(scenario.SettleTimeout, func() bool { return t.Counters(s).RequestsDebit >= burstSize/2 })
	w.SampleDuring()
	ok, unavailable, other, firstOther := tally(wait())
	bc.Close()
	ctr := t.Counters(s)
	balance := t.Balance(s, "acct-B")

	t.Volatile("ok", ok)
	t.Volatile("unavailable", unavailable)
	scenario.Expectf(t, "other", other, 0, "calls ended neither OK nor UNAVAILABLE, the first %s", firstOther)
	scenario.Expect(t, "accounted", ok+unavailable, burstSize)
	scenario.Expectf(t, "bothOutcomes", ok > 0 && unavailable > 0, true, "OK %d, UNAVAILABLE %d: the burst did not overflow the queue, the case proves nothing", ok, unavailable)
	scenario.Expectf(t, "okIsExecuted", int64(ok) == ctr.ExecDebit, true, "%d calls OK, server executed %d debits", ok, ctr.ExecDebit)
	scenario.Expectf(t, "unavailableIsQueueFull", int64(unavailable) == ctr.QueueFull, true, "%d calls UNAVAILABLE, server found its queue full %d times", unavailable, ctr.QueueFull)
	scenario.Expectf(t, "balanceIs1000MinusOk", balance == int64(bank.DefaultBalance-ok), true, "acct-B balance=%d, want %d", balance, bank.DefaultBalance-ok)
	return ctr
}

// burstRetry sends a smaller burst through a retrying client: rejected
// attempts are retried, and each logical debit executes exactly once.
// before are the counters before it.
func burstRetry(t *scenario.T, s *scenario.Server, w *scenario.Watch, before scenario.Counters) {
	retry := client.DefaultConfig()
	retry.MaxAttempts, retry.Deadline = 10, 5*time.Second
	rc := t.Client(s.Addr, retry)
	results := debitBurst(t, rc, "acct-C", burstRetried, burstSleepMs, burstAttemptTimeout)()
	rc.Close()
	ctr := w.Settle()
	ok, unavailable, other, firstOther := tally(results)
	attempts := 0
	for _, r := range results {
		attempts += r.Attempts
	}
	balance := t.Balance(s, "acct-C")
	exec := ctr.ExecDebit - before.ExecDebit
	rejected := ctr.QueueFull - before.QueueFull

	t.Field("retried", burstRetried)
	scenario.Expectf(t, "retriedOk", ok, burstRetried, "%d UNAVAILABLE, %d other, the first %s", unavailable, other, firstOther)
	scenario.Expect(t, "retriedExec", exec, int64(burstRetried))
	scenario.Expect(t, "retriedBalance", balance, int64(bank.DefaultBalance-burstRetried))
	t.Volatile("retriedAttempts", attempts)
	t.Volatile("retriedRejected", rejected)
	t.Check(int64(attempts) == exec+rejected, "retrying client: %d attempts, server executed %d and rejected %d", attempts, exec, rejected)
	t.Check(rejected > 0, "no retried debit was rejected: the retry phase proves nothing")
}

// debitBurst starts n keyless debits of 1 on account through c, all at
// once, and returns a function that waits for their results.
func debitBurst(t *scenario.T, c *client.Client, account string, n, sleepMs int, attemptTimeout time.Duration) func() []client.Result {
	results := make([]client.Result, n)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			call := scenario.DebitCall(account, 1, "")
			call.Payload = fmt.Appendf(call.Payload, " sleep=%d", sleepMs)
			call.AttemptTimeout = attemptTimeout
			results[i] = c.Do(t.Ctx, call)
		})
	}
	return func() []client.Result {
		wg.Wait()
		return results
	}
}

// tally counts OK, UNAVAILABLE and other results, and describes the
// first other one.
func tally(results []client.Result) (ok, unavailable, other int, first string) {
	for _, r := range results {
		switch r.Status {
		case proto.StatusOK:
			ok++
		case proto.StatusUnavailable:
			unavailable++
		default:
			if other++; other == 1 {
				first = fmt.Sprintf("%v %q (%v)", r.Status, r.Payload, r.Err)
			}
		}
	}
	return ok, unavailable, other, first
}

// Settings of backpressure_conn_share.
const (
	shareLimit = 4 // -queue-per-conn
	// Two of the share execute and two wait in the queue: the share
	// counts both.
	shareWorkers = 2
	shareExtra   = 2 // requests past the share in the same write
	// Each debit of the share sleeps so long that none is done before the
	// reader has dispatched the whole write, on a loaded machine too.
	shareSleepMs = 300
	// Long enough that no debit expires waiting behind the share.
	shareBudgetMs = 10_000
)

// backpressureConnShare: one connection writes shareLimit+shareExtra
// slow debits at once. The server takes exactly shareLimit of them,
// executing or queued, and answers the rest UNAVAILABLE unexecuted; a
// second connection still gets a share of its own, and once the first
// connection's debits are answered its share is free again. The server's
// log says which requests executed and which were turned away.
func backpressureConnShare(t *scenario.T) {
	s := t.StartServerLimits(scenario.ServerOpts{Workers: shareWorkers}, scenario.Limits{QueuePerConn: shareLimit})
	const account = "acct-share"
	debit := func(id uint64, sleepMs int) proto.Frame {
		return proto.Frame{Type: proto.TypeRequest, ID: id, BudgetMs: shareBudgetMs, Method: bank.MethodDebit,
			Payload: fmt.Appendf(nil, "account=%s amount=1 sleep=%d", account, sleepMs)}
	}

	a := t.DialFrames(s.Addr)
	sent := shareLimit + shareExtra
	batch := make([]proto.Frame, sent)
	for i := range batch {
		batch[i] = debit(uint64(i+1), shareSleepMs)
	}
	a.Send(t, batch...)
	// The refusals come at once, from A's reader, while A's share is
	// still full; B then sends a share of its own.
	b := t.DialFrames(s.Addr)
	other := make([]proto.Frame, shareLimit)
	for i := range other {
		other[i] = debit(uint64(i+1), 0)
	}
	b.Send(t, other...)
	answersA := a.ReadN(t, sent)
	answersB := b.ReadN(t, shareLimit)
	// Every answer of A's batch is in: its share is free again.
	afterID := uint64(sent + 1)
	a.Send(t, debit(afterID, 0))
	after := a.ReadN(t, 1)[afterID]

	ctr := t.Counters(s)
	balance := t.Balance(s, account)
	evs := t.Events(s)
	connA, connB := t.ConnNumber(evs, a.Local()), t.ConnNumber(evs, b.Local())
	inBatch := func(e serverapi.Event) bool { id, _ := e.Int(serverapi.KeyID); return id >= 1 && id <= int64(sent) }
	execA := eventIDs(evs, func(e serverapi.Event) bool { return isExecOK(e, connA) && inBatch(e) })
	refusedA := eventIDs(evs, func(e serverapi.Event) bool { return isShareFull(e, connA) && inBatch(e) })
	refusedB := eventIDs(evs, func(e serverapi.Event) bool { return isShareFull(e, connB) })

	t.Field("queuePerConn", shareLimit)
	t.Field("workers", shareWorkers)
	t.Field("sent", sent)
	t.Field("sleepMs", shareSleepMs)
	scenario.Expectf(t, "shareAccepted", len(execA), shareLimit, "executed %v of one write of %d: the server took more or fewer than -queue-per-conn", execA, sent)
	scenario.Expectf(t, "shareRefusedIDs", joinIDs(refusedA), joinIDs(idRange(shareLimit+1, sent)), "QUEUE_FULL share=true logged for these")
	scenario.Expectf(t, "refusedAnswered", answerIDs(answersA, isShareAnswer), joinIDs(slices.Sorted(slices.Values(refusedA))), "UNAVAILABLE %q answers, against the log", shareFullText)
	scenario.Expectf(t, "okAnswered", answerIDs(answersA, isOK), joinIDs(slices.Sorted(slices.Values(execA))), "OK answers, against the log's executions")
	scenario.Expectf(t, "otherConnRefused", joinIDs(refusedB), "none", "a second connection's share was taken by the first's")
	scenario.Expectf(t, "otherConnOk", answerIDs(answersB, isOK), joinIDs(idRange(1, shareLimit)), "")
	scenario.Expectf(t, "afterAnswered", after.Status, proto.StatusOK, "a debit sent once the share was answered: %q", after.Payload)
	scenario.Expect(t, "connQueueFull", ctr.ConnQueueFull, int64(len(refusedA)))
	scenario.Expect(t, "queueFull", ctr.QueueFull, 0)
	// A's share, B's share and A's debit afterwards, one each.
	scenario.Expect(t, "balance", balance, int64(bank.DefaultBalance-2*shareLimit-1))
}

// shareFullText is the payload of an UNAVAILABLE answer for a full share.
const shareFullText = "connection's queue share full"

func isOK(f proto.Frame) bool { return f.Status == proto.StatusOK }

func isShareAnswer(f proto.Frame) bool {
	return f.Status == proto.StatusUnavailable && string(f.Payload) == shareFullText
}

// isExecOK says whether e is the execution, answered OK, of a request of
// connection conn.
func isExecOK(e serverapi.Event, conn int64) bool {
	n, _ := e.Int(serverapi.KeyConn)
	return e.Name == serverapi.EventExec && n == conn && e.Text(serverapi.KeyStatus) == proto.StatusOK.String()
}

// isShareFull says whether e turned a request of connection conn away
// because its share was full.
func isShareFull(e serverapi.Event, conn int64) bool {
	n, _ := e.Int(serverapi.KeyConn)
	return e.Name == serverapi.EventQueueFull && n == conn && e.Bool(serverapi.KeyShare)
}

// eventIDs returns the request IDs of the events match holds for, in log
// order.
func eventIDs(evs []serverapi.Event, match func(serverapi.Event) bool) []uint64 {
	var ids []uint64
	for _, e := range evs {
		if match(e) {
			id, _ := e.Int(serverapi.KeyID)
			ids = append(ids, uint64(id))
		}
	}
	return ids
}

// answerIDs renders the IDs of the answers match holds for, ascending.
func answerIDs(answers map[uint64]proto.Frame, match func(proto.Frame) bool) string {
	var ids []uint64
	for id, f := range answers {
		if match(f) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return joinIDs(ids)
}

// idRange returns the IDs from lo to hi inclusive.
func idRange(lo, hi int) []uint64 {
	var ids []uint64
	for id := lo; id <= hi; id++ {
		ids = append(ids, uint64(id))
	}
	return ids
}

// joinIDs renders IDs as "1,2,3", or "none"; sorted or in log order, as
// given.
func joinIDs(ids []uint64) string {
	if len(ids) == 0 {
		return "none"
	}
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatUint(id, 10)
	}
	return strings.Join(parts, ",")
}

// orderRounds is how many times inline_never_overtakes_queue puts a get
// right behind a queued debit. One round in which the get ran first is
// a failure; many rounds make a server that lets it overtake do so in
// at least one, however its goroutines are scheduled.
const orderRounds = 20

// inlineNeverOvertakesQueue: with one worker, each round writes a debit
// that must take the queue (sleep=0) and, in the same write, a get that
// the reader could run itself. Nothing else is queued or executing, so
// the reader is free to run the get, but not before the debit queued
// ahead of it: the server's log must show every debit executed before its
// get, and every get must see its debit in the balance.
func inlineNeverOvertakesQueue(t *scenario.T) {
	s := t.StartServer(scenario.ServerOpts{Workers: 1})
	const account = "acct-order"
	rc := t.DialFrames(s.Addr)
	gotAfter := 0 // gets that saw their round's debit
	firstBad := "none"
	for r := range orderRounds {
		debitID, getID := uint64(2*r+1), uint64(2*r+2)
		rc.Send(t,
			proto.Frame{Type: proto.TypeRequest, ID: debitID, BudgetMs: 5000, Method: bank.MethodDebit,
				Payload: []byte("account=" + account + " amount=1 sleep=0")},
			proto.Frame{Type: proto.TypeRequest, ID: getID, BudgetMs: 5000, Method: bank.MethodGet,
				Payload: []byte("account=" + account)})
		answers := rc.ReadN(t, 2)
		get, want := answers[getID], strconv.Itoa(bank.DefaultBalance-(r+1))
		if get.Status == proto.StatusOK && answers[debitID].Status == proto.StatusOK && scenario.FieldOf(get.Payload, "balance") == want {
			gotAfter++
		} else if firstBad == "none" {
			firstBad = fmt.Sprintf("round %d: debit %v %q, get %v %q, want balance=%s",
				r+1, answers[debitID].Status, answers[debitID].Payload, get.Status, get.Payload, want)
		}
	}

	evs := t.Events(s)
	conn := t.ConnNumber(evs, rc.Local())
	order := eventIDs(evs, func(e serverapi.Event) bool { return isExecOK(e, conn) })
	overtaken := 0
	for i := 0; i+1 < len(order); i += 2 {
		if order[i] > order[i+1] {
			overtaken++
		}
	}

	t.Field("workers", 1)
	t.Field("rounds", orderRounds)
	scenario.Expectf(t, "executed", len(order), 2*orderRounds, "EXEC events of the connection")
	scenario.Expectf(t, "overtaken", overtaken, 0, "rounds whose get executed before the debit queued ahead of it; execution order %s", joinIDs(order))
	scenario.Expectf(t, "getsSawTheirDebit", gotAfter, orderRounds, "first wrong: %s", firstBad)
}
