package main

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/scenario"
)

// schedProbe records, as runs start and end, how many ran at once and
// whether a run ever had company of another pool.
type schedProbe struct {
	mu               sync.Mutex // guards the fields below
	running          map[int]string
	most             int
	crowded          []string
	startedAfterStop bool
	stopped          bool
}

func (p *schedProbe) enter(i int, pool string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running == nil {
		p.running = map[int]string{}
	}
	for j, g := range p.running {
		if g == "" || pool == "" || g != pool {
			p.crowded = append(p.crowded, fmt.Sprintf("%d(%q) beside %d(%q)", i, pool, j, g))
		}
	}
	p.running[i] = pool
	p.most = max(p.most, len(p.running))
	if p.stopped {
		p.startedAfterStop = true
	}
}

func (p *schedProbe) leave(i int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.running, i)
}

// TestScheduler: runs end in any order but are handed over in run order;
// no more than p run at once, and at least two do when p = 2 and they
// may; a run never has company of another pool, and one of no pool none
// at all.
func TestScheduler(t *testing.T) {
	const n = 60
	pool := func(i int) string {
		switch {
		case i%7 == 3:
			return ""
		case i/10%2 == 1:
			return "b"
		}
		return "a"
	}
	for _, p := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("p=%d", p), func(t *testing.T) {
			var probe schedProbe
			s := startScheduler(context.Background(), n, p, pool, func(_ context.Context, i int) ran {
				probe.enter(i, pool(i))
				// Later runs end sooner: the order they end in is not
				// the run order.
				time.Sleep(time.Duration(n-i) * 100 * time.Microsecond)
				probe.leave(i)
				return ran{line: report.Line{Name: fmt.Sprint(i)}}
			})
			defer s.stop()
			for i := range n {
				r, ok := s.next(i)
				if !ok || r.line.Name != fmt.Sprint(i) {
					t.Fatalf("run %d: got %q, %v; want its own outcome", i, r.line.Name, ok)
				}
				s.done(i)
			}
			s.stop()
			if probe.most > p || (p > 1 && probe.most < 2) {
				t.Errorf("at most %d ran at once, want at most %d (and 2 or more when allowed)", probe.most, p)
			}
			if len(probe.crowded) > 0 {
				t.Errorf("runs had company they may not have: %v", probe.crowded)
			}
		})
	}
}

// TestSchedulerKeepaliveWide: keepalive scenarios, which wait on timers,
// run keepaliveWidth at once under -p 2, and one at a time under -p 1;
// a run of another pool after them still waits for all of them.
func TestSchedulerKeepaliveWide(t *testing.T) {
	const n = 3 * keepaliveWidth
	pool := func(i int) string {
		if i == n-1 {
			return ""
		}
		return scenario.PoolKeepalive
	}
	for _, tt := range []struct{ p, most int }{{1, 1}, {2, keepaliveWidth}, {2 * keepaliveWidth, keepaliveWidth}} {
		t.Run(fmt.Sprintf("p=%d", tt.p), func(t *testing.T) {
			var probe schedProbe
			all := make(chan struct{})
			var started sync.WaitGroup
			started.Add(keepaliveWidth)
			s := startScheduler(context.Background(), n, tt.p, pool, func(_ context.Context, i int) ran {
				probe.enter(i, pool(i))
				if tt.p > 1 && i < keepaliveWidth {
					// The first keepaliveWidth end only once all of them
					// have started: they must run at once.
					started.Done()
					<-all
				}
				time.Sleep(time.Millisecond)
				probe.leave(i)
				return ran{line: report.Line{Name: fmt.Sprint(i)}}
			})
			defer s.stop()
			if tt.p > 1 {
				ready := make(chan struct{})
				go func() { started.Wait(); close(ready) }()
				select {
				case <-ready:
				case <-time.After(10 * time.Second):
					t.Errorf("%d keepalive runs never ran at once", keepaliveWidth)
				}
				close(all)
			}
			for i := range n {
				if _, ok := s.next(i); !ok {
					t.Fatalf("run %d never ran", i)
				}
				s.done(i)
			}
			s.stop()
			if probe.most != tt.most {
				t.Errorf("at most %d ran at once, want %d", probe.most, tt.most)
			}
			if len(probe.crowded) > 0 {
				t.Errorf("runs had company they may not have: %v", probe.crowded)
			}
		})
	}
}

// TestSchedulerOneAtATime: with p = 1 the next run starts only once the
// batch has taken this one's outcome, so that stopping after a failure
// starts nothing more.
func TestSchedulerOneAtATime(t *testing.T) {
	var probe schedProbe
	s := startScheduler(context.Background(), 5, 1, func(int) string { return "a" }, func(_ context.Context, i int) ran {
		probe.enter(i, "a")
		probe.leave(i)
		return ran{line: report.Line{Name: fmt.Sprint(i)}}
	})
	if _, ok := s.next(0); !ok {
		t.Fatal("run 0 never ran")
	}
	probe.mu.Lock()
	probe.stopped = true
	probe.mu.Unlock()
	s.stop() // without done(0): run 1 must never start
	if probe.startedAfterStop {
		t.Errorf("run 1 started before the batch took run 0's outcome")
	}
	for i := 1; i < 5; i++ {
		if _, ok := s.next(i); ok {
			t.Errorf("run %d has an outcome after stop, want none", i)
		}
	}
}

// TestSchedulerStop: stop cancels the runs in progress and waits for
// them; the runs never started report no outcome.
func TestSchedulerStop(t *testing.T) {
	started := make(chan struct{}, 2)
	s := startScheduler(context.Background(), 10, 2, func(int) string { return "a" }, func(ctx context.Context, i int) ran {
		started <- struct{}{}
		<-ctx.Done()
		return ran{line: report.Line{Name: fmt.Sprint(i), Verdict: report.Interrupted}}
	})
	<-started
	<-started
	s.stop()
	got := 0
	for i := range 10 {
		if r, ok := s.next(i); ok {
			got++
			if r.line.Verdict != report.Interrupted {
				t.Errorf("run %d: %v, want INTERRUPTED", i, r.line.Verdict)
			}
		}
	}
	if got != 2 {
		t.Errorf("%d runs have an outcome, want the 2 that were running", got)
	}
}
