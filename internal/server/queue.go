package server

import "sync"

// workQueue holds business requests waiting to execute and counts the
// ones executing, so that at most limit execute at once whoever runs them:
// a worker, or a connection's reader for a request that cannot block.
type workQueue struct {
	mu     sync.Mutex // guards jobs, busy, closed
	cond   sync.Cond  // signalled when a job or a slot may have become available
	jobs   []job      // FIFO
	busy   int        // requests executing or claimed by a worker
	limit  int        // at most this many busy
	size   int        // at most this many jobs waiting
	closed bool
}

func newWorkQueue(limit, size int) *workQueue {
	q := &workQueue{limit: limit, size: size}
	q.cond.L = &q.mu
	return q
}

// claim takes a slot for a request its caller will run itself. It
// succeeds only when nothing is waiting, so it never overtakes a queued
// request. The caller must call release when done.
func (q *workQueue) claim() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || len(q.jobs) > 0 || q.busy >= q.limit {
		return false
	}
	q.busy++
	return true
}

// push queues j; it reports false when the queue is full or closed.
func (q *workQueue) push(j job) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || len(q.jobs) >= q.size {
		return false
	}
	q.jobs = append(q.jobs, j)
	q.cond.Signal()
	return true
}

// pop waits for a job and a free slot, claims the slot and returns the
// job; ok is false once the queue is closed. The caller must call release
// when done.
func (q *workQueue) pop() (j job, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for !q.closed && (len(q.jobs) == 0 || q.busy >= q.limit) {
		q.cond.Wait()
	}
	if q.closed {
		return job{}, false
	}
	j = q.jobs[0]
	q.jobs[0] = job{}
	q.jobs = q.jobs[1:]
	q.busy++
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
	q.mu.Lock()
	defer q.mu.Unlock()
	q.busy--
	if len(q.jobs) > 0 {
		q.cond.Signal()
	}
}

// close wakes every waiting pop, which then returns false.
func (q *workQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.cond.Broadcast()
}
