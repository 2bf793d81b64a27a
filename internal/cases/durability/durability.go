package durability

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// durableConfig is the client of the durability scenarios: enough
// attempts and time to outlast a server's restart.
func durableConfig() client.Config {
	cfg := client.DefaultConfig()
	cfg.MaxAttempts = 60
	cfg.Deadline = 15 * time.Second
	cfg.AttemptTimeout = 3 * time.Second
	return cfg
}

// crashRun is what crashAndRestart saw.
type crashRun struct {
	result          client.Result
	first, restart  *scenario.Server
	crash           string // the point of the first server's CRASH event
	firstExit       string // how the first server ended
	restartDebitsOK int64  // debits the restarted server executed
}

// crashAndRestart sends one keyed debit to a server that kills itself at
// point, starts a new server on the same address and store once the
// first one is gone, and returns the debit's result: the client retries
// until the new server answers.
func crashAndRestart(t *scenario.T, kind, point string, lease time.Duration) crashRun {
	store := t.NewStore(kind)
	first := t.StartServer(scenario.ServerOpts{Store: store, Crash: point, DedupLease: lease})
	c := t.Client(first.Addr, durableConfig())
	res := make(chan client.Result, 1)
	go func() { res <- c.Do(t.Ctx, scenario.DebitCall("acct-D", 10, "debit-acct-D-0001")) }()
	select {
	case <-first.Exited():
	case <-time.After(10 * time.Second):
		t.Fatalf("the server never crashed at %s", point)
	}
	// The port is free once the process is gone; the client's attempts
	// meanwhile are refused, unsent, and retried.
	restart := t.StartServer(scenario.ServerOpts{Store: store, Addr: first.Addr, DedupLease: lease})
	run := crashRun{result: <-res, first: first, restart: restart}
	if err := first.ExitErr(); err != nil {
		run.firstExit = err.Error()
	}
	for _, e := range t.Events(first) {
		if e.Name == serverapi.EventCrash {
			run.crash = e.Text(serverapi.KeyPoint)
		}
	}
	run.restartDebitsOK = t.Counters(restart).ExecDebit
	return run
}

// firstAndLast renders the first and the last attempt's outcomes: the
// refused attempts between them vary in number with the restart's speed.
func firstAndLast(r client.Result) string {
	o := strings.Split(scenario.Outcomes(r), ",")
	return o[0] + ".." + o[len(o)-1]
}

func durableDedupSurvivesCrash(t *scenario.T, kind string) {
	run := crashAndRestart(t, kind, serverapi.CrashAfterCommit, 0)
	scenario.Expect(t, "crash", run.crash, serverapi.CrashAfterCommit)
	scenario.Expect(t, "firstServerExit", run.firstExit, "signal: killed")
	scenario.Expectf(t, "attempts", firstAndLast(run.result), "CONN_LOST_AFTER_SEND..RESPONSE/OK", "log %s", scenario.AttemptLog(run.result))
	t.Volatile("attempts", len(run.result.Log))
	scenario.Expectf(t, "result", scenario.Brief(run.result, "balance", "exec", "replayed"), "OK balance=990 exec=1 replayed=true",
		"the restarted server must replay the committed answer; log %s", scenario.AttemptLog(run.result))
	scenario.Expect(t, "restartedDebitExec", run.restartDebitsOK, 0)
	scenario.Expect(t, "balance", t.Balance(run.restart, "acct-D"), bank.DefaultBalance-10)
}

func crashBeforeCommitLeavesNothing(t *scenario.T, kind string) {
	const lease = 500 * time.Millisecond
	run := crashAndRestart(t, kind, serverapi.CrashBeforeCommit, lease)
	t.Field("lease", lease)
	scenario.Expect(t, "crash", run.crash, serverapi.CrashBeforeCommit)
	scenario.Expect(t, "firstServerExit", run.firstExit, "signal: killed")
	// exec counts the account's committed debits: 1 means the crashed
	// transaction left nothing and the retry's is the only one.
	scenario.Expectf(t, "result", scenario.Brief(run.result, "balance", "exec", "replayed"), "OK balance=990 exec=1 replayed=false",
		"log %s", scenario.AttemptLog(run.result))
	scenario.Expect(t, "restartedDebitExec", run.restartDebitsOK, 1)
	scenario.Expect(t, "balance", t.Balance(run.restart, "acct-D"), bank.DefaultBalance-10)
}

