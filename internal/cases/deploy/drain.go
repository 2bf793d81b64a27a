package deploy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// awaitExit waits for s to exit by itself, as a drained rpcserver does,
// and returns its exit status ("" for 0).
func awaitExit(t *scenario.T, s *scenario.Server, within time.Duration) string {
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
func deployConfig(t *scenario.T) client.Config {
	cfg := client.DefaultConfig()
	cfg.AttemptTimeout, cfg.Deadline = 5*time.Second, 10*time.Second
	cfg.Trace = t.Trace.Hook()
	return cfg
}

// inFlight is a slow get holding A's one worker and keyless debits
// queued behind it, on the connection of a client of A and B.
type inFlight struct {
	a, b *scenario.Server
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
func startInFlight(t *scenario.T, store string, queued []string) *inFlight {
	a := t.StartServer(scenario.ServerOpts{Store: store, Workers: 1, Faults: []string{fmt.Sprintf("kind=sleep method=get count=1 delay=%v", holdWorker)}})
	b := t.StartServer(scenario.ServerOpts{Store: store})
	c, err := client.NewMulti([]string{a.Addr, b.Addr}, deployConfig(t))
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	f := &inFlight{a: a, b: b, c: c, get: make(chan client.Result, 1), queued: map[string]chan client.Result{}}
	go func() { f.get <- c.Do(t.Ctx, scenario.GetCall("acct-G")) }()
	t.AwaitEvent(a, "the slow get", func(e serverapi.Event) bool {
		return e.Name == serverapi.EventFault && e.Text(serverapi.KeyMethod) == bank.MethodGet
	})
	for _, acct := range queued {
		f.queued[acct] = f.debit(t, acct)
	}
	t.AwaitReceived(a, int64(len(queued)))
	return f
}

// debit sends a keyless debit of 10 from acct and returns its result's
// channel.
func (f *inFlight) debit(t *scenario.T, acct string) chan client.Result {
	ch := make(chan client.Result, 1)
	go func() { ch <- f.c.Do(t.Ctx, scenario.DebitCall(acct, 10, "")) }()
	return ch
}

// debitExecs returns the accounts of the debits s's log shows executed, with
// how many times each.
func debitExecs(t *scenario.T, s *scenario.Server) map[string]int {
	out := map[string]int{}
	for _, e := range t.Events(s) {
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

func drainFinishesInFlight(t *scenario.T, kind string) {
	store := t.NewStore(kind)
	queued, above := accounts("acct-Q", 1, 3), accounts("acct-N", 1, 3)
	f := startInFlight(t, store, queued)
	// The next debit A reads drains it, and is the first above its drain
	// frame's ID; its two companions, sent at once, are above it too,
	// dropped by A, or sent to B by a client already moved on.
	t.ControlCall(f.a, serverapi.MethodFault, "kind=drain method=debit count=1")
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
	t.Field("aExit", exitText(awaitExit(t, f.a, 10*time.Second)))

	scenario.Expectf(t, "get", get.Status.String()+"@"+serverName(get, f), "OK@A", "the get was taken: A must answer it; log %s", scenario.AttemptLog(get))
	scenario.Expect(t, "queued", resultLine(queued, res), "acct-Q1:OK,acct-Q2:OK,acct-Q3:OK")
	scenario.Expect(t, "above", resultLine(above, res), "acct-N1:OK,acct-N2:OK,acct-N3:OK")
	scenario.Expectf(t, "unknownAttempts", anyUnknown(res), 0, "an attempt above the drain frame's ID was never taken, so its outcome is known")
	// The drain frame of the client's connection: the one the queued
	// debits executed from (control connections get theirs too).
	var conn, drainID int64 = -1, -1
	evs := t.Events(f.a)
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
	scenario.Expect(t, "drainID", drainID, 4)
	// By the servers' logs: a debit at or below the drain frame's ID ran
	// on A, once; one above it on B, once.
	execA, execB := debitExecs(t, f.a), debitExecs(t, f.b)
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
	scenario.Expectf(t, "execOnce", len(wrong), 0, "%s", strings.Join(wrong, "; "))
	scenario.Expect(t, "execA", len(execA), 3)
	scenario.Expect(t, "execB", len(execB), 3)
	drained := 0
	for _, acct := range above {
		if slices.ContainsFunc(res[acct].Log, func(a client.Attempt) bool { return a.Outcome == client.OutcomeDrained }) {
			drained++
		}
	}
	scenario.AtLeast(t, "drainedCalls", drained, 1, "the debit that drained A must end DRAINED there and be re-sent")
	st := f.c.Stats()
	scenario.Expect(t, "drains", st.Drains, 1)
	scenario.Expect(t, "connsLost", st.ConnsLost, 0)
	t.Volatile("drainedResent", st.DrainedResent)
	for _, acct := range append(slices.Clone(queued), above...) {
		if b := t.Balance(f.b, acct); b != bank.DefaultBalance-10 {
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

func negativeControlKillInsteadOfDrain(t *scenario.T, kind string) {
	store := t.NewStore(kind)
	queued := accounts("acct-Q", 1, 3)
	f := startInFlight(t, store, queued)
	t.KillServer(f.a)
	res := map[string]client.Result{}
	for acct, ch := range f.queued {
		res[acct] = <-ch
	}
	<-f.get
	t.Field("expectUnknown", true)
	scenario.Expectf(t, "queued", resultLine(queued, res), "acct-Q1:UNKNOWN,acct-Q2:UNKNOWN,acct-Q3:UNKNOWN",
		"without a drain the client cannot tell the queued keyless debits were never run")
	scenario.Expect(t, "execA", len(debitExecs(t, f.a)), 0)
	scenario.Expect(t, "execB", len(debitExecs(t, f.b)), 0)
	scenario.Expect(t, "drains", f.c.Stats().Drains, 0)
}

func drainDeadlineBoundsShutdown(t *scenario.T) {
	const timeout = time.Second
	s := t.StartServer(scenario.ServerOpts{DrainTimeout: timeout, Faults: []string{"kind=sleep method=debit count=1 delay=30s"}})
	cfg := deployConfig(t)
	c := t.Client(s.Addr, cfg)
	debit := make(chan client.Result, 1)
	go func() { debit <- c.Do(t.Ctx, scenario.DebitCall("acct-H", 10, "")) }()
	t.AwaitEvent(s, "the held debit", func(e serverapi.Event) bool {
		return e.Name == serverapi.EventFault && e.Text(serverapi.KeyMethod) == bank.MethodDebit
	})
	get := make(chan client.Result, 1)
	slow := scenario.GetCall("acct-G")
	slow.Payload = append(slow.Payload, " sleep=300"...)
	go func() { get <- c.Do(t.Ctx, slow) }()
	if !scenario.WaitFor(scenario.SettleTimeout, func() bool { return t.Counters(s).RequestsGet >= 1 }) {
		t.Fatalf("the server never received the get")
	}
	if err := s.Terminate(); err != nil {
		t.Fatalf("%v", err)
	}
	g, d := <-get, <-debit
	t.Field("exit", exitText(awaitExit(t, s, timeout+10*time.Second)))
	scenario.Expectf(t, "get", g.Status, proto.StatusOK, "the get was taken and finishes within the drain; log %s", scenario.AttemptLog(g))
	scenario.Expectf(t, "debit", d.Status, proto.StatusUnknown, "the debit never finishes: the deadline cuts its connection; log %s", scenario.AttemptLog(d))
	t.Field("debitOutcome", scenario.Outcomes(d))
	var start, done serverapi.Event
	for _, e := range t.Events(s) {
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
	scenario.Expect(t, "drainCut", open, 1)
	// DRAIN_START is logged just after the deadline is fixed, so the
	// drain it starts may end a little short of the whole timeout.
	scenario.Between(t, "drain", done.Time.Sub(start.Time), timeout*8/10, timeout+scenario.Slack*6)
	scenario.Expect(t, "debitExec", t.ExecLogged(s, bank.MethodDebit), 0)
}
