package load

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rpcbench/rpcbench/bench/internal/workload"
	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/serverproc"
)

// Sample is one row's measured phase in one round.
type Sample struct {
	System string `json:"system"`
	G      int    `json:"g"`
	Round  int    `json:"round"`
	// Calls is the number of measured calls; NonOK of them failed or
	// returned the wrong account, and Retried ended OK after more than
	// one attempt (rpcbench only).
	Calls   int64 `json:"calls"`
	NonOK   int64 `json:"non_ok"`
	Retried int64 `json:"retried"`
	// FirstError describes the first non-OK call, empty if none.
	FirstError string        `json:"first_error,omitempty"`
	Elapsed    time.Duration `json:"elapsed_ns"`
	// P50 and P99 are over every measured call, non-OK ones included.
	P50 time.Duration `json:"p50_ns"`
	P99 time.Duration `json:"p99_ns"`
	// ClientCPU is the driver's user+system CPU over the measured phase;
	// ServerCPU the server process's, valid if ServerCPUOK.
	ClientCPU   time.Duration `json:"client_cpu_ns"`
	ServerCPU   time.Duration `json:"server_cpu_ns"`
	ServerCPUOK bool          `json:"server_cpu_ok"`
	ClientCPUOK bool          `json:"client_cpu_ok"`
	// Mallocs is the driver's heap allocation count over the measured
	// phase.
	Mallocs uint64 `json:"mallocs"`
	// Bytes is the payload bytes, request plus answer, of the measured
	// calls that ended OK with a right answer; frame headers and
	// protocol overhead are not counted.
	Bytes int64 `json:"bytes"`
	// Executed is, in a row of debits, how much rpcserver's exec.debit
	// counter rose over the measured phase: Calls-NonOK when every debit
	// that ended OK executed exactly once.
	Executed int64 `json:"executed,omitempty"`
	// ConnsOpen is, in a row with idle connections, rpcserver's
	// conns_open gauge right after the measured phase: at least the idle
	// connections and the row's own.
	ConnsOpen int64 `json:"conns_open,omitempty"`
	// ExecError says why a check on the server's counters failed, or why
	// they could not be read: Executed is not Calls-NonOK in a row of
	// debits, ConnsOpen is short of the idle connections in a row with
	// them. Empty when the check passed, and in rows without one.
	ExecError string `json:"exec_error,omitempty"`
	// Restarts is, in rolling-restart, how many servers were restarted
	// during the measured phase (the last restart may end after it), and
	// Drained how many of them drained clean: exit status 0 and, in the
	// server's own log, a DRAIN_DONE with no connection open.
	Restarts int `json:"restarts,omitempty"`
	Drained  int `json:"drained,omitempty"`
	// DrainedResent is, in a rolling row, how many attempts the client
	// re-sent over the measured phase because a drain frame named them
	// as not taken.
	DrainedResent int64 `json:"drained_resent,omitempty"`
}

// CallsPerSec is Calls over Elapsed.
func (s *Sample) CallsPerSec() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Calls) / s.Elapsed.Seconds()
}

// MBPerSec is Bytes over Elapsed, in megabytes (10⁶ bytes) a second.
func (s *Sample) MBPerSec() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Bytes) / 1e6 / s.Elapsed.Seconds()
}

// row is what measure needs to run one row of one round.
type row struct {
	sys System
	// srv is the server the client talks to, or, for a system with a
	// Fleet, fleet the servers.
	srv     *serverproc.Proc
	fleet   *fleet
	work    work
	g       int
	n       int // measured calls
	warmup  int
	round   int
	timeout time.Duration
	profile string // CPU profile path; empty for none
}

