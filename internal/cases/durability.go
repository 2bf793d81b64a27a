package cases

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// NeedsPostgres is the Needs of a scenario that runs against PostgreSQL:
// its runner must set Env.Postgres.
const NeedsPostgres = "postgres"

// Databases hands out fresh PostgreSQL databases, one per scenario.
type Databases interface {
	// NewDatabase creates an empty database and returns its DSN.
	NewDatabase(ctx context.Context, prefix string) (string, error)
	// DropDatabase removes a database NewDatabase made.
	DropDatabase(ctx context.Context, dsn string) error
}

// ErrNoPostgres is what a PostgreSQL scenario fails with when its runner
// gave it no database server.
var ErrNoPostgres = errors.New("no PostgreSQL server: install Debian's postgresql package (apt-get install postgresql) or set RPCBENCH_PG_DSN")

// newStore returns the -store spec of a fresh, empty store of kind: a
// SQLite file in a directory removed when the scenario ends, or a new
// PostgreSQL database, dropped when it ends.
func (t *T) newStore(kind string) string {
	t.Field("store", kind)
	switch kind {
	case bank.KindMemory:
		return bank.KindMemory
	case bank.KindSQLite:
		dir, err := os.MkdirTemp("", "rpcbench-"+t.name+"-")
		if err != nil {
			t.Fatalf("store: %v", err)
		}
		t.cleanup(func() { os.RemoveAll(dir) })
		return "sqlite:" + filepath.Join(dir, "bank.db")
	case bank.KindPostgres:
		if t.env.Postgres == nil {
			t.Fatalf("%v", ErrNoPostgres)
		}
		dsn, err := t.env.Postgres.NewDatabase(t.ctx, t.name)
		if err != nil {
			t.Fatalf("store: %v", err)
		}
		t.cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := t.env.Postgres.DropDatabase(ctx, dsn); err != nil {
				t.Check(false, "drop database: %v", err)
			}
		})
		return dsn
	}
	t.Fatalf("unknown store kind %q", kind)
	return ""
}

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
	first, restart  *server
	crash           string // the point of the first server's CRASH event
	firstExit       string // how the first server ended
	restartDebitsOK int64  // debits the restarted server executed
}

// crashAndRestart sends one keyed debit to a server that kills itself at
// point, starts a new server on the same address and store once the
// first one is gone, and returns the debit's result: the client retries
// until the new server answers.
func crashAndRestart(t *T, kind, point string, lease time.Duration) crashRun {
	store := t.newStore(kind)
	first := t.startServer(serverOpts{Store: store, Crash: point, DedupLease: lease})
	c := t.client(first.Addr, durableConfig())
	res := make(chan client.Result, 1)
	go func() { res <- c.Do(t.ctx, debitCall("acct-D", 10, "debit-acct-D-0001")) }()
	select {
	case <-first.Exited():
	case <-time.After(10 * time.Second):
		t.Fatalf("the server never crashed at %s", point)
	}
	// The port is free once the process is gone; the client's attempts
	// meanwhile are refused, unsent, and retried.
	restart := t.startServer(serverOpts{Store: store, Addr: first.Addr, DedupLease: lease})
	run := crashRun{result: <-res, first: first, restart: restart}
	if err := first.ExitErr(); err != nil {
		run.firstExit = err.Error()
	}
	for _, e := range t.events(first) {
		if e.Name == serverapi.EventCrash {
			run.crash = e.Text(serverapi.KeyPoint)
		}
	}
	run.restartDebitsOK = t.counters(restart).ExecDebit
	return run
}

// firstAndLast renders the first and the last attempt's outcomes: the
// refused attempts between them vary in number with the restart's speed.
func firstAndLast(r client.Result) string {
	o := strings.Split(outcomes(r), ",")
	return o[0] + ".." + o[len(o)-1]
}

func durableDedupSurvivesCrash(t *T, kind string) {
	run := crashAndRestart(t, kind, serverapi.CrashAfterCommit, 0)
	expect(t, "crash", run.crash, serverapi.CrashAfterCommit)
	expect(t, "firstServerExit", run.firstExit, "signal: killed")
	expectf(t, "attempts", firstAndLast(run.result), "CONN_LOST_AFTER_SEND..RESPONSE/OK", "log %s", attemptLog(run.result))
	t.Volatile("attempts", len(run.result.Log))
	expectf(t, "result", brief(run.result, "balance", "exec", "replayed"), "OK balance=990 exec=1 replayed=true",
		"the restarted server must replay the committed answer; log %s", attemptLog(run.result))
	expect(t, "restartedDebitExec", run.restartDebitsOK, 0)
	expect(t, "balance", t.balance(run.restart, "acct-D"), bank.DefaultBalance-10)
}

