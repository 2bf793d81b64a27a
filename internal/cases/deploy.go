package cases

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// awaitEvent waits until s has logged an event for which match holds, and
// returns it; none within settleTimeout ends the scenario.
func (t *T) awaitEvent(s *server, what string, match func(serverapi.Event) bool) serverapi.Event {
	var found serverapi.Event
	if !waitFor(settleTimeout, func() bool {
		i := slices.IndexFunc(t.events(s), match)
		if i >= 0 {
			found = t.events(s)[i]
		}
		return i >= 0
	}) {
		t.Fatalf("%s never happened on the server", what)
	}
	return found
}

// awaitExit waits for s to exit by itself, as a drained rpcserver does,
// and returns its exit status ("" for 0).
func (t *T) awaitExit(s *server, within time.Duration) string {
	select {
	case <-s.Exited():
	case <-time.After(within):
		t.Fatalf("the server did not exit within %v", within)
	}
	if err := s.ExitErr(); err != nil {
		return err.Error()
	}
	return ""
}

// deployConfig is the client of the deploy scenarios: attempts long
// enough that a loaded machine's slow commit is not a timeout.
func deployConfig(t *T) client.Config {
	cfg := client.DefaultConfig()
	cfg.AttemptTimeout, cfg.Deadline = 5*time.Second, 10*time.Second
	cfg.Trace = t.trace.hook()
	return cfg
}

// inFlight is a slow get holding A's one worker and keyless debits
// queued behind it, on the connection of a client of A and B.
type inFlight struct {
	a, b *server
	c    *client.Client
	get  chan client.Result
	// queued are the debits A took behind the get, by account.
	queued map[string]chan client.Result
}

// holdWorker is the slow get's hold on A's worker.
const holdWorker = 600 * time.Millisecond

// startInFlight starts A (one worker, the get slowed by a sleep fault)
// and B on store, sends the get, and once A's worker holds it (its FAULT
// event), sends the queued debits: sent earlier they could run on A's
// reader before the get, or beside it.
func startInFlight(t *T, store string, queued []string) *inFlight {
	a := t.startServer(serverOpts{Store: store, Workers: 1, Faults: []string{fmt.Sprintf("kind=sleep method=get count=1 delay=%v", holdWorker)}})
	b := t.startServer(serverOpts{Store: store})
	c, err := client.NewMulti([]string{a.Addr, b.Addr}, deployConfig(t))
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	t.cleanup(func() { c.Close() })
	f := &inFlight{a: a, b: b, c: c, get: make(chan client.Result, 1), queued: map[string]chan client.Result{}}
	go func() { f.get <- c.Do(t.ctx, getCall("acct-G")) }()
	t.awaitEvent(a, "the slow get", func(e serverapi.Event) bool {
		return e.Name == serverapi.EventFault && e.Text(serverapi.KeyMethod) == bank.MethodGet
	})
	for _, acct := range queued {
		f.queued[acct] = f.debit(t, acct)
	}
	t.awaitReceived(a, int64(len(queued)))
	return f
}

// debit sends a keyless debit of 10 from acct and returns its result's
// channel.
func (f *inFlight) debit(t *T, acct string) chan client.Result {
	ch := make(chan client.Result, 1)
	go func() { ch <- f.c.Do(t.ctx, debitCall(acct, 10, "")) }()
	return ch
}

// execs returns the accounts of the debits s's log shows executed, with
// how many times each.
func (t *T) execs(s *server) map[string]int {
	out := map[string]int{}
	for _, e := range t.events(s) {
		if e.Name == serverapi.EventExec && e.Text(serverapi.KeyMethod) == bank.MethodDebit {
			out[e.Text(serverapi.KeyAccount)]++
		}
	}
	return out
}

// accounts names n accounts from prefix: prefix1, prefix2, ...
func accounts(prefix string, from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, from+i)
	}
	return out
}