// measure runs one row: a fresh client, the warm-up, then n measured calls
// from r.g goroutines. A row whose client or server fails still returns a
// Sample, with every call that did not run counted non-OK.
func measure(ctx context.Context, r row) Sample {
	s := Sample{System: r.sys.Name, G: r.g, Round: r.round, Calls: int64(r.n)}
	failAll := func(err error) Sample {
		s.NonOK, s.FirstError = s.Calls, err.Error()
		return s
	}
	if err := r.alive(); err != nil {
		return failAll(err)
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	if r.sys.Idle > 0 {
		idle, err := holdConns(ctx, r.sys.Idle, func(ctx context.Context) (Client, error) {
			return dialRPCBench(false)(ctx, r.srv.Addr, 1)
		}, getWork{reqs: workload.Requests()})
		defer idle.close()
		if err != nil {
			return failAll(err)
		}
	}
	c, err := r.dial(ctx)
	if err != nil {
		return failAll(err)
	}
	defer c.Close()

	if r.warmup > 0 {
		runCalls(ctx, c, r.work, r.g, r.warmup, nil)
	}
	var retried0 int64
	rc, countsRetries := c.(retryCounter)
	if countsRetries {
		retried0 = rc.Retried()
	}
	var resent0 int64
	dc, countsDrains := c.(drainCounter)
	if countsDrains {
		resent0 = dc.DrainedResent()
	}
	var exec executions
	if r.sys.Debits {
		exec.start(ctx, c)
	}
	lat := make([]time.Duration, r.n)
	runtime.GC() // start every measured phase with the same heap debt
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	stopProfile := func() {}
	if r.profile != "" {
		if stopProfile, err = startProfile(r.profile); err != nil {
			return failAll(err)
		}
	}
	cpu0, cerr0 := selfCPU()
	srv0, serr0 := r.serverCPU()
	var rl *roller
	if r.sys.Restarts {
		rl = r.fleet.roll(ctx)
	}
	start := time.Now()

	res := runCalls(ctx, c, r.work, r.g, r.n, lat)
	// A measured phase of restarts lasts at least one round of them.
	for rl != nil && !rl.rounded() && ctx.Err() == nil {
		more := make([]time.Duration, max(1, r.n/rollingBatch))
		res = res.add(runCalls(ctx, c, r.work, r.g, len(more), more))
		lat = append(lat, more...)
	}

	s.Elapsed = time.Since(start)
	srv1, serr1 := r.serverCPU()
	cpu1, cerr1 := selfCPU()
	stopProfile()
	runtime.ReadMemStats(&m1)
	s.Calls = int64(len(lat))
	if rl != nil {
		var err error
		s.Restarts, s.Drained, err = rl.finish()
		if err != nil {
			s.ExecError = err.Error()
		}
	}
	if countsDrains {
		s.DrainedResent = dc.DrainedResent() - resent0
	}

	s.NonOK, s.Bytes = res.bad, res.bytes
	if res.first != nil {
		s.FirstError = res.first.Error()
	}
	if countsRetries {
		s.Retried = rc.Retried() - retried0
	}
	slices.Sort(lat)
	s.P50, s.P99 = percentile(lat, 50), percentile(lat, 99)
	s.ClientCPU, s.ClientCPUOK = cpu1-cpu0, cerr0 == nil && cerr1 == nil
	s.ServerCPU, s.ServerCPUOK = srv1-srv0, serr0 == nil && serr1 == nil
	s.Mallocs = m1.Mallocs - m0.Mallocs
	if r.sys.Debits {
		s.Executed, s.ExecError = exec.end(ctx, c, s.Calls-s.NonOK)
	}
	if r.sys.Idle > 0 {
		s.ConnsOpen, s.ExecError = idleHeld(ctx, c, r.sys.Idle)
	}
	if s.NonOK == 0 {
		if err := r.alive(); err != nil {
			s.FirstError = err.Error() // answered every call, then died
		}
	}
	return s
}

// errRestartedCPU is the server CPU of a measured phase whose servers
// were restarted: a process that exited took its CPU time with it.
var errRestartedCPU = errors.New("load: the servers were restarted during the phase")

// alive returns an error if the row's server, or any of its fleet, has
// exited.
func (r *row) alive() error {
	if r.fleet != nil {
		return r.fleet.alive()
	}
	return r.srv.Alive()
}

// dial connects a fresh client of the row's server, or of its fleet.
func (r *row) dial(ctx context.Context) (Client, error) {
	if r.fleet != nil {
		return r.sys.DialFleet(ctx, r.fleet.addrs, r.g)
	}
	return r.sys.Dial(ctx, r.srv.Addr, r.g)
}

// serverCPU returns the CPU the row's server, or its fleet, has used.
func (r *row) serverCPU() (time.Duration, error) {
	switch {
	case r.fleet == nil:
		return procCPU(r.srv.PID)
	case r.sys.Restarts:
		return 0, errRestartedCPU
	}
	return r.fleet.cpu()
}

// drainCounter is implemented by clients that count the attempts they
// re-sent because a server drained.
type drainCounter interface {
	DrainedResent() int64
}

// executions reads rpcserver's exec.debit counter before and after a
// measured phase of debits.
type executions struct {
	before int64
	err    error
}

// counterReader is implemented by the clients of the rows of debits.
type counterReader interface {
	Counters(ctx context.Context) (serverapi.Counters, error)
}

func (e *executions) start(ctx context.Context, c Client) {
	cr, ok := c.(counterReader)
	if !ok {
		e.err = fmt.Errorf("load: a %T cannot read the server's counters", c)
		return
	}
	cs, err := cr.Counters(ctx)
	e.before, e.err = cs.ExecDebit, err
}

// end returns how much the counter rose since start, and an error text
// unless that is ok, the number of debits that ended OK.
func (e *executions) end(ctx context.Context, c Client, ok int64) (int64, string) {
	if e.err != nil {
		return 0, fmt.Sprintf("exec.debit before the measured phase: %v", e.err)
	}
	cs, err := c.(counterReader).Counters(ctx)
	if err != nil {
		return 0, fmt.Sprintf("exec.debit after the measured phase: %v", err)
	}
	n := cs.ExecDebit - e.before
	if n != ok {
		return n, fmt.Sprintf("rpcserver executed %d debits for %d that ended OK, want one each", n, ok)
	}
	return n, ""
}

// idleHeld reads rpcserver's conns_open on c and returns it, and an
// error text unless it counts the idle connections and c's own.
func idleHeld(ctx context.Context, c Client, idle int) (int64, string) {
	cr, ok := c.(counterReader)
	if !ok {
		return 0, fmt.Sprintf("load: a %T cannot read the server's counters", c)
	}
	cs, err := cr.Counters(ctx)
	if err != nil {
		return 0, fmt.Sprintf("conns_open after the measured phase: %v", err)
	}
	if cs.ConnsOpen < int64(idle+1) {
		return cs.ConnsOpen, fmt.Sprintf("rpcserver had %d connections open after the measured phase, want at least %d (%d idle and the row's)",
			cs.ConnsOpen, idle+1, idle)
	}
	return cs.ConnsOpen, ""
}

// work is what a row's calls ask, and how an answer is checked.
type work interface {
	// request returns the payload of call i of a phase. It may be called
	// from several goroutines at once.
	request(i int64) []byte
	// check reports whether resp is a right answer to req.
	check(req, resp []byte) error
}

// getWork asks call i for account i mod 64, from payloads built once.
type getWork struct{ reqs [][]byte }

func (w getWork) request(i int64) []byte     { return w.reqs[i%int64(len(w.reqs))] }
func (getWork) check(req, resp []byte) error { return workload.Check(req, resp) }

// debitWork numbers the debits one server gets over the whole run, every
// phase of every row and round, so that no account gets more than
// workload.DebitsPerAccount of them.
type debitWork struct{ seq atomic.Int64 }

func (w *debitWork) request(int64) []byte {
	return workload.AppendDebit(make([]byte, 0, 32), w.seq.Add(1)-1)
}

func (*debitWork) check(req, resp []byte) error { return workload.CheckDebit(req, resp) }

// echoWork asks call i to echo payload i mod 64 of the row's size, and
// checks that the answer equals it.
type echoWork struct{ reqs [][]byte }

func (w echoWork) request(i int64) []byte     { return w.reqs[i%int64(len(w.reqs))] }
func (echoWork) check(req, resp []byte) error { return workload.CheckEcho(req, resp) }

// newWork returns the work of a row of sys.
func newWork(sys System) work {
	switch {
	case sys.Debits:
		return &debitWork{}
	case sys.Echo > 0:
		return echoWork{reqs: workload.EchoRequests(sys.Echo)}
	}
	return getWork{reqs: workload.Requests()}
}

// callsResult is what runCalls counted.
type callsResult struct {
	// bad is how many calls failed or got an answer the work's check
	// refused, first the first such error.
	bad   int64
	first error
	// bytes is the payload bytes, request plus answer, of the calls
	// that were not bad.
	bytes int64
}

// add returns the counts of r and o together.
func (r callsResult) add(o callsResult) callsResult {
	if r.first == nil {
		r.first = o.first
	}
	r.bad += o.bad
	r.bytes += o.bytes
	return r
}

// runCalls makes n calls from g goroutines sharing c, call i asking
// w.request(i). Goroutine k calls on c.Worker(k) when c is a
// workerClient, on c otherwise. When lat is not nil, lat[i] is call i's
// latency.
func runCalls(ctx context.Context, c Client, w work, g, n int, lat []time.Duration) callsResult {
	var (
		next     atomic.Int64
		nbad     atomic.Int64
		nbytes   atomic.Int64
		firstMu  sync.Mutex // guards firstErr
		firstErr error
		wg       sync.WaitGroup
	)
	wc, perWorker := c.(workerClient)
	for k := range g {
		var cl caller = c
		if perWorker {
			cl = wc.Worker(k)
		}
		wg.Go(func() {
			var bytes int64
			defer func() { nbytes.Add(bytes) }()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				req := w.request(i)
				t0 := time.Now()
				resp, err := cl.Call(ctx, req)
				d := time.Since(t0)
				if lat != nil {
					lat[i] = d
				}
				if err == nil {
					err = w.check(req, resp)
				}
				if err != nil {
					nbad.Add(1)
					firstMu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					firstMu.Unlock()
					continue
				}
				bytes += int64(len(req) + len(resp))
			}
		})
	}
	wg.Wait()
	return callsResult{bad: nbad.Load(), first: firstErr, bytes: nbytes.Load()}
}