// memoryStoreLosesDedup passes only when the debit really executed
// twice: once before the crash, after its commit, and again on the
// restarted server.
func memoryStoreLosesDedup(t *scenario.T, kind string) {
	run := crashAndRestart(t, kind, serverapi.CrashAfterCommit, 0)
	scenario.Expect(t, "crash", run.crash, serverapi.CrashAfterCommit)
	committedBeforeCrash := int64(0)
	if run.crash == serverapi.CrashAfterCommit {
		committedBeforeCrash = 1
	}
	scenario.Expectf(t, "result", scenario.Brief(run.result, "balance", "exec", "replayed"), "OK balance=990 exec=1 replayed=false",
		"the restarted server knows neither the key nor the first debit; log %s", scenario.AttemptLog(run.result))
	scenario.Expectf(t, "executions", committedBeforeCrash+run.restartDebitsOK, 2,
		"a memory store forgets the key with the process, so the retry executes again")
}

// shared is what twoInstances saw.
type shared struct {
	result             client.Result
	addrs              string // the server of each attempt: A or B
	execA, execB       int64
	hitsB              int64
	balanceA, balanceB int64
}

// twoInstances runs servers A and B on stores specA and specB (the same
// store, or two). A executes the first debit and closes the connection
// unanswered; the client, which knows both, fails over to B.
func twoInstances(t *scenario.T, specA, specB string) shared {
	a := t.StartServer(scenario.ServerOpts{Store: specA, Faults: []string{"kind=close method=debit count=1"}})
	b := t.StartServer(scenario.ServerOpts{Store: specB})
	cfg := client.DefaultConfig()
	// A's first debit on a durable store opens its first connection to
	// the database: on a loaded machine that can take longer than the
	// default 300ms attempt, which would time the attempt out before the
	// close this scenario is about.
	cfg.AttemptTimeout, cfg.Deadline = 3*time.Second, 10*time.Second
	cfg.Trace = t.Trace.Hook()
	c, err := client.NewMulti([]string{a.Addr, b.Addr}, cfg)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	r := c.Do(t.Ctx, scenario.DebitCall("acct-S", 10, "debit-acct-S-0001"))
	names := map[string]string{a.Addr: "A", b.Addr: "B"}
	addrs := make([]string, len(r.Log))
	for i, at := range r.Log {
		addrs[i] = names[at.Addr]
	}
	ca, cb := t.Counters(a), t.Counters(b)
	return shared{
		result: r, addrs: strings.Join(addrs, ","),
		execA: ca.ExecDebit, execB: cb.ExecDebit, hitsB: cb.DedupHits,
		balanceA: t.Balance(a, "acct-S"), balanceB: t.Balance(b, "acct-S"),
	}
}

func dedupSharedAcrossInstances(t *scenario.T, kind string) {
	store := t.NewStore(kind)
	s := twoInstances(t, store, store)
	scenario.Expectf(t, "attempts", scenario.Outcomes(s.result), "CONN_LOST_AFTER_SEND,RESPONSE/OK", "log %s", scenario.AttemptLog(s.result))
	scenario.Expect(t, "servers", s.addrs, "A,B")
	scenario.Expectf(t, "result", scenario.Brief(s.result, "balance", "exec", "replayed"), "OK balance=990 exec=1 replayed=true",
		"B must replay the answer A committed; log %s", scenario.AttemptLog(s.result))
	scenario.Expect(t, "debitExecA", s.execA, 1)
	scenario.Expect(t, "debitExecB", s.execB, 0)
	scenario.Expect(t, "dedupHitsB", s.hitsB, 1)
	scenario.Expect(t, "balanceA", s.balanceA, bank.DefaultBalance-10)
	scenario.Expect(t, "balanceB", s.balanceB, bank.DefaultBalance-10)
}

// memoryDedupNotShared passes only when both servers executed the debit.
func memoryDedupNotShared(t *scenario.T, kind string) {
	t.NewStore(kind)
	s := twoInstances(t, bank.KindMemory, bank.KindMemory)
	scenario.Expect(t, "servers", s.addrs, "A,B")
	scenario.Expectf(t, "result", scenario.Brief(s.result, "balance", "exec", "replayed"), "OK balance=990 exec=1 replayed=false",
		"B has its own store and never saw the key; log %s", scenario.AttemptLog(s.result))
	scenario.Expectf(t, "executions", s.execA+s.execB, 2, "one keyed debit, executed by A and again by B")
}

