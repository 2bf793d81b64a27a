package client

import (
	"math/rand/v2"
	"testing"
)

// check verifies the heap order and that every waiter knows its index.
func (h deadlines) check(t *testing.T) {
	t.Helper()
	for i, w := range h {
		if w.idx != i {
			t.Fatalf("waiter at %d has idx %d", i, w.idx)
		}
		if i > 0 && h[(i-1)/2].deadline > w.deadline {
			t.Fatalf("heap order broken at %d: parent %d > %d", i, h[(i-1)/2].deadline, w.deadline)
		}
	}
}

// TestDeadlinesHeap pushes and removes at random (the minimum, the last,
// anything in between, as answers and timeouts do) and checks the heap
// after every step against a plain list.
func TestDeadlinesHeap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h deadlines
	in := map[*waiter]bool{}
	for step := range 4000 {
		if len(h) == 0 || r.IntN(3) > 0 {
			w := &waiter{deadline: r.Int64N(1000), idx: -1}
			h.push(w)
			in[w] = true
		} else {
			i := r.IntN(len(h))
			if r.IntN(4) == 0 {
				i = 0
			}
			w := h[i]
			h.remove(i)
			if w.idx != -1 {
				t.Fatalf("step %d: removed waiter has idx %d, want -1", step, w.idx)
			}
			delete(in, w)
		}
		h.check(t)
		if len(h) != len(in) {
			t.Fatalf("step %d: heap holds %d, want %d", step, len(h), len(in))
		}
		if len(h) > 0 {
			for w := range in {
				if w.deadline < h[0].deadline {
					t.Fatalf("step %d: minimum %d, but %d is in the heap", step, h[0].deadline, w.deadline)
				}
			}
		}
	}
}