// resultLine renders results by account: status and outcomes.
func resultLine(accts []string, res map[string]client.Result) string {
	parts := make([]string, len(accts))
	for i, a := range accts {
		parts[i] = a + ":" + res[a].Status.String()
	}
	return strings.Join(parts, ",")
}

// anyUnknown says which attempts among res were OUTCOME_UNKNOWN.
func anyUnknown(res map[string]client.Result) int {
	n := 0
	for _, r := range res {
		for _, a := range r.Log {
			if a.Class == client.ClassUnknown {
				n++
			}
		}
	}
	return n
}

func drainFinishesInFlight(t *T, kind string) {
	store := t.newStore(kind)
	queued, above := accounts("acct-Q", 1, 3), accounts("acct-N", 1, 3)
	f := startInFlight(t, store, queued)
	// The next debit A reads drains it, and is the first above its drain
	// frame's ID; its two companions, sent at once, are above it too,
	// dropped by A, or sent to B by a client already moved on.
	t.controlCall(f.a, serverapi.MethodFault, "kind=drain method=debit count=1")
	res := map[string]client.Result{}
	chans := map[string]chan client.Result{}
	for _, acct := range above {
		chans[acct] = f.debit(t, acct)
	}
	for acct, ch := range f.queued {
		res[acct] = <-ch
	}
	for acct, ch := range chans {
		res[acct] = <-ch
	}
	get := <-f.get
	t.Field("aExit", exitText(t.awaitExit(f.a, 10*time.Second)))

	expectf(t, "get", get.Status.String()+"@"+serverName(get, f), "OK@A", "the get was taken: A must answer it; log %s", attemptLog(get))
	expect(t, "queued", resultLine(queued, res), "acct-Q1:OK,acct-Q2:OK,acct-Q3:OK")
	expect(t, "above", resultLine(above, res), "acct-N1:OK,acct-N2:OK,acct-N3:OK")
	expectf(t, "unknownAttempts", anyUnknown(res), 0, "an attempt above the drain frame's ID was never taken, so its outcome is known")
	// The drain frame of the client's connection: the one the queued
	// debits executed from (control connections get theirs too).
	var conn, drainID int64 = -1, -1
	evs := t.events(f.a)
	for _, e := range evs {
		if e.Name == serverapi.EventExec && e.Text(serverapi.KeyAccount) == queued[0] {
			conn, _ = e.Int(serverapi.KeyConn)
		}
	}
	for _, e := range evs {
		if c, _ := e.Int(serverapi.KeyConn); e.Name == serverapi.EventDrain && c == conn {
			drainID, _ = e.Int(serverapi.KeyID)
		}
	}
	expect(t, "drainID", drainID, 4)
	// By the servers' logs: a debit at or below the drain frame's ID ran
	// on A, once; one above it on B, once.
	execA, execB := t.execs(f.a), t.execs(f.b)
	var wrong []string
	for _, acct := range append(slices.Clone(queued), above...) {
		first := res[acct].Log[0]
		wantA, wantB := 1, 0
		if int64(first.ID) > drainID || first.Addr != f.a.Addr {
			wantA, wantB = 0, 1
		}
		if execA[acct] != wantA || execB[acct] != wantB {
			wrong = append(wrong, fmt.Sprintf("%s (first id %d, drain id %d) executed %d times on A, %d on B", acct, first.ID, drainID, execA[acct], execB[acct]))
		}
	}
	expectf(t, "execOnce", len(wrong), 0, "%s", strings.Join(wrong, "; "))
	expect(t, "execA", len(execA), 3)
	expect(t, "execB", len(execB), 3)
	drained := 0
	for _, acct := range above {
		if slices.ContainsFunc(res[acct].Log, func(a client.Attempt) bool { return a.Outcome == client.OutcomeDrained }) {
			drained++
		}
	}
	atLeast(t, "drainedCalls", drained, 1, "the debit that drained A must end DRAINED there and be re-sent")
	st := f.c.Stats()
	expect(t, "drains", st.Drains, 1)
	expect(t, "connsLost", st.ConnsLost, 0)
	t.Volatile("drainedResent", st.DrainedResent)
	for _, acct := range append(slices.Clone(queued), above...) {
		if b := t.balance(f.b, acct); b != bank.DefaultBalance-10 {
			t.Check(false, "balance of %s = %d, want %d", acct, b, bank.DefaultBalance-10)
		}
	}
}

