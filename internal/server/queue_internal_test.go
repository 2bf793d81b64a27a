package server

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestWorkQueueUnderRace: readers claiming and releasing slots without
// the lock, and workers popping queued jobs, never run more than limit
// at once; every job pushed is popped, none lost to a wake-up that came
// between a worker's check and its wait (the test would wait out its
// limit instead). TestReleaseWakesWaitingPop pins the wake-up itself.
func TestWorkQueueUnderRace(t *testing.T) {
	const limit, workers, claimers, jobs = 3, 3, 2, 300
	// hold keeps a slot a moment, so that holders overlap.
	hold := func() {
		for range 3 {
			runtime.Gosched()
		}
	}
	q := newWorkQueue(limit, jobs)
	var running, peak atomic.Int32
	enter := func() {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
	}
	var popped atomic.Int32
	all := make(chan struct{}) // closed by the worker that pops the last job
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				_, ok := q.pop()
				if !ok {
					return
				}
				enter()
				hold()
				running.Add(-1)
				q.release()
				if popped.Add(1) == jobs {
					close(all)
				}
			}
		})
	}
	stop := make(chan struct{})
	var claimed atomic.Int32
	var cwg sync.WaitGroup
	for range claimers {
		cwg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if q.claim() {
					enter()
					claimed.Add(1)
					hold()
					running.Add(-1)
					q.release()
				} else {
					runtime.Gosched()
				}
			}
		})
	}
	// Paced, so that the queue is often empty and claims succeed
	// between jobs.
	for range jobs {
		if !q.push(job{}) {
			t.Fatal("push refused below the queue's size")
		}
		hold()
	}
	select {
	case <-all:
	case <-time.After(10 * time.Second):
	}
	close(stop)
	cwg.Wait()
	q.close()
	wg.Wait()
	if got := popped.Load(); got != jobs {
		t.Errorf("popped %d of %d jobs", got, jobs)
	}
	if p := peak.Load(); p > limit {
		t.Errorf("%d ran at once, want at most %d", p, limit)
	}
	if claimed.Load() == 0 {
		t.Errorf("no claim succeeded: the test did not exercise the lock-free path")
	}
}

// TestReleaseWakesWaitingPop: a worker waiting for a slot, a job queued,
// is woken by the release of the slot a reader claimed, with no other
// push or release to wake it.
func TestReleaseWakesWaitingPop(t *testing.T) {
	q := newWorkQueue(1, 4)
	defer q.close()
	if !q.claim() {
		t.Fatal("claim on an empty queue failed")
	}
	if !q.push(job{arrival: time.Unix(1, 0)}) {
		t.Fatal("push failed")
	}
	got := make(chan job, 1)
	go func() {
		if j, ok := q.pop(); ok {
			got <- j
		}
	}()
	// The worker cannot take the job while the slot is claimed: it
	// waits, and only the release can let it through.
	for {
		q.mu.Lock()
		n := q.sleepers
		q.mu.Unlock()
		if n == 1 {
			break
		}
		runtime.Gosched()
	}
	q.release()
	select {
	case j := <-got:
		if !j.arrival.Equal(time.Unix(1, 0)) {
			t.Errorf("popped another job: %+v", j)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting pop was not woken by the release")
	}
}
