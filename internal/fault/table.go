package fault

import (
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// Table holds a transport's active rules, R, in the order they were
// added; the first unspent one that matches a request fires. It knows
// the business methods of the handler the transport serves, and refuses
// a rule that names another: such a rule could never fire.
type Table[R Rule] struct {
	pkg     string   // the transport's package, for a MethodError
	methods []string // the handler's business methods

	mu    sync.Mutex // guards rules
	rules []entry[R]
	// n is len(rules), readable without the lock so that the common
	// case, no rules at all, costs no locking.
	n atomic.Int32
}

type entry[R Rule] struct {
	rule   R
	method string // "" matches every method
	count  int    // uses before it is spent; 0 never spends it
	fired  int
}

// NewTable returns an empty table for the transport of package pkg
// (Grammar.Pkg), serving a handler whose business methods are methods.
func NewTable[R Rule](pkg string, methods []string) *Table[R] {
	return &Table[R]{pkg: pkg, methods: slices.Clone(methods)}
}

// Add appends r, or refuses it with a *MethodError if it names a method
// the handler does not serve.
func (t *Table[R]) Add(r R) error {
	if err := checkMethod(t.pkg, r, t.methods); err != nil {
		return err
	}
	method, count := r.Scope()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rules = append(t.rules, entry[R]{rule: r, method: method, count: count})
	t.n.Store(int32(len(t.rules)))
	return nil
}

// Set is Add for a rule set while the transport serves (its AddFault,
// ctl.fault): a rule it adds is logged to lg as FAULT_SET.
func (t *Table[R]) Set(r R, lg *slog.Logger) error {
	if err := t.Add(r); err != nil {
		return err
	}
	lg.Info(serverapi.EventFaultSet, serverapi.KeyFault, r.String())
	return nil
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