func leaseExpiryTakeover(t *scenario.T, kind string) {
	const (
		lease   = time.Second
		retries = 4
	)
	t.Field("lease", lease)
	store := t.NewStore(kind)
	a := t.StartServer(scenario.ServerOpts{Store: store, Crash: serverapi.CrashBeforeCommit, DedupLease: lease})
	b := t.StartServer(scenario.ServerOpts{Store: store, DedupLease: lease})
	call := scenario.DebitCall("acct-L", 10, "debit-acct-L-0001")

	one := client.DefaultConfig()
	one.MaxAttempts = 1
	sent := time.Now() // the claim, and its lease, start after this
	first := t.Client(a.Addr, one).Do(t.Ctx, call)
	select {
	case <-a.Exited():
	case <-time.After(10 * time.Second):
		t.Fatalf("the server never crashed")
	}
	scenario.Expectf(t, "firstAttempt", scenario.Outcomes(first), "CONN_LOST_AFTER_SEND", "log %s", scenario.AttemptLog(first))

	// The retries go to B together, each on a connection of its own, with
	// budgets longer than the lease.
	cfg := client.DefaultConfig()
	cfg.MaxAttempts, cfg.AttemptTimeout, cfg.Deadline = 1, 5*time.Second, 5*time.Second
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		answers = map[string]int{} // by balance, exec and status
		took    int                // answers with replayed=false
		last    time.Duration
		firstAt = time.Duration(1<<63 - 1)
	)
	for range retries {
		c := t.Client(b.Addr, cfg)
		wg.Go(func() {
			r := c.Do(t.Ctx, call)
			at := time.Since(sent)
			mu.Lock()
			defer mu.Unlock()
			answers[scenario.Brief(r, "balance", "exec")]++
			if scenario.PayloadFields(r)["replayed"] == "false" {
				took++
			}
			last, firstAt = max(last, at), min(firstAt, at)
		})
	}
	wg.Wait()
	ctr := t.Counters(b)
	scenario.Expectf(t, "answers", fmt.Sprint(answers), fmt.Sprintf("map[OK balance=990 exec=1:%d]", retries),
		"every retry must get the one execution's answer")
	scenario.Expectf(t, "takeovers", took, 1, "exactly one retry takes the key over and executes")
	scenario.Expect(t, "debitExecB", ctr.ExecDebit, 1)
	scenario.Expect(t, "dedupHitsB", ctr.DedupHits, retries-1)
	// No retry may be answered before the dead claim's lease ran out,
	// and the takeover follows it promptly.
	scenario.Between(t, "firstAnswer", firstAt, lease, lease+2*scenario.Slack)
	scenario.Within(t, "lastAnswer", last, lease+2*scenario.Slack)
	scenario.Expect(t, "balance", t.Balance(b, "acct-L"), bank.DefaultBalance-10)
}

// patientConfig is the default client with attempts of 3s: room for a
// durable store's first connection and commits on a loaded machine, in
// scenarios where an attempt timing out would be a retry they are not
// about.
func patientConfig() client.Config {
	cfg := client.DefaultConfig()
	cfg.AttemptTimeout, cfg.Deadline = 3*time.Second, 10*time.Second
	return cfg
}