// heldConns are clients held open, idle, by holdConns.
type heldConns []Client

// holdConnsParallel is how many connections holdConns opens at once.
const holdConnsParallel = 32

// holdConns opens n clients with dial and makes one call of w on each,
// so that each is a connection the server has accepted and served; the
// clients are then left idle until close. On error, the clients opened
// so far are returned too, for the caller to close.
func holdConns(ctx context.Context, n int, dial func(context.Context) (Client, error), w work) (heldConns, error) {
	cs := make(heldConns, n)
	var (
		next   atomic.Int64
		errMu  sync.Mutex // guards errAny
		errAny error
		wg     sync.WaitGroup
	)
	for range min(n, holdConnsParallel) {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				c, err := dial(ctx)
				if err == nil {
					cs[i] = c
					req := w.request(i)
					var resp []byte
					if resp, err = c.Call(ctx, req); err == nil {
						err = w.check(req, resp)
					}
				}
				if err != nil {
					errMu.Lock()
					if errAny == nil {
						errAny = fmt.Errorf("load: idle connection %d of %d: %w", i+1, n, err)
					}
					errMu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return cs, errAny
}

// close closes every client, holdConnsParallel at a time.
func (h heldConns) close() {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(len(h), holdConnsParallel) {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(len(h)) {
					return
				}
				if h[i] != nil {
					h[i].Close()
				}
			}
		})
	}
	wg.Wait()
}

// startProfile starts a CPU profile written to path; stop ends it.
func startProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("load: cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("load: cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