// serverName says which server answered r's last attempt: A, B or ?.
func serverName(r client.Result, f *inFlight) string {
	if len(r.Log) == 0 {
		return "?"
	}
	switch r.Log[len(r.Log)-1].Addr {
	case f.a.Addr:
		return "A"
	case f.b.Addr:
		return "B"
	}
	return "?"
}

func exitText(s string) string {
	if s == "" {
		return "0"
	}
	return s
}

func negativeControlKillInsteadOfDrain(t *T, kind string) {
	store := t.newStore(kind)
	queued := accounts("acct-Q", 1, 3)
	f := startInFlight(t, store, queued)
	t.killServer(f.a)
	res := map[string]client.Result{}
	for acct, ch := range f.queued {
		res[acct] = <-ch
	}
	<-f.get
	t.Field("expectUnknown", true)
	expectf(t, "queued", resultLine(queued, res), "acct-Q1:UNKNOWN,acct-Q2:UNKNOWN,acct-Q3:UNKNOWN",
		"without a drain the client cannot tell the queued keyless debits were never run")
	expect(t, "execA", len(t.execs(f.a)), 0)
	expect(t, "execB", len(t.execs(f.b)), 0)
	expect(t, "drains", f.c.Stats().Drains, 0)
}

func drainDeadlineBoundsShutdown(t *T) {
	const timeout = time.Second
	s := t.startServer(serverOpts{DrainTimeout: timeout, Faults: []string{"kind=sleep method=debit count=1 delay=30s"}})
	cfg := deployConfig(t)
	c := t.client(s.Addr, cfg)
	debit := make(chan client.Result, 1)
	go func() { debit <- c.Do(t.ctx, debitCall("acct-H", 10, "")) }()
	t.awaitEvent(s, "the held debit", func(e serverapi.Event) bool {
		return e.Name == serverapi.EventFault && e.Text(serverapi.KeyMethod) == bank.MethodDebit
	})
	get := make(chan client.Result, 1)
	slow := getCall("acct-G")
	slow.Payload = append(slow.Payload, " sleep=300"...)
	go func() { get <- c.Do(t.ctx, slow) }()
	if !waitFor(settleTimeout, func() bool { return t.counters(s).RequestsGet >= 1 }) {
		t.Fatalf("the server never received the get")
	}
	if err := s.Terminate(); err != nil {
		t.Fatalf("%v", err)
	}
	g, d := <-get, <-debit
	t.Field("exit", exitText(t.awaitExit(s, timeout+10*time.Second)))
	expectf(t, "get", g.Status, proto.StatusOK, "the get was taken and finishes within the drain; log %s", attemptLog(g))
	expectf(t, "debit", d.Status, proto.StatusUnknown, "the debit never finishes: the deadline cuts its connection; log %s", attemptLog(d))
	t.Field("debitOutcome", outcomes(d))
	var start, done serverapi.Event
	for _, e := range t.events(s) {
		switch e.Name {
		case serverapi.EventDrainStart:
			start = e
		case serverapi.EventDrainDone:
			done = e
		}
	}
	if start.Name == "" || done.Name == "" {
		t.Fatalf("the log lacks DRAIN_START or DRAIN_DONE")
	}
	open, _ := done.Int(serverapi.KeyOpen)
	expect(t, "drainCut", open, 1)
	// DRAIN_START is logged just after the deadline is fixed, so the
	// drain it starts may end a little short of the whole timeout.
	between(t, "drain", done.Time.Sub(start.Time), timeout*8/10, timeout+slack*6)
	expect(t, "debitExec", t.execLogged(s, bank.MethodDebit), 0)
}