func ttlExpiredKeyExecutesAgain(t *scenario.T, kind string) {
	const ttl = 400 * time.Millisecond
	t.Field("ttl", ttl)
	store := t.NewStore(kind)
	s := t.StartServer(scenario.ServerOpts{Store: store, DedupTTL: ttl, DedupLease: ttl / 2})
	c := t.Client(s.Addr, patientConfig())
	call := scenario.DebitCall("acct-T", 10, "debit-acct-T-0001")
	sent := time.Now()
	r1 := c.Do(t.Ctx, call)
	r2 := c.Do(t.Ctx, call)
	scenario.Expect(t, "first", scenario.Brief(r1, "balance", "exec", "replayed"), "OK balance=990 exec=1 replayed=false")
	scenario.Expect(t, "withinTTL", scenario.Brief(r2, "balance", "exec", "replayed"), "OK balance=990 exec=1 replayed=true")

	// The sweeper runs every TTL/2 and logs what it deleted: the record
	// is gone once it says so.
	swept := func() bool {
		return scenario.CountEvents(t.Events(s), func(e serverapi.Event) bool { return e.Name == serverapi.EventSweep }) > 0
	}
	if !scenario.WaitFor(10*time.Second, swept) {
		t.Fatalf("no %s event: the expired record was never swept", serverapi.EventSweep)
	}
	scenario.Between(t, "sweptAfter", time.Since(sent), ttl, ttl+ttl/2+2*scenario.Slack)
	r3 := c.Do(t.Ctx, call)
	scenario.Expectf(t, "afterTTL", scenario.Brief(r3, "balance", "exec", "replayed"), "OK balance=980 exec=2 replayed=false",
		"past its TTL the key is forgotten, and the same debit executes again")
	scenario.Expect(t, "balance", t.Balance(s, "acct-T"), bank.DefaultBalance-20)

	// Forgotten by its TTL, not by the sweep: a record past its TTL that
	// no sweep has deleted yet must not be replayed either. The first
	// server, which sweeps every TTL/2, executes a second key and stops
	// before that key's TTL ends; the key's reuse reaches a server whose
	// TTL is the default, so that it sweeps only once a minute.
	call = scenario.DebitCall("acct-U", 10, "debit-acct-U-0001")
	u1 := c.Do(t.Ctx, call)
	answered := time.Now() // the record's TTL runs from before this
	s.Stop()
	scenario.Expect(t, "unsweptFirst", scenario.Brief(u1, "balance", "exec", "replayed"), "OK balance=990 exec=1 replayed=false")
	late := t.StartServer(scenario.ServerOpts{Store: store})
	// The TTL passing is the event awaited; nothing announces it. The
	// extra 10 ms covers the record's whole-millisecond expiry.
	time.Sleep(time.Until(answered.Add(ttl + 10*time.Millisecond)))
	u2 := t.Client(late.Addr, patientConfig()).Do(t.Ctx, call)
	scenario.Expectf(t, "afterTTLUnswept", scenario.Brief(u2, "balance", "exec", "replayed"), "OK balance=980 exec=2 replayed=false",
		"a record past its TTL is forgotten whether or not a sweep deleted it yet; log %s", scenario.AttemptLog(u2))
	lateEvents := t.Events(late)
	scenario.Expectf(t, "lateSweeps", scenario.CountEvents(lateEvents, func(e serverapi.Event) bool { return e.Name == serverapi.EventSweep }), 0,
		"the late server's sweep must not have run, or the record was not left unswept")
	ctr := t.Counters(late)
	scenario.Expect(t, "lateDebitExec", ctr.ExecDebit, 1)
	scenario.Expect(t, "lateDedupHits", ctr.DedupHits, 0)
}

