package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/outfile"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/serverproc"
)

// Files a run writes into Options.Out.
const (
	HistoryFile  = "history.jsonl"
	ScheduleFile = "schedule.txt"
	WindowFile   = "window.jsonl"
)

// AccountEpoch is how long the workload uses one set of accounts.
const AccountEpoch = 2 * time.Second

// KillSilence is how long a server to be killed executes debits without
// answering them first: less than the clients' attempt timeout, so that
// their retries reach the restarted server.
const KillSilence = 100 * time.Millisecond

// Lease is the servers' -dedup-lease: short, so that a key whose
// executor was killed is taken over within a retry's deadline.
const Lease = time.Second

// fleet is the run's rpcserver processes, replaced as the nemesis kills
// and restarts them.
type fleet struct {
	o     Options
	store string
	mu    sync.Mutex
	procs []*serverproc.Proc
	addrs []string
	// downs are the intervals, ns since the start, in which each server
	// was killed and not yet restarted.
	downs [][][2]int64
}

func (f *fleet) spec(i int, addr string) serverproc.Spec {
	return serverproc.RPCServer{
		Bin: f.o.ServerBin, Addr: addr, LogPath: f.logPath(i), Store: f.store, DedupLease: Lease,
		DrainTimeout: DrainTimeout, Stderr: io.Discard,
	}.Spec()
}

func (f *fleet) logPath(i int) string {
	return filepath.Join(f.o.Out, fmt.Sprintf("server-%d.log", i))
}

func (f *fleet) start(ctx context.Context, i int, addr string) error {
	p, err := serverproc.StartAwait(ctx, f.spec(i, addr), serverproc.StartTimeout)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.procs[i], f.addrs[i] = p, p.Addr
	f.mu.Unlock()
	return nil
}

func (f *fleet) proc(i int) *serverproc.Proc {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.procs[i]
}

func (f *fleet) stop() {
	f.mu.Lock()
	procs := f.procs
	f.mu.Unlock()
	for _, p := range procs {
		if p != nil {
			p.Stop()
		}
	}
}

