package main

import (
	"context"
	"sync"
	"time"

	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/scenario"
)

// ran is one scenario run's outcome, as a batch records it.
type ran struct {
	line report.Line
	// skipped: a missing prerequisite stood in for the run (prereqs).
	skipped  bool
	timedOut bool
	started  time.Time
	took     time.Duration
	// before are -v's log sizes from before it ran.
	before map[string]int64
}

// scheduler runs a batch's n scenario runs, at most p at a time, and
// hands their outcomes over in run order, whatever order they end in, so
// that the output and the evidence read the same however many ran at
// once.
//
// Runs of one pool may run at the same time, at most p of them (more for
// keepalive's: poolWidth); a run whose pool is "" runs by itself. A run starts once the runs in progress are all of its pool
// (none, for a run alone) and fewer than p: so a run alone waits for
// every run before it to end, and none starts until it has ended. Runs
// start in run order. With p = 1 the next run starts only once the batch
// has taken this one's outcome (done), so that a batch that stops after a
// failure (--failfast) has started nothing after it.
type scheduler struct {
	outs []chan ran
	p    int
	pool func(int) string

	mu sync.Mutex // guards running and current; cond waits on it
	// cond is signalled when a run ends, is taken, or the batch stops
	// (its context ends).
	cond *sync.Cond
	// running counts the runs in progress (with p = 1, until taken);
	// current is their pool.
	running int
	current string

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startScheduler starts dispatching runs 0..n-1; pool(i) is run i's pool,
// and run(ctx, i) is run i, under a context that ends with ctx or stop.
func startScheduler(ctx context.Context, n, p int, pool func(int) string, run func(context.Context, int) ran) *scheduler {
	ctx, cancel := context.WithCancel(ctx)
	s := &scheduler{outs: make([]chan ran, n), p: max(p, 1), pool: pool, cancel: cancel}
	s.cond = sync.NewCond(&s.mu)
	for i := range s.outs {
		s.outs[i] = make(chan ran, 1)
	}
	// A context that ends wakes a dispatch waiting to start a run.
	go func() {
		<-ctx.Done()
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
	}()
	s.wg.Add(1)
	go s.dispatch(ctx, run)
	return s
}

// keepaliveWidth is how many keepalive scenarios may run at once with -p
// above 1, whatever -p is: they wait seconds on keepalive timers with nothing to do (a
// dozen seconds each, a tenth of the grpc group's time at -p 2), each on
// a test host of its own where it has one, so more of them add no load
// that could move those timers. -p 1 still runs them one at a time.
const keepaliveWidth = 8

// poolWidth is how many runs of pool may run at once under -p p.
func poolWidth(pool string, p int) int {
	if pool == scenario.PoolKeepalive && p > 1 {
		return keepaliveWidth
	}
	return p
}

// admit waits until run i may start and counts it as running; false when
// the batch stopped (ctx ended) first.
func (s *scheduler) admit(ctx context.Context, i int) bool {
	g := s.pool(i)
	s.mu.Lock()
	defer s.mu.Unlock()
	for ctx.Err() == nil && s.running > 0 && (s.running >= poolWidth(g, s.p) || g == "" || g != s.current) {
		s.cond.Wait()
	}
	if ctx.Err() != nil {
		return false
	}
	s.running++
	s.current = g
	return true
}

// release counts one run fewer in progress.
func (s *scheduler) release() {
	s.mu.Lock()
	s.running--
	s.cond.Broadcast()
	s.mu.Unlock()
}

func (s *scheduler) dispatch(ctx context.Context, run func(context.Context, int) ran) {
	defer s.wg.Done()
	for i := range s.outs {
		if !s.admit(ctx, i) {
			// Runs not started have no outcome: closing says so.
			for _, out := range s.outs[i:] {
				close(out)
			}
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.outs[i] <- run(ctx, i)
			if s.p > 1 {
				s.release()
			}
		}()
	}
}

// next returns run i's outcome once it has ended, and false when it was
// never started. Runs are taken in order.
func (s *scheduler) next(i int) (ran, bool) {
	r, ok := <-s.outs[i]
	return r, ok
}

// done says the batch has taken run i's outcome: with p = 1, the next
// run may start.
func (s *scheduler) done(int) {
	if s.p == 1 {
		s.release()
	}
}

// stop ends the runs in progress (their context is cancelled), starts no
// more, and waits for every one to end. It may be called more than once.
func (s *scheduler) stop() {
	s.cancel()
	s.wg.Wait()
}
