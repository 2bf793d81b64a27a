package main

import (
	"context"
	"sync"
	"time"

	"github.com/rpcbench/rpcbench/internal/report"
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
// A run for which alone(i) is true runs by itself: it starts once every
// run before it has ended, and none starts until it has ended. With p = 1
// the next run starts only once the batch has taken this one's outcome
// (done), so that a batch that stops after a failure (--failfast) has
// started nothing after it.
type scheduler struct {
	outs []chan ran
	// slots holds a token per run in progress; a run alone holds p.
	slots  chan struct{}
	p      int
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// weights are the tokens each run holds, for done to give back when
	// p = 1.
	weights []int
}

// startScheduler starts dispatching runs 0..n-1; run(ctx, i) is run i,
// under a context that ends with ctx or stop.
func startScheduler(ctx context.Context, n, p int, alone func(int) bool, run func(context.Context, int) ran) *scheduler {
	p = max(p, 1)
	ctx, cancel := context.WithCancel(ctx)
	s := &scheduler{outs: make([]chan ran, n), slots: make(chan struct{}, p), p: p, cancel: cancel, weights: make([]int, n)}
	for i := range s.outs {
		s.outs[i] = make(chan ran, 1)
	}
	s.wg.Add(1)
	go s.dispatch(ctx, alone, run)
	return s
}

func (s *scheduler) dispatch(ctx context.Context, alone func(int) bool, run func(context.Context, int) ran) {
	defer s.wg.Done()
	for i := range s.outs {
		w := 1
		if alone(i) {
			w = s.p
		}
		for held := 0; held < w; held++ {
			select {
			case s.slots <- struct{}{}:
			case <-ctx.Done():
				for range held {
					<-s.slots
				}
				// Runs not started have no outcome: closing says so.
				for _, out := range s.outs[i:] {
					close(out)
				}
				return
			}
		}
		s.weights[i] = w
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.outs[i] <- run(ctx, i)
			if s.p > 1 {
				for range w {
					<-s.slots
				}
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
func (s *scheduler) done(i int) {
	if s.p == 1 {
		for range s.weights[i] {
			<-s.slots
		}
	}
}

// stop ends the runs in progress (their context is cancelled), starts no
// more, and waits for every one to end. It may be called more than once.
func (s *scheduler) stop() {
	s.cancel()
	s.wg.Wait()
}