// Run runs one chaos run and checks its history. Its error is about the
// run itself (a server that cannot start, an unwritable directory); a
// history that fails a check is a Result with Verdict FAIL.
//
// When ctx ends while the workload runs, the workload issues no more
// operations (those in flight end within their own deadline), the
// nemesis undoes its current fault and stops, and the history recorded
// so far is checked: Run returns that Result, with InterruptedAfter set,
// and ctx's cause as its error. When ctx ends before the workload starts,
// or before it recorded any operation, there is nothing to check and Run
// returns ctx's cause alone.
func Run(ctx context.Context, o Options) (Result, error) {
	if err := o.Validate(); err != nil {
		return Result{}, err
	}
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	if err := prepareOut(o.Out); err != nil {
		return Result{}, err
	}
	sched := Schedule(o)
	if err := writeSchedule(o, sched); err != nil {
		return Result{}, err
	}
	fmt.Fprintf(progress, "chaos: seed=%d duration=%v clients=%d accounts=%d store=%s servers=%d client=%s faults=%s schedule=%s (%d events)\n",
		o.Seed, o.Duration, o.Clients, o.Accounts, o.Store, o.Servers, o.Client, strings.Join(o.Faults, ","), Digest(sched), len(sched))
	for _, e := range sched {
		fmt.Fprintf(progress, "chaos: nemesis %v\n", e)
	}

	f := &fleet{o: o, procs: make([]*serverproc.Proc, o.Servers), addrs: make([]string, o.Servers), downs: make([][][2]int64, o.Servers)}
	switch o.Store {
	case StoreMemory:
		f.store = bank.KindMemory
	case StoreSQLite:
		f.store = "sqlite:" + filepath.Join(o.Out, "bank.db")
	case StorePostgres:
		if o.Postgres == nil {
			return Result{}, errors.New("chaos: the postgres store needs a PostgreSQL server (apt-get install postgresql, or RPCBENCH_PG_DSN)")
		}
		dsn, err := o.Postgres.NewDatabase(ctx, "chaos")
		if err != nil {
			return Result{}, err
		}
		defer func() {
			dctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			o.Postgres.DropDatabase(dctx, dsn)
		}()
		f.store = dsn
	}
	defer f.stop()
	for i := range o.Servers {
		if err := f.start(ctx, i, ""); err != nil {
			return Result{}, fmt.Errorf("chaos: server %d: %w", i, err)
		}
	}

	clients := make([]*client.Client, o.Clients)
	for i := range clients {
		addrs := make([]string, o.Servers)
		for j := range addrs {
			addrs[j] = f.addrs[(i+j)%o.Servers]
		}
		cfg := client.DefaultConfig()
		if o.Client == ClientNaive {
			cfg.RetryUnknown = func(*client.Call) bool { return true }
		}
		c, err := client.NewMulti(addrs, cfg)
		if err != nil {
			return Result{}, err
		}
		defer c.Close()
		clients[i] = c
	}
	callers := make([]caller, len(clients))
	for i, c := range clients {
		callers[i] = c
		if o.wrap != nil {
			callers[i] = o.wrap(c)
		}
	}

	start := time.Now()
	since := func() int64 { return int64(time.Since(start)) }
	runCtx, cancel := context.WithDeadline(ctx, start.Add(o.Duration))
	defer cancel()
	var (
		wg      sync.WaitGroup
		histMu  sync.Mutex
		history []Op
		nemErrs []string
	)
	for i, c := range callers {
		wg.Go(func() {
			ops := workload(runCtx, o, i, c, since)
			histMu.Lock()
			history = append(history, ops...)
			histMu.Unlock()
		})
	}
	nem := &nemesis{fleet: f, clients: clients, sched: sched, start: start, since: since, progress: progress}
	nemDone := make(chan struct{})
	go func() {
		defer close(nemDone)
		nemErrs = nem.run(runCtx)
	}()
	// The moment ctx ends is when the run was interrupted, not when the
	// calls then in flight returned.
	var endedAt atomic.Int64 // ns since start; 0 while ctx has not ended
	defer context.AfterFunc(ctx, func() { endedAt.Store(since()) })()
	wg.Wait()
	<-nemDone
	var interrupted time.Duration
	if ctx.Err() != nil && len(history) == 0 {
		// Ended before any operation was recorded: nothing to check.
		f.stop()
		return Result{}, context.Cause(ctx)
	}
	if ctx.Err() != nil {
		interrupted = time.Duration(endedAt.Load())
		if interrupted == 0 {
			// AfterFunc's goroutine has not run yet.
			interrupted = time.Duration(since())
		}
		interrupted = min(max(interrupted, 1), o.Duration)
		fmt.Fprintf(progress, "chaos: interrupted after %v of %v: checking the %d operations recorded so far\n",
			interrupted.Round(time.Millisecond), o.Duration, len(history))
	}
	f.stop()
	for _, e := range nemErrs {
		fmt.Fprintf(progress, "chaos: nemesis: %s\n", e)
	}

	res := check(o, sched, history, f, int(nem.applied.Load()))
	res.NemesisErrors = nemErrs
	res.InterruptedAfter = interrupted
	if err := writeResult(o, &res, progress); err != nil {
		return res, err
	}
	if interrupted > 0 {
		return res, context.Cause(ctx)
	}
	return res, nil
}

// prepareOut makes the output directory, removing what an earlier run
// wrote there.
func prepareOut(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	old, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, p := range old {
		base := filepath.Base(p)
		if base == HistoryFile || base == ScheduleFile || base == WindowFile || strings.HasPrefix(base, "server-") ||
			strings.HasPrefix(base, "bank.db") || strings.HasPrefix(base, "linear-") {
			if err := os.Remove(p); err != nil {
				return fmt.Errorf("chaos: %w", err)
			}
		}
	}
	return nil
}

func writeSchedule(o Options, sched []Event) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# rpcbench chaos %s\n", strings.Join(o.ReplayArgs(), " "))
	for _, e := range sched {
		fmt.Fprintln(&b, e)
	}
	return writeFileAtomic(filepath.Join(o.Out, ScheduleFile), []byte(b.String()))
}

// writeFileAtomic writes data to path through a temporary file
// (outfile), so that a crash leaves the old file or the new one, never
// half of one.
func writeFileAtomic(path string, data []byte) error {
	f, err := outfile.Create(path)
	if err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	defer f.Abort()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("chaos: write %s: %w", path, err)
	}
	if err := f.Commit(); err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	return nil
}