func crashBeforeCommitLeavesNothing(t *T, kind string) {
	const lease = 500 * time.Millisecond
	run := crashAndRestart(t, kind, serverapi.CrashBeforeCommit, lease)
	t.Field("lease", lease)
	expect(t, "crash", run.crash, serverapi.CrashBeforeCommit)
	expect(t, "firstServerExit", run.firstExit, "signal: killed")
	// exec counts the account's committed debits: 1 means the crashed
	// transaction left nothing and the retry's is the only one.
	expectf(t, "result", brief(run.result, "balance", "exec", "replayed"), "OK balance=990 exec=1 replayed=false",
		"log %s", attemptLog(run.result))
	expect(t, "restartedDebitExec", run.restartDebitsOK, 1)
	expect(t, "balance", t.balance(run.restart, "acct-D"), bank.DefaultBalance-10)
}

// memoryStoreLosesDedup passes only when the debit really executed
// twice: once before the crash, after its commit, and again on the
// restarted server.
func memoryStoreLosesDedup(t *T, kind string) {
	run := crashAndRestart(t, kind, serverapi.CrashAfterCommit, 0)
	expect(t, "crash", run.crash, serverapi.CrashAfterCommit)
	committedBeforeCrash := int64(0)
	if run.crash == serverapi.CrashAfterCommit {
		committedBeforeCrash = 1
	}
	expectf(t, "result", brief(run.result, "balance", "exec", "replayed"), "OK balance=990 exec=1 replayed=false",
		"the restarted server knows neither the key nor the first debit; log %s", attemptLog(run.result))
	expectf(t, "executions", committedBeforeCrash+run.restartDebitsOK, 2,
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
func twoInstances(t *T, specA, specB string) shared {
	a := t.startServer(serverOpts{Store: specA, Faults: []string{"kind=close method=debit count=1"}})
	b := t.startServer(serverOpts{Store: specB})
	cfg := client.DefaultConfig()
	// A's first debit on a durable store opens its first connection to
	// the database: on a loaded machine that can take longer than the
	// default 300ms attempt, which would time the attempt out before the
	// close this scenario is about.
	cfg.AttemptTimeout, cfg.Deadline = 3*time.Second, 10*time.Second
	cfg.Trace = t.trace.hook()
	c, err := client.NewMulti([]string{a.Addr, b.Addr}, cfg)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	t.cleanup(func() { c.Close() })
	r := c.Do(t.ctx, debitCall("acct-S", 10, "debit-acct-S-0001"))
	names := map[string]string{a.Addr: "A", b.Addr: "B"}
	addrs := make([]string, len(r.Log))
	for i, at := range r.Log {
		addrs[i] = names[at.Addr]
	}
	ca, cb := t.counters(a), t.counters(b)
	return shared{
		result: r, addrs: strings.Join(addrs, ","),
		execA: ca.ExecDebit, execB: cb.ExecDebit, hitsB: cb.DedupHits,
		balanceA: t.balance(a, "acct-S"), balanceB: t.balance(b, "acct-S"),
	}
}

func dedupSharedAcrossInstances(t *T, kind string) {
	store := t.newStore(kind)
	s := twoInstances(t, store, store)
	expectf(t, "attempts", outcomes(s.result), "CONN_LOST_AFTER_SEND,RESPONSE/OK", "log %s", attemptLog(s.result))
	expect(t, "servers", s.addrs, "A,B")
	expectf(t, "result", brief(s.result, "balance", "exec", "replayed"), "OK balance=990 exec=1 replayed=true",
		"B must replay the answer A committed; log %s", attemptLog(s.result))
	expect(t, "debitExecA", s.execA, 1)
	expect(t, "debitExecB", s.execB, 0)
	expect(t, "dedupHitsB", s.hitsB, 1)
	expect(t, "balanceA", s.balanceA, bank.DefaultBalance-10)
	expect(t, "balanceB", s.balanceB, bank.DefaultBalance-10)
}

// memoryDedupNotShared passes only when both servers executed the debit.
func memoryDedupNotShared(t *T, kind string) {
	t.newStore(kind)
	s := twoInstances(t, bank.KindMemory, bank.KindMemory)
	expect(t, "servers", s.addrs, "A,B")
	expectf(t, "result", brief(s.result, "balance", "exec", "replayed"), "OK balance=990 exec=1 replayed=false",
		"B has its own store and never saw the key; log %s", attemptLog(s.result))
	expectf(t, "executions", s.execA+s.execB, 2, "one keyed debit, executed by A and again by B")
}

func leaseExpiryTakeover(t *T, kind string) {
	const (
		lease   = time.Second
		retries = 4
	)
	t.Field("lease", lease)
	store := t.newStore(kind)
	a := t.startServer(serverOpts{Store: store, Crash: serverapi.CrashBeforeCommit, DedupLease: lease})
	b := t.startServer(serverOpts{Store: store, DedupLease: lease})
	call := debitCall("acct-L", 10, "debit-acct-L-0001")

	one := client.DefaultConfig()
	one.MaxAttempts = 1
	sent := time.Now() // the claim, and its lease, start after this
	first := t.client(a.Addr, one).Do(t.ctx, call)
	select {
	case <-a.Exited():
	case <-time.After(10 * time.Second):
		t.Fatalf("the server never crashed")
	}
	expectf(t, "firstAttempt", outcomes(first), "CONN_LOST_AFTER_SEND", "log %s", attemptLog(first))

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
		c := t.client(b.Addr, cfg)
		wg.Go(func() {
			r := c.Do(t.ctx, call)
			at := time.Since(sent)
			mu.Lock()
			defer mu.Unlock()
			answers[brief(r, "balance", "exec")]++
			if fields(r)["replayed"] == "false" {
				took++
			}
			last, firstAt = max(last, at), min(firstAt, at)
		})
	}
	wg.Wait()
	ctr := t.counters(b)
	expectf(t, "answers", fmt.Sprint(answers), fmt.Sprintf("map[OK balance=990 exec=1:%d]", retries),
		"every retry must get the one execution's answer")
	expectf(t, "takeovers", took, 1, "exactly one retry takes the key over and executes")
	expect(t, "debitExecB", ctr.ExecDebit, 1)
	expect(t, "dedupHitsB", ctr.DedupHits, retries-1)
	// No retry may be answered before the dead claim's lease ran out,
	// and the takeover follows it promptly.
	between(t, "firstAnswer", firstAt, lease, lease+2*slack)
	within(t, "lastAnswer", last, lease+2*slack)
	expect(t, "balance", t.balance(b, "acct-L"), bank.DefaultBalance-10)
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

func ttlExpiredKeyExecutesAgain(t *T, kind string) {
	const ttl = 400 * time.Millisecond
	t.Field("ttl", ttl)
	store := t.newStore(kind)
	s := t.startServer(serverOpts{Store: store, DedupTTL: ttl, DedupLease: ttl / 2})
	c := t.client(s.Addr, patientConfig())
	call := debitCall("acct-T", 10, "debit-acct-T-0001")
	sent := time.Now()
	r1 := c.Do(t.ctx, call)
	r2 := c.Do(t.ctx, call)
	expect(t, "first", brief(r1, "balance", "exec", "replayed"), "OK balance=990 exec=1 replayed=false")
	expect(t, "withinTTL", brief(r2, "balance", "exec", "replayed"), "OK balance=990 exec=1 replayed=true")

	// The sweeper runs every TTL/2 and logs what it deleted: the record
	// is gone once it says so.
	swept := func() bool {
		return countEvents(t.events(s), func(e serverapi.Event) bool { return e.Name == serverapi.EventSweep }) > 0
	}
	if !waitFor(10*time.Second, swept) {
		t.Fatalf("no %s event: the expired record was never swept", serverapi.EventSweep)
	}
	between(t, "sweptAfter", time.Since(sent), ttl, ttl+ttl/2+2*slack)
	r3 := c.Do(t.ctx, call)
	expectf(t, "afterTTL", brief(r3, "balance", "exec", "replayed"), "OK balance=980 exec=2 replayed=false",
		"past its TTL the key is forgotten, and the same debit executes again")
	expect(t, "balance", t.balance(s, "acct-T"), bank.DefaultBalance-20)

	// Forgotten by its TTL, not by the sweep: a record past its TTL that
	// no sweep has deleted yet must not be replayed either. The first
	// server, which sweeps every TTL/2, executes a second key and stops
	// before that key's TTL ends; the key's reuse reaches a server whose
	// TTL is the default, so that it sweeps only once a minute.
	call = debitCall("acct-U", 10, "debit-acct-U-0001")
	u1 := c.Do(t.ctx, call)
	answered := time.Now() // the record's TTL runs from before this
	s.Stop()
	expect(t, "unsweptFirst", brief(u1, "balance", "exec", "replayed"), "OK balance=990 exec=1 replayed=false")
	late := t.startServer(serverOpts{Store: store})
	// The TTL passing is the event awaited; nothing announces it. The
	// extra 10 ms covers the record's whole-millisecond expiry.
	time.Sleep(time.Until(answered.Add(ttl + 10*time.Millisecond)))
	u2 := t.client(late.Addr, patientConfig()).Do(t.ctx, call)
	expectf(t, "afterTTLUnswept", brief(u2, "balance", "exec", "replayed"), "OK balance=980 exec=2 replayed=false",
		"a record past its TTL is forgotten whether or not a sweep deleted it yet; log %s", attemptLog(u2))
	lateEvents := t.events(late)
	expectf(t, "lateSweeps", countEvents(lateEvents, func(e serverapi.Event) bool { return e.Name == serverapi.EventSweep }), 0,
		"the late server's sweep must not have run, or the record was not left unswept")
	ctr := t.counters(late)
	expect(t, "lateDebitExec", ctr.ExecDebit, 1)
	expect(t, "lateDedupHits", ctr.DedupHits, 0)
}

// duplicateWaitsAcrossInstances sends a keyed debit to A, which executes
// it slowly (a sleep field), and the same debit to B once A has claimed
// the key: B must wait for A's running record, not execute. Before that
// duplicate, a debit reusing the key with another amount reaches B, which
// must refuse it at once: a waiter that ignored the fingerprint would be
// handed A's answer.
func duplicateWaitsAcrossInstances(t *T, kind string) {
	const origSleep = 600 * time.Millisecond
	store := t.newStore(kind)
	a := t.startServer(serverOpts{Store: store})
	b := t.startServer(serverOpts{Store: store})
	call := debitCall("acct-W", 10, "debit-acct-W-0001")
	call.Payload = fmt.Appendf(call.Payload, " sleep=%d", origSleep.Milliseconds())
	call.Timeout, call.AttemptTimeout = 5*time.Second, 5*time.Second
	done := make(chan client.Result, 1)
	ca := t.client(a.Addr, client.DefaultConfig())
	go func() { done <- ca.Do(t.ctx, call) }()
	claimed := func(e serverapi.Event) bool { return e.Name == serverapi.EventClaim }
	if !waitFor(5*time.Second, func() bool { return countEvents(t.events(a), claimed) > 0 }) {
		<-done
		t.Fatalf("A never claimed the key")
	}
	// The key reused with another body while A runs is refused by B at
	// once, as key reuse: not made to wait for A, nor handed A's answer.
	reuse := debitCall("acct-W", 20, call.Key)
	reuse.Payload = fmt.Appendf(reuse.Payload, " sleep=%d", origSleep.Milliseconds())
	reuse.Timeout, reuse.AttemptTimeout = call.Timeout, call.AttemptTimeout
	rc := t.client(b.Addr, client.DefaultConfig()).Do(t.ctx, reuse)
	execAAtReuse := t.counters(a).ExecDebit
	reused := brief(rc, "balance", "exec", "replayed")
	if rc.Status != proto.StatusOK {
		reused += " " + string(rc.Payload)
	}
	expectf(t, "reuseOnB", reused, proto.StatusInvalidArgument.String()+" "+bank.ErrKeyReused,
		"a different body under a running key is key reuse; log %s", attemptLog(rc))
	expectf(t, "debitExecAAtReuse", execAAtReuse, 0, "the reuse must be refused while A still executes, not once A answered")

	sent := time.Now()
	rb := t.client(b.Addr, client.DefaultConfig()).Do(t.ctx, call)
	waited := time.Since(sent)
	ra := <-done
	expectf(t, "original", brief(ra, "balance", "exec", "replayed"), "OK balance=990 exec=1 replayed=false", "log %s", attemptLog(ra))
	expectf(t, "duplicateOnB", brief(rb, "balance", "exec", "replayed"), "OK balance=990 exec=1 replayed=true",
		"B must wait for A's answer, not execute; log %s", attemptLog(rb))
	// B answers once A has slept and committed: never sooner than what
	// was left of A's sleep, at most that plus B's polling and slack.
	within(t, "duplicateWaited", waited, origSleep+2*slack)
	ctrA, ctrB := t.counters(a), t.counters(b)
	expect(t, "debitExecA", ctrA.ExecDebit, 1)
	expect(t, "debitExecB", ctrB.ExecDebit, 0)
	expect(t, "dedupHitsB", ctrB.DedupHits, 1)
	expect(t, "keyConflictsB", ctrB.KeyConflicts, 1)
	expect(t, "balance", t.balance(b, "acct-W"), bank.DefaultBalance-10)
}

// debitsAddUpAcrossInstances sends keyed debits of one account, each with
// a key of its own, to two servers on one store at once, several
// connections to each: every debit the servers executed must be in the
// account's balance and count, whichever server executed it and whatever
// ran beside it. A debit that read the balance outside its transaction
// would write back a stale one and lose another's debit.
func debitsAddUpAcrossInstances(t *T, kind string) {
	const (
		conns  = 4 // per server, each a client of its own
		each   = 5 // debits per connection, one after another
		amount = 10
		total  = 2 * conns * each
	)
	t.Field("debits", total)
	store := t.newStore(kind)
	a := t.startServer(serverOpts{Store: store})
	b := t.startServer(serverOpts{Store: store})
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		answers = map[string]int{} // by status
	)
	for si, s := range []*server{a, b} {
		for ci := range conns {
			c := t.client(s.Addr, client.DefaultConfig())
			wg.Go(func() {
				for di := range each {
					r := c.Do(t.ctx, debitCall("acct-C", amount, fmt.Sprintf("debit-acct-C-%d-%d-%d", si, ci, di)))
					mu.Lock()
					answers[r.Status.String()]++
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	expect(t, "answers", fmt.Sprint(answers), fmt.Sprintf("map[%s:%d]", proto.StatusOK, total))
	executed := t.counters(a).ExecDebit + t.counters(b).ExecDebit
	expect(t, "debitExec", executed, total)
	acct := t.control(a, bank.MethodGet, "account=acct-C")
	balance, err := acct.Int("balance", -1)
	if err != nil {
		t.Fatalf("balance of acct-C: %v", err)
	}
	debits, err := acct.Int("exec", -1)
	if err != nil {
		t.Fatalf("debits of acct-C: %v", err)
	}
	expectf(t, "balance", balance, bank.DefaultBalance-amount*executed,
		"the account must hold each of the %d debits the servers executed", executed)
	expectf(t, "accountDebits", debits, executed, "the account must count each debit the servers executed")
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
func commitOutcomeUnknown(t *T, kind string) {
	const (
		lease   = 4 * time.Second
		attempt = 1500 * time.Millisecond
	)
	t.Field("lease", lease)
	t.Field("attemptTimeout", attempt)
	relay, dsn := t.startPGRelay(t.newStore(kind))
	s := t.startServer(serverOpts{Store: dsn, DedupLease: lease})
	cfg := client.DefaultConfig()
	cfg.MaxAttempts, cfg.Deadline, cfg.AttemptTimeout = 20, 15*time.Second, attempt
	c := t.client(s.Addr, cfg)
	lose := func(what string, how commitCut, call client.Call) client.Result {
		cut := relay.arm(how)
		r := c.Do(t.ctx, call)
		select {
		case <-cut:
		default:
			t.Fatalf("%s: the relay never cut the debit's COMMIT; log %s", what, attemptLog(r))
		}
		return r
	}

	// The COMMIT took effect and its answer was lost.
	r := lose("answerLost", cutCommitAnswer, debitCall("acct-K", 10, "debit-acct-K-0001"))
	expectf(t, "answerLost", firstAndLast(r), client.OutcomeTimeout.String()+"..RESPONSE/OK",
		"a commit whose answer was lost may have taken effect: no answer, not a retryable refusal; log %s", attemptLog(r))
	expectf(t, "answerLostResult", brief(r, "balance", "exec", "replayed"), "OK balance=990 exec=1 replayed=true",
		"the commit happened: the retry finds its answer; log %s", attemptLog(r))

	// The COMMIT never reached PostgreSQL.
	sent := time.Now() // the key's claim, and its lease, start after this
	r = lose("commitLost", cutBeforeCommit, debitCall("acct-N", 10, "debit-acct-N-0001"))
	answered := time.Since(sent)
	expectf(t, "commitLost", firstAndLast(r), client.OutcomeTimeout.String()+"..RESPONSE/OK",
		"a commit whose connection died may have taken effect: no answer, not a retryable refusal; log %s", attemptLog(r))
	t.Volatile("commitLostAttempts", len(r.Log))
	// The key stays claimed: no retry executes before the lease of the
	// lost commit's claim has run out.
	between(t, "commitLostAnswered", answered, lease, -1)
	expectf(t, "commitLostResult", brief(r, "balance", "exec", "replayed"), "OK balance=990 exec=1 replayed=false",
		"nothing committed: a retry takes the key over and executes, once; log %s", attemptLog(r))

	ctr := t.counters(s)
	expect(t, "debitExec", ctr.ExecDebit, 1)
	expect(t, "dedupHits", ctr.DedupHits, 1)
	expect(t, "balanceK", t.balance(s, "acct-K"), bank.DefaultBalance-10)
	expect(t, "balanceN", t.balance(s, "acct-N"), bank.DefaultBalance-10)
}
