package load

import (
	"context"
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
	// Executed is, in a row of debits, how much rpcserver's exec.debit
	// counter rose over the measured phase: Calls-NonOK when every debit
	// that ended OK executed exactly once. ExecError says why it is not
	// that, or why it could not be read; empty when it is, and in a row
	// of gets.
	Executed  int64  `json:"executed,omitempty"`
	ExecError string `json:"exec_error,omitempty"`
}

// CallsPerSec is Calls over Elapsed.
func (s *Sample) CallsPerSec() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Calls) / s.Elapsed.Seconds()
}

// row is what measure needs to run one row of one round.
type row struct {
	sys     System
	srv     *serverproc.Proc
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
	if err := r.srv.Alive(); err != nil {
		return failAll(err)
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	c, err := r.sys.Dial(ctx, r.srv.Addr, r.g)
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
	srv0, serr0 := procCPU(r.srv.PID)
	start := time.Now()

	bad, first := runCalls(ctx, c, r.work, r.g, r.n, lat)

	s.Elapsed = time.Since(start)
	srv1, serr1 := procCPU(r.srv.PID)
	cpu1, cerr1 := selfCPU()
	stopProfile()
	runtime.ReadMemStats(&m1)

	s.NonOK = bad
	if first != nil {
		s.FirstError = first.Error()
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
	if s.NonOK == 0 {
		if err := r.srv.Alive(); err != nil {
			s.FirstError = err.Error() // answered every call, then died
		}
	}
	return s
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

// runCalls makes n calls from g goroutines sharing c, call i asking
// w.request(i). When lat is not nil, lat[i] is call i's latency. It
// returns how many calls failed or got an answer w.check refused, and the
// first such error.
func runCalls(ctx context.Context, c Client, w work, g, n int, lat []time.Duration) (bad int64, first error) {
	var (
		next     atomic.Int64
		nbad     atomic.Int64
		firstMu  sync.Mutex // guards firstErr
		firstErr error
		wg       sync.WaitGroup
	)
	for range g {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				req := w.request(i)
				t0 := time.Now()
				resp, err := c.Call(ctx, req)
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
				}
			}
		})
	}
	wg.Wait()
	return nbad.Load(), firstErr
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