// duplicateWaitsAcrossInstances sends a keyed debit to A, which executes
// it slowly (a sleep field), and the same debit to B once A has claimed
// the key: B must wait for A's running record, not execute. Before that
// duplicate, a debit reusing the key with another amount reaches B, which
// must refuse it at once: a waiter that ignored the fingerprint would be
// handed A's answer.
func duplicateWaitsAcrossInstances(t *scenario.T, kind string) {
	const origSleep = 600 * time.Millisecond
	store := t.NewStore(kind)
	a := t.StartServer(scenario.ServerOpts{Store: store})
	b := t.StartServer(scenario.ServerOpts{Store: store})
	call := scenario.DebitCall("acct-W", 10, "debit-acct-W-0001")
	call.Payload = fmt.Appendf(call.Payload, " sleep=%d", origSleep.Milliseconds())
	call.Timeout, call.AttemptTimeout = 5*time.Second, 5*time.Second
	done := make(chan client.Result, 1)
	ca := t.Client(a.Addr, client.DefaultConfig())
	go func() { done <- ca.Do(t.Ctx, call) }()
	claimed := func(e serverapi.Event) bool { return e.Name == serverapi.EventClaim }
	if !scenario.WaitFor(5*time.Second, func() bool { return scenario.CountEvents(t.Events(a), claimed) > 0 }) {
		<-done
		t.Fatalf("A never claimed the key")
	}
	// The key reused with another body while A runs is refused by B at
	// once, as key reuse: not made to wait for A, nor handed A's answer.
	reuse := scenario.DebitCall("acct-W", 20, call.Key)
	reuse.Payload = fmt.Appendf(reuse.Payload, " sleep=%d", origSleep.Milliseconds())
	reuse.Timeout, reuse.AttemptTimeout = call.Timeout, call.AttemptTimeout
	rc := t.Client(b.Addr, client.DefaultConfig()).Do(t.Ctx, reuse)
	execAAtReuse := t.Counters(a).ExecDebit
	reused := scenario.Brief(rc, "balance", "exec", "replayed")
	if rc.Status != proto.StatusOK {
		reused += " " + string(rc.Payload)
	}
	scenario.Expectf(t, "reuseOnB", reused, proto.StatusInvalidArgument.String()+" "+bank.ErrKeyReused,
		"a different body under a running key is key reuse; log %s", scenario.AttemptLog(rc))
	scenario.Expectf(t, "debitExecAAtReuse", execAAtReuse, 0, "the reuse must be refused while A still executes, not once A answered")

	sent := time.Now()
	rb := t.Client(b.Addr, client.DefaultConfig()).Do(t.Ctx, call)
	waited := time.Since(sent)
	ra := <-done
	scenario.Expectf(t, "original", scenario.Brief(ra, "balance", "exec", "replayed"), "OK balance=990 exec=1 replayed=false", "log %s", scenario.AttemptLog(ra))
	scenario.Expectf(t, "duplicateOnB", scenario.Brief(rb, "balance", "exec", "replayed"), "OK balance=990 exec=1 replayed=true",
		"B must wait for A's answer, not execute; log %s", scenario.AttemptLog(rb))
	// B answers once A has slept and committed: never sooner than what
	// was left of A's sleep, at most that plus B's polling and slack.
	scenario.Within(t, "duplicateWaited", waited, origSleep+2*scenario.Slack)
	ctrA, ctrB := t.Counters(a), t.Counters(b)
	scenario.Expect(t, "debitExecA", ctrA.ExecDebit, 1)
	scenario.Expect(t, "debitExecB", ctrB.ExecDebit, 0)
	scenario.Expect(t, "dedupHitsB", ctrB.DedupHits, 1)
	scenario.Expect(t, "keyConflictsB", ctrB.KeyConflicts, 1)
	scenario.Expect(t, "balance", t.Balance(b, "acct-W"), bank.DefaultBalance-10)
}

