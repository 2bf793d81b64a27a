package fault

import (
	"sync"
	"sync/atomic"
)

// Table holds a transport's active rules, R, in the order they were
// added; the first unspent one that matches a request fires. Its zero
// value is empty and ready.
type Table[R any] struct {
	mu    sync.Mutex // guards rules
	rules []entry[R]
	// n is len(rules), readable without the lock so that the common
	// case, no rules at all, costs no locking.
	n atomic.Int32
}

type entry[R any] struct {
	rule   R
	method string // "" matches every method
	count  int    // uses before it is spent; 0 never spends it
	fired  int
}

// Add appends r, which fires for method ("" for every one) on count
// requests (0 for every one): its Spec's Method and Count.
func (t *Table[R]) Add(r R, method string, count int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rules = append(t.rules, entry[R]{rule: r, method: method, count: count})
	t.n.Store(int32(len(t.rules)))
}

// Empty reports whether no rule is configured, spent or not.
func (t *Table[R]) Empty() bool { return t.n.Load() == 0 }

// Clear removes every rule.
func (t *Table[R]) Clear() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rules = nil
	t.n.Store(0)
}

// Take returns the first unspent rule for method that fits accepts (nil
// accepts every rule), if any, and spends one use of it.
func (t *Table[R]) Take(method string, fits func(R) bool) (R, bool) {
	var none R
	if t.Empty() {
		return none, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range t.rules {
		e := &t.rules[i]
		if e.method != "" && e.method != method || fits != nil && !fits(e.rule) {
			continue
		}
		if e.count > 0 && e.fired >= e.count {
			continue
		}
		e.fired++
		return e.rule, true
	}
	return none, false
}