// caller is what the workload needs of a client.
type caller interface {
	Do(context.Context, client.Call) client.Result
}

// workload is one client's loop: random operations on random accounts,
// each recorded with its outcome, until ctx ends.
func workload(ctx context.Context, o Options, id int, c caller, since func() int64) []Op {
	rng := rand.New(rand.NewPCG(uint64(o.Seed), uint64(id)+1))
	var ops []Op
	for n := 1; ctx.Err() == nil; n++ {
		// Every AccountEpoch the workload moves on to Accounts fresh
		// accounts: they contend, and none runs out of balance, however
		// long the run.
		epoch := int(since() / int64(AccountEpoch))
		op := Op{ID: n, Client: id, Account: fmt.Sprintf("acct-%d", epoch*o.Accounts+rng.IntN(o.Accounts))}
		call := client.Call{Payload: []byte("account=" + op.Account)}
		switch p := rng.IntN(10); {
		case p < 4:
			op.Kind, call.Method, call.Idempotent = OpGet, bank.MethodGet, true
		case p < 8:
			op.Kind, op.Key = OpKeyedDebit, fmt.Sprintf("c%d-%d-s%d", id, n, o.Seed)
		default:
			op.Kind = OpKeylessDebit
		}
		if op.Kind != OpGet {
			op.Amount = 1
			call.Method, call.Key = bank.MethodDebit, op.Key
			call.Payload = fmt.Appendf(call.Payload, " amount=%d", op.Amount)
		}
		op.Invoke = since()
		// The operation runs to its own deadline even when the run's
		// ends: cutting it short would add unknowns the faults did not
		// cause.
		r := c.Do(context.WithoutCancel(ctx), call)
		op.Complete = since()
		record(&op, r)
		ops = append(ops, op)
		think := time.NewTimer(time.Duration(rng.IntN(10)) * time.Millisecond)
		select {
		case <-think.C:
		case <-ctx.Done():
			think.Stop()
		}
	}
	return ops
}

// record fills op's outcome from the call's result.
func record(op *Op, r client.Result) {
	op.Status, op.Attempts = r.Status.String(), len(r.Log)
	if r.Err != nil {
		op.Err = r.Err.Error()
	}
	switch r.Status {
	case proto.StatusOK:
		op.Outcome = OutcomeOK
		fs, err := serverapi.ParseFields(r.Payload)
		if err != nil {
			op.Err = "unparsable answer: " + err.Error()
			break
		}
		op.RespAccount = fs["account"]
		op.Balance, _ = fs.Int("balance", -1)
		op.Exec, _ = fs.Int("exec", -1)
		op.Replayed = fs["replayed"] == "true"
	case proto.StatusUnknown:
		op.Outcome = OutcomeUnknown
	default:
		// UNAVAILABLE, DEADLINE_EXCEEDED, APP_ERROR, INVALID_ARGUMENT and
		// anything else: refused unexecuted.
		op.Outcome = OutcomeFailed
	}
}

// nemesis is one run's nemesis: what it acts on, its clock, and what it
// has done so far.
type nemesis struct {
	fleet    *fleet
	clients  []*client.Client
	sched    []Event
	start    time.Time // the workload's start, from which Event.At counts
	since    func() int64
	progress io.Writer
	// applied counts the events carried out, or begun when ctx ended.
	applied atomic.Int64
	errs    []string
}

// run carries out the schedule until it ends or ctx does; it returns
// what went wrong along the way, which the run reports but which does
// not stop it.
func (n *nemesis) run(ctx context.Context) []string {
	for _, e := range n.sched {
		if !wait(ctx, time.Until(n.start.Add(e.At))) {
			break
		}
		fmt.Fprintf(n.progress, "chaos: %7.3fs %v\n", time.Since(n.start).Seconds(), e)
		n.applied.Add(1)
		n.apply(ctx, e)
	}
	return n.errs
}

// wait waits d, and reports false if ctx ended first.
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// fail records what went wrong with event e.
func (n *nemesis) fail(e Event, format string, args ...any) {
	n.errs = append(n.errs, fmt.Sprintf("%v: ", e)+fmt.Sprintf(format, args...))
}