// debitsAddUpAcrossInstances sends keyed debits of one account, each with
// a key of its own, to two servers on one store at once, several
// connections to each: every debit the servers executed must be in the
// account's balance and count, whichever server executed it and whatever
// ran beside it. A debit that read the balance outside its transaction
// would write back a stale one and lose another's debit.
func debitsAddUpAcrossInstances(t *scenario.T, kind string) {
	const (
		conns  = 4 // per server, each a client of its own
		each   = 5 // debits per connection, one after another
		amount = 10
		total  = 2 * conns * each
	)
	t.Field("debits", total)
	store := t.NewStore(kind)
	a := t.StartServer(scenario.ServerOpts{Store: store})
	b := t.StartServer(scenario.ServerOpts{Store: store})
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		answers = map[string]int{} // by status
	)
	for si, s := range []*scenario.Server{a, b} {
		for ci := range conns {
			c := t.Client(s.Addr, client.DefaultConfig())
			wg.Go(func() {
				for di := range each {
					r := c.Do(t.Ctx, scenario.DebitCall("acct-C", amount, fmt.Sprintf("debit-acct-C-%d-%d-%d", si, ci, di)))
					mu.Lock()
					answers[r.Status.String()]++
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	scenario.Expect(t, "answers", fmt.Sprint(answers), fmt.Sprintf("map[%s:%d]", proto.StatusOK, total))
	executed := t.Counters(a).ExecDebit + t.Counters(b).ExecDebit
	scenario.Expect(t, "debitExec", executed, total)
	acct := t.Control(a, bank.MethodGet, "account=acct-C")
	balance, err := acct.Int("balance", -1)
	if err != nil {
		t.Fatalf("balance of acct-C: %v", err)
	}
	debits, err := acct.Int("exec", -1)
	if err != nil {
		t.Fatalf("debits of acct-C: %v", err)
	}
	scenario.Expectf(t, "balance", balance, bank.DefaultBalance-amount*executed,
		"the account must hold each of the %d debits the servers executed", executed)
	scenario.Expectf(t, "accountDebits", debits, executed, "the account must count each debit the servers executed")
}

// commitOutcomeUnknown runs a server whose PostgreSQL connection goes
// through a relay that loses a keyed debit's COMMIT: first after
// PostgreSQL committed it, then before PostgreSQL read it. Neither time
// can the server know whether the debit took effect, so it must send no
// answer, leaving the attempt's outcome unknown, rather than one saying
// the debit did not execute; and it must keep the key claimed. The
// client's retry then finds the committed answer, or waits out the
// claim's lease before it takes the key over and executes.
//
// The lease runs out in the middle of a retry's attempt, with room on
// either side: the retry waiting on the kept claim then takes the key
// over and answers. With 300ms attempts and a 1s lease, a loaded machine
// once put the lease's end between two attempts: a retry its client had
// already given up on took the key over and executed, unanswered, and
// the next attempt was replayed its record (replayed=true, dedupHits=2).
// That is still once, but not what this scenario shows.
func commitOutcomeUnknown(t *scenario.T, kind string) {
	const (
		lease   = 4 * time.Second
		attempt = 1500 * time.Millisecond
	)
	t.Field("lease", lease)
	t.Field("attemptTimeout", attempt)
	relay, dsn := t.StartPGRelay(t.NewStore(kind))
	s := t.StartServer(scenario.ServerOpts{Store: dsn, DedupLease: lease})
	cfg := client.DefaultConfig()
	cfg.MaxAttempts, cfg.Deadline, cfg.AttemptTimeout = 20, 15*time.Second, attempt
	c := t.Client(s.Addr, cfg)
	lose := func(what string, how scenario.CommitCut, call client.Call) client.Result {
		cut := relay.Arm(how)
		r := c.Do(t.Ctx, call)
		select {
		case <-cut:
		default:
			t.Fatalf("%s: the relay never cut the debit's COMMIT; log %s", what, scenario.AttemptLog(r))
		}
		return r
	}

	// The COMMIT took effect and its answer was lost.
	r := lose("answerLost", scenario.CutCommitAnswer, scenario.DebitCall("acct-K", 10, "debit-acct-K-0001"))
	scenario.Expectf(t, "answerLost", firstAndLast(r), client.OutcomeTimeout.String()+"..RESPONSE/OK",
		"a commit whose answer was lost may have taken effect: no answer, not a retryable refusal; log %s", scenario.AttemptLog(r))
	scenario.Expectf(t, "answerLostResult", scenario.Brief(r, "balance", "exec", "replayed"), "OK balance=990 exec=1 replayed=true",
		"the commit happened: the retry finds its answer; log %s", scenario.AttemptLog(r))

	// The COMMIT never reached PostgreSQL.
	sent := time.Now() // the key's claim, and its lease, start after this
	r = lose("commitLost", scenario.CutBeforeCommit, scenario.DebitCall("acct-N", 10, "debit-acct-N-0001"))
	answered := time.Since(sent)
	scenario.Expectf(t, "commitLost", firstAndLast(r), client.OutcomeTimeout.String()+"..RESPONSE/OK",
		"a commit whose connection died may have taken effect: no answer, not a retryable refusal; log %s", scenario.AttemptLog(r))
	t.Volatile("commitLostAttempts", len(r.Log))
	// The key stays claimed: no retry executes before the lease of the
	// lost commit's claim has run out.
	scenario.Between(t, "commitLostAnswered", answered, lease, -1)
	scenario.Expectf(t, "commitLostResult", scenario.Brief(r, "balance", "exec", "replayed"), "OK balance=990 exec=1 replayed=false",
		"nothing committed: a retry takes the key over and executes, once; log %s", scenario.AttemptLog(r))

	ctr := t.Counters(s)
	scenario.Expect(t, "debitExec", ctr.ExecDebit, 1)
	scenario.Expect(t, "dedupHits", ctr.DedupHits, 1)
	scenario.Expect(t, "balanceK", t.Balance(s, "acct-K"), bank.DefaultBalance-10)
	scenario.Expect(t, "balanceN", t.Balance(s, "acct-N"), bank.DefaultBalance-10)
}
