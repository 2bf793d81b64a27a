package server

import (
	"sync"
	"sync/atomic"
)

// workQueue holds business requests waiting to execute and counts the
// ones executing, so that at most limit execute at once whoever runs them:
// a worker, or a connection's reader for a request that cannot block.
//
// A reader claims and releases a slot without the lock, with atomics
// only, once per batch of requests it runs itself (conn.runSlot). The
// lock still orders everything a waiting pop depends on: jobs change
// under it, and a release that may free a slot for a waiting job
// signals under it.
type workQueue struct {
	mu   sync.Mutex // guards jobs; closed and waiting change under it
	cond sync.Cond  // signalled when a job or a slot may have become available
	jobs []job      // FIFO
	// waiting is len(jobs), for claim and release to read without mu.
	waiting atomic.Int32
	// busy counts requests executing or claimed by a worker; claim and
	// pop raise it only from below limit (compare-and-swap).
	busy atomic.Int32
	// sleepers counts pops waiting on cond; guarded by mu. Tests read it
	// to know a worker waits.
	sleepers int
	limit    int32 // at most this many busy
	size     int   // at most this many jobs waiting
	closed   atomic.Bool
}

func newWorkQueue(limit, size int) *workQueue {
	q := &workQueue{limit: int32(limit), size: size}
	q.cond.L = &q.mu
	return q
}

// claim takes a slot for a request its caller will run itself. It
// succeeds only when nothing is waiting, so it never overtakes a request
// queued before it. The caller must call release when done.
func (q *workQueue) claim() bool {
	if q.closed.Load() || q.waiting.Load() > 0 {
		return false
	}
	return q.take()
}

// take raises busy by one if it is below limit, and reports whether it
// did.
func (q *workQueue) take() bool {
	for {
		b := q.busy.Load()
		if b >= q.limit {
			return false
		}
		if q.busy.CompareAndSwap(b, b+1) {
			return true
		}
	}
}

// push queues j; it reports false when the queue is full or closed.
func (q *workQueue) push(j job) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed.Load() || len(q.jobs) >= q.size {
		return false
	}
	q.jobs = append(q.jobs, j)
	q.waiting.Store(int32(len(q.jobs)))
	q.cond.Signal()
	return true
}

// pop waits for a job and a free slot, claims the slot and returns the
// job; ok is false once the queue is closed. The caller must call release
// when done.
func (q *workQueue) pop() (j job, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for !q.closed.Load() && (len(q.jobs) == 0 || !q.take()) {
		// A slot freed after take failed is signalled under mu, so
		// not before this Wait has let go of it.
		q.sleepers++
		q.cond.Wait()
		q.sleepers--
	}
	if q.closed.Load() {
		return job{}, false
	}
	j = q.jobs[0]
	q.jobs[0] = job{}
	q.jobs = q.jobs[1:]
	q.waiting.Store(int32(len(q.jobs)))
	return j, true
}

// cancel marks the jobs of c with request ID id still waiting in the
// queue, so that the worker that takes one drops it unexecuted; it
// reports whether there was one. It scans the queue, which costs nothing
// on the path of requests that are never canceled.
func (q *workQueue) cancel(c *conn, id uint64) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	found := false
	for i := range q.jobs {
		if j := &q.jobs[i]; j.c == c && j.f.ID == id {
			j.canceled = true
			found = true
		}
	}
	return found
}

// release frees the slot taken by claim or pop.
func (q *workQueue) release() {
	q.busy.Add(-1)
	// A pop waits for a slot only while a job waits: with none, the
	// push that queues one signals.
	if q.waiting.Load() > 0 {
		q.mu.Lock()
		q.cond.Signal()
		q.mu.Unlock()
	}
}

// close wakes every waiting pop, which then returns false.
func (q *workQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed.Store(true)
	q.cond.Broadcast()
}