// apply carries out event e, undoing it after e.For where it lasts.
func (n *nemesis) apply(ctx context.Context, e Event) {
	f := n.fleet
	switch e.Kind {
	case NemCut:
		for _, c := range n.clients {
			c.Cut()
		}
	case NemPause:
		p := f.proc(e.Server)
		if err := syscall.Kill(p.PID, syscall.SIGSTOP); err != nil {
			n.fail(e, "%v", err)
			return
		}
		wait(ctx, e.For)
		if err := syscall.Kill(p.PID, syscall.SIGCONT); err != nil {
			n.fail(e, "%v", err)
		}
	case NemDrain:
		if err := f.drainRestart(ctx, e.Server, e.For); err != nil {
			n.fail(e, "%v", err)
		}
	case NemRolling:
		for i := range f.o.Servers {
			if err := f.drainRestart(ctx, i, e.For); err != nil {
				n.fail(e, "server %d: %v", i, err)
			}
		}
	case NemKill:
		// A crash loses the answers in flight: the server first goes on
		// executing debits without answering them, then dies before any
		// retry can reach it.
		p := f.proc(e.Server)
		if err := control(p.Addr, serverapi.MethodFault, "kind=noreply method=debit"); err != nil {
			n.fail(e, "%v", err)
		}
		wait(ctx, KillSilence)
		down := n.since()
		if err := p.Kill(); err != nil {
			n.fail(e, "%v", err)
		}
		wait(ctx, e.For) // even past the run's end: it must be restarted
		err := f.start(context.WithoutCancel(ctx), e.Server, p.Addr)
		f.mu.Lock()
		f.downs[e.Server] = append(f.downs[e.Server], [2]int64{down, n.since()})
		f.mu.Unlock()
		if err != nil {
			n.fail(e, "restart: %v", err)
		}
	default:
		if err := control(f.proc(e.Server).Addr, serverapi.MethodFault, e.Rule); err != nil {
			n.fail(e, "%v", err)
			return
		}
		wait(ctx, e.For)
		if err := control(f.proc(e.Server).Addr, serverapi.MethodClear, ""); err != nil {
			n.fail(e, "clear: %v", err)
		}
	}
}

// DrainTimeout is the servers' -drain-timeout: how long a drain may wait
// for the requests a server took. They are short; a longer wait is a
// request that does not finish, which the drain cuts.
const DrainTimeout = 2 * time.Second

// drainRestart drains server i (SIGTERM), waits for it to exit, leaves it
// down for d, and restarts it on the same store and address. A drain
// loses no answer and no EXEC line, so unlike a kill it excuses nothing in
// the exactly-once check. The restart happens even after ctx ended: the
// run must end with every server up.
func (f *fleet) drainRestart(ctx context.Context, i int, d time.Duration) error {
	p := f.proc(i)
	if err := p.Terminate(); err != nil {
		return err
	}
	var drainErr error
	select {
	case <-p.Exited():
		if err := p.ExitErr(); err != nil {
			drainErr = fmt.Errorf("drained server exited with %v", err)
		}
	case <-time.After(DrainTimeout + serverproc.StartTimeout):
		p.Stop()
		drainErr = fmt.Errorf("the drain did not end within %v", DrainTimeout+serverproc.StartTimeout)
	}
	wait(ctx, d)
	if err := f.start(context.WithoutCancel(ctx), i, p.Addr); err != nil {
		return errors.Join(drainErr, fmt.Errorf("restart: %w", err))
	}
	return drainErr
}

// control makes one control call on a connection of its own, declared as
// a control connection.
func control(addr, method, payload string) error {
	c, err := client.New(addr, client.DefaultConfig())
	if err != nil {
		return err
	}
	defer c.Close()
	ctx := context.Background()
	if r := c.Do(ctx, client.Call{Method: serverapi.MethodHello, Idempotent: true, Payload: []byte("role=" + serverapi.RoleControl)}); r.Status != proto.StatusOK {
		return fmt.Errorf("%s: %v %s", serverapi.MethodHello, r.Status, r.Payload)
	}
	r := c.Do(ctx, client.Call{Method: method, Idempotent: method != serverapi.MethodFault, Payload: []byte(payload)})
	if r.Status != proto.StatusOK {
		return fmt.Errorf("%s: %v %s", method, r.Status, r.Payload)
	}
	return nil
}
