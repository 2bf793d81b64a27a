package client

import (
	"sync"
	"time"
)

// epoch anchors mono.
var epoch = time.Now()

// mono returns the monotonic time in nanoseconds since epoch: a clock
// read with no wall-clock part and nothing to allocate.
func mono() int64 { return int64(time.Since(epoch)) }

// monoOf converts t, which must carry a monotonic reading, to mono time
// without reading the clock.
func monoOf(t time.Time) int64 { return int64(t.Sub(epoch)) }

// waiter is what an attempt waits with: the channel its one reply comes
// on, and its place among its connection's deadlines. Pooled, since every
// attempt needs one.
type waiter struct {
	ch       chan reply
	id       uint64 // the attempt's request ID
	deadline int64  // mono time the attempt gives up at
	idx      int    // index in the connection's deadlines; -1 when not in it
}

var waiters = sync.Pool{New: func() any { return &waiter{ch: make(chan reply, 1), idx: -1} }}

// deadlines is a min-heap of a connection's pending attempts by deadline.
// A connection keeps one timer, armed for the earliest, instead of one
// timer per attempt: registering an attempt is a push under the lock the
// connection already takes, and an answered attempt waits on its channel
// alone, with no timer to stop and no select.
type deadlines []*waiter

func (h *deadlines) push(w *waiter) {
	w.idx = len(*h)
	*h = append(*h, w)
	h.up(w.idx)
}

// remove takes out the waiter at index i.
func (h *deadlines) remove(i int) {
	s := *h
	n := len(s) - 1
	w := s[i]
	if i != n {
		s[i] = s[n]
		s[i].idx = i
	}
	s[n] = nil
	*h = s[:n]
	if i != n {
		if !h.down(i) {
			h.up(i)
		}
	}
	w.idx = -1
}

func (h deadlines) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if h[p].deadline <= h[i].deadline {
			return
		}
		h.swap(i, p)
		i = p
	}
}

// down sifts i toward the leaves and reports whether it moved.
func (h deadlines) down(i int) bool {
	start := i
	for {
		l := 2*i + 1
		if l >= len(h) {
			break
		}
		m := l
		if r := l + 1; r < len(h) && h[r].deadline < h[l].deadline {
			m = r
		}
		if h[i].deadline <= h[m].deadline {
			break
		}
		h.swap(i, m)
		i = m
	}
	return i > start
}

func (h deadlines) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}
