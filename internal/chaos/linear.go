package chaos

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/rpcbench/rpcbench/internal/report"
)

// The linearizability check runs porcupine on each account's history
// against the bank's sequential specification. An account's state is its
// balance and exec, the number of debits it has executed. A get observes
// the state; an ok debit of X applies only if the balance is at least X and
// observes the state it leaves, (balance-X, exec+1). A replayed keyed debit
// carries its one execution's answer, and that execution happened within
// the replaying call, so it is checked as an ok debit. Failed operations
// had no effect and are left out; so are unknown gets.
//
// An unknown debit may have taken effect at any point after its
// invocation, or never. The textbook encoding gives it an interval that
// ends after every other operation and a step that either applies it or
// not; then every pending unknown debit is concurrent with everything
// after it, and when a violation follows a burst of them porcupine tries
// every subset of the burst before it can say so: 24 unknown debits and
// two gets take longer than any timeout (TestLinearBurstOfUnknowns takes
// a millisecond). Instead the state carries a pool: the unknown debits
// invoked so far that have not taken effect. An unknown debit is a point,
// at its invocation, where it joins the pool; each get or ok debit, when
// linearized, may first apply any subset of the pool whose count and sum
// explain the exec and balance it observes. Because every get and ok
// debit observes the whole state, an effect applied between two of them
// is indistinguishable from one applied just before the second, and one
// that is never observed needs no place at all; so the two encodings
// accept exactly the same histories (TestLinearMatchesTextbookEncoding
// compares them on random histories). Which subset is applied is the
// model's only nondeterminism; when every debit has the same amount, as
// in the workload, it has none.

// LinearResult is the verdict of the linearizability check.
type LinearResult struct {
	// Verdict is report.Fail if some account's history is not
	// linearizable, else report.Unknown if porcupine gave up on some
	// account, else report.Pass.
	Verdict report.Verdict
	// Accounts is how many accounts had operations to check.
	Accounts int
	// Ops is how many operations were given to porcupine: ok ones and
	// unknown debits. Failed operations had no effect and unknown gets
	// none that could be seen, so they are left out.
	Ops int
	// Failed names the accounts whose history is not linearizable, sorted.
	Failed []string
	// TimedOut names the accounts porcupine gave up on, sorted.
	TimedOut []string

	// Window is, for Failed[0], the shortest stretch of its history found
	// that is not linearizable on its own, from WindowFrom to WindowTo (ns
	// since the run's start). It is checked as a history of its own:
	//   - At WindowFrom 0 the account holds the initial balance and exec 0.
	//     At a later WindowFrom its state is free: any balance and exec a
	//     real account could hold (exec >= 0, balance + exec <= the initial
	//     balance, balance = the initial balance when exec = 0).
	//   - Ok operations invoked at or after WindowFrom and complete by
	//     WindowTo are checked with their answers.
	//   - Ok debits in flight at either end (invoked before WindowFrom and
	//     complete at or after it, or complete after WindowTo), and every
	//     unknown debit invoked by WindowTo, however long before
	//     WindowFrom, are checked as unknown: each may take effect at any
	//     point after its invocation, or never.
	//   - Gets in flight at either end are left out, and so is everything
	//     complete before WindowFrom or invoked after WindowTo.
	// Window lists the ops so checked, as recorded, by invocation.
	//
	// An operation is left out or made unknown only where it could have
	// had its effect outside the window, so the account's history is not
	// linearizable if its window is not (TestLinearWindowSound). WindowTo
	// is the earliest completion at which the history from the start is
	// not linearizable, and WindowFrom the latest invocation (or 0) from
	// which the window to WindowTo still is not; both are found by
	// bisection with the check's timeout again as the budget, and a probe
	// that runs out of time counts as linearizable, so the window can be
	// longer than the shortest, never unsound.
	Window               []Op
	WindowFrom, WindowTo int64
}

// CheckLinearizable checks each account's history in ops against the
// bank's sequential specification, every account starting with
// initialBalance and exec 0. It partitions by Op.Account and reads
// Op.Balance and Op.Exec; an answer naming another account is not this
// check's business (rightCaller's).
//
// Accounts are checked concurrently, each for at most timeout; then the
// window of the first failed account is searched for at most timeout
// more. A timeout <= 0 means no limit, and the call may then run for as
// long as porcupine's search does, which is exponential at worst.
func CheckLinearizable(ops []Op, initialBalance int64, timeout time.Duration) LinearResult {
	accts := splitAccounts(ops, initialBalance)
	verdicts := make([]porcupine.CheckResult, len(accts))
	var wg sync.WaitGroup
	for i, a := range accts {
		wg.Go(func() { verdicts[i] = a.check(0, math.MaxInt64, timeout) })
	}
	wg.Wait()

	res := LinearResult{Verdict: report.Pass, Accounts: len(accts)}
	var first *account
	for i, a := range accts {
		res.Ops += len(a.ops)
		switch verdicts[i] {
		case porcupine.Illegal:
			res.Failed = append(res.Failed, a.name)
			if first == nil {
				first = a
			}
		case porcupine.Unknown:
			res.TimedOut = append(res.TimedOut, a.name)
		}
	}
	switch {
	case first != nil:
		res.Verdict = report.Fail
		res.WindowFrom, res.WindowTo, res.Window = first.window(timeout)
	case len(res.TimedOut) > 0:
		res.Verdict = report.Unknown
	}
	return res
}

// visualizeTimeout bounds VisualizeAccount's search. When it runs out, the
// page shows the partial linearizations found so far.
const visualizeTimeout = 20 * time.Second

// VisualizeAccount writes porcupine's HTML visualization of account's
// history in ops, checked as CheckLinearizable checks it, to w: each
// operation, and the longest partial linearizations porcupine found with
// the state after each step. An unknown debit is drawn as a point at its
// invocation, where it joins the pool of pending debits the state shows.
func VisualizeAccount(w io.Writer, ops []Op, account string, initialBalance int64) error {
	var mine []Op
	for _, op := range ops {
		if op.Account == account {
			mine = append(mine, op)
		}
	}
	accts := splitAccounts(mine, initialBalance)
	if len(accts) == 0 {
		return fmt.Errorf("chaos: account %q has no operations to check", account)
	}
	a := accts[0]
	model := a.model(false)
	_, info := porcupine.CheckOperationsVerbose(model, a.view(0, math.MaxInt64), visualizeTimeout)
	if err := porcupine.Visualize(model, info, w); err != nil {
		return fmt.Errorf("chaos: visualize %s: %w", account, err)
	}
	return nil
}

// account is one account's share of the history.
type account struct {
	name    string
	initial int64
	// ops are the ok operations and unknown debits, by invocation.
	ops []Op
	// amounts are the distinct amounts of the account's debits, which
	// index a pool's counts.
	amounts []int64
}

// splitAccounts returns the accounts with operations to check, by name.
func splitAccounts(ops []Op, initial int64) []*account {
	byName := map[string]*account{}
	for _, op := range ops {
		switch {
		case op.Outcome == OutcomeOK:
		case op.Outcome == OutcomeUnknown && op.Kind != OpGet:
		default:
			continue
		}
		a := byName[op.Account]
		if a == nil {
			a = &account{name: op.Account, initial: initial}
			byName[op.Account] = a
		}
		a.ops = append(a.ops, op)
		if op.Kind != OpGet && !slices.Contains(a.amounts, op.Amount) {
			a.amounts = append(a.amounts, op.Amount)
		}
	}
	accts := make([]*account, 0, len(byName))
	for _, a := range byName {
		slices.SortStableFunc(a.ops, func(x, y Op) int {
			if x.Invoke != y.Invoke {
				return cmp.Compare(x.Invoke, y.Invoke)
			}
			return cmp.Compare(x.Client, y.Client)
		})
		slices.Sort(a.amounts)
		accts = append(accts, a)
	}
	slices.SortFunc(accts, func(x, y *account) int { return strings.Compare(x.name, y.name) })
	return accts
}

// check runs porcupine on the window [from, to] of the account's history
// (see LinearResult.Window) for at most timeout; <= 0 is no limit.
func (a *account) check(from, to int64, timeout time.Duration) porcupine.CheckResult {
	return porcupine.CheckOperationsTimeout(a.model(from > 0), a.view(from, to), max(timeout, 0))
}

// window shrinks the account's history, which is not linearizable, to the
// window LinearResult.Window describes, spending at most budget (<= 0: no
// limit) on the search.
func (a *account) window(budget time.Duration) (from, to int64, ops []Op) {
	deadline := time.Now().Add(budget)
	illegal := func(from, to int64) bool {
		var t time.Duration
		if budget > 0 {
			if t = time.Until(deadline); t <= 0 {
				return false
			}
		}
		return a.check(from, to, t) == porcupine.Illegal
	}

	var ends []int64
	for _, op := range a.ops {
		if op.Outcome == OutcomeOK {
			ends = append(ends, op.Complete)
		}
	}
	slices.Sort(ends)
	ends = slices.Compact(ends)
	if len(ends) == 0 {
		return 0, math.MaxInt64, a.ops // cannot happen: nothing observed is legal
	}
	// The whole history is illegal, and it observes nothing after the
	// last completion, so the window ending there is too.
	lo, hi := 0, len(ends)-1
	for lo < hi {
		if mid := (lo + hi) / 2; illegal(0, ends[mid]) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	to = ends[hi]

	var starts []int64
	for _, op := range a.ops {
		if op.Outcome == OutcomeOK && op.Invoke > 0 && op.Complete <= to {
			starts = append(starts, op.Invoke)
		}
	}
	slices.Sort(starts)
	starts = slices.Compact(starts)
	// Starting later only frees more of the state, so once a start is
	// legal every later one is: find the last illegal one. Index -1 is
	// the run's start, from the initial state, known to be illegal;
	// index len(starts) stands for legal.
	fails, passes := -1, len(starts)
	for passes-fails > 1 {
		if mid := (fails + passes) / 2; illegal(starts[mid], to) {
			fails = mid
		} else {
			passes = mid
		}
	}
	if fails >= 0 {
		from = starts[fails]
	}
	_, ops = a.viewOps(from, to)
	return from, to, ops
}

// view returns the porcupine history of the window [from, to]: see
// LinearResult.Window for what it keeps and what it makes unknown.
func (a *account) view(from, to int64) []porcupine.Operation {
	hist, _ := a.viewOps(from, to)
	return hist
}

// viewOps returns view's history and the recorded operations it holds.
//
// Unknown debits invoked at the same instant are one porcupine operation
// that adds them all to the pool: joining the pool commutes, so nothing
// is lost, and porcupine is spared trying every subset of them before
// every operation that overlaps the instant.
func (a *account) viewOps(from, to int64) ([]porcupine.Operation, []Op) {
	var hist []porcupine.Operation
	var kept []Op
	joins := map[int64]int{} // invocation -> index in hist of its unknown debits
	for i := range a.ops {
		op := &a.ops[i]
		if op.Invoke > to {
			break
		}
		in := linInput{kind: linGet}
		if op.Kind != OpGet {
			in.kind, in.amounts = linDebit, []int64{op.Amount}
		}
		switch {
		case op.Outcome == OutcomeUnknown:
			in.kind = linUnknown
		case op.Complete < from:
			continue // took effect before the window: in its starting state
		case op.Invoke < from || op.Complete > to:
			if in.kind == linGet {
				continue
			}
			in.kind = linUnknown
		}
		kept = append(kept, *op)
		if j, ok := joins[op.Invoke]; ok && in.kind == linUnknown {
			p := &hist[j]
			in := p.Input.(linInput)
			in.amounts = append(in.amounts, op.Amount)
			p.Input, p.Metadata = in, append(p.Metadata.([]*Op), op)
			continue
		}
		p := porcupine.Operation{ClientId: op.Client, Input: in, Call: op.Invoke, Return: op.Invoke, Metadata: []*Op{op}}
		if in.kind == linUnknown {
			joins[op.Invoke] = len(hist)
		} else {
			p.Output, p.Return = linOutput{balance: op.Balance, exec: op.Exec}, op.Complete
		}
		hist = append(hist, p)
	}
	return hist, kept
}

// linKind is what an operation is to the model.
type linKind uint8

const (
	linGet     linKind = iota // an ok get: observes the state
	linDebit                  // an ok debit: applies, and observes the state it leaves
	linUnknown                // unknown debits invoked at one instant: join the pool
)

type linInput struct {
	kind linKind
	// amounts is a debit's amount; the amounts of unknown debits.
	amounts []int64
}

// linOutput is an ok operation's answer; an unknown debit has none.
type linOutput struct {
	balance, exec int64
}

// linState is an account's state to the model.
type linState struct {
	// free is true until a window that starts with a free state has
	// observed it; balance and exec are then meaningless.
	free          bool
	balance, exec int64
	// pool counts the unknown debits that joined and have not taken
	// effect, by amount: a little-endian uint32 per account.amounts
	// entry, as a string so that states compare with ==.
	pool string
}

var linSeed = maphash.MakeSeed()

// model returns the account's model, starting from a free state if free
// and from the initial balance otherwise.
func (a *account) model(free bool) porcupine.Model {
	init := linState{free: free, pool: string(make([]byte, 4*len(a.amounts)))}
	if !free {
		init.balance = a.initial
	}
	nm := porcupine.NondeterministicModel{
		Init: func() []any { return []any{init} },
		Step: a.step,
		Hash: func(s any) uint64 { return maphash.Comparable(linSeed, s.(linState)) },
		DescribeOperation: func(input, output any) string {
			in := input.(linInput)
			switch in.kind {
			case linGet:
				out := output.(linOutput)
				return fmt.Sprintf("get → balance=%d exec=%d", out.balance, out.exec)
			case linDebit:
				out := output.(linOutput)
				return fmt.Sprintf("debit %d → balance=%d exec=%d", in.amounts[0], out.balance, out.exec)
			}
			var amounts []string
			for _, x := range in.amounts {
				amounts = append(amounts, fmt.Sprint(x))
			}
			return fmt.Sprintf("debit %s → unknown", strings.Join(amounts, ", "))
		},
		DescribeState: a.describe,
		DescribeOperationMetadata: func(info any) string {
			var b strings.Builder
			for i, op := range info.([]*Op) {
				if i > 0 {
					b.WriteString("; ")
				}
				fmt.Fprintf(&b, "op %d client %d %s %s %s attempts=%d", op.ID, op.Client, op.Kind, op.Outcome, op.Status, op.Attempts)
				if op.Key != "" {
					b.WriteString(" key=" + op.Key)
				}
				if op.Replayed {
					b.WriteString(" replayed")
				}
			}
			return b.String()
		},
	}
	return nm.ToModel()
}

// step returns the states the account can be in after an operation with
// input and output, starting from state s.
func (a *account) step(state, input, output any) []any {
	s, in := state.(linState), input.(linInput)
	if in.kind == linUnknown {
		for _, x := range in.amounts {
			s.pool = a.join(s.pool, x)
		}
		return []any{s}
	}
	out := output.(linOutput)
	if out.balance < 0 {
		return nil
	}
	// (balance, exec) is the state just before the operation's own
	// effect; the pool's draws come first.
	balance, exec := out.balance, out.exec
	if in.kind == linDebit {
		balance, exec = balance+in.amounts[0], exec-1
	}
	if s.free {
		// Any state a real account can hold; drawing from the pool here
		// would only narrow what follows.
		if exec < 0 || balance+exec > a.initial || exec == 0 && balance != a.initial {
			return nil
		}
		return []any{linState{balance: out.balance, exec: out.exec, pool: s.pool}}
	}
	var next []any
	for _, pool := range a.draws(s.pool, exec-s.exec, s.balance-balance) {
		next = append(next, linState{balance: out.balance, exec: out.exec, pool: pool})
	}
	return next
}

func (a *account) join(pool string, amount int64) string {
	i, _ := slices.BinarySearch(a.amounts, amount)
	b := []byte(pool)
	binary.LittleEndian.PutUint32(b[4*i:], binary.LittleEndian.Uint32(b[4*i:])+1)
	return string(b)
}

// draws returns the pools left after taking from pool n debits summing to
// sum, for every way to do so.
func (a *account) draws(pool string, n, sum int64) []string {
	if n == 0 && sum == 0 {
		return []string{pool}
	}
	if n <= 0 || sum <= 0 {
		return nil
	}
	left := []byte(pool)
	var out []string
	var rec func(i int, n, sum int64)
	rec = func(i int, n, sum int64) {
		if n == 0 || i == len(a.amounts) {
			if n == 0 && sum == 0 {
				out = append(out, string(left))
			}
			return
		}
		have := int64(binary.LittleEndian.Uint32(left[4*i:]))
		for c := range min(have, n) + 1 {
			if c*a.amounts[i] > sum {
				break
			}
			binary.LittleEndian.PutUint32(left[4*i:], uint32(have-c))
			rec(i+1, n-c, sum-c*a.amounts[i])
		}
		binary.LittleEndian.PutUint32(left[4*i:], uint32(have))
	}
	rec(0, n, sum)
	return out
}

func (a *account) describe(state any) string {
	s := state.(linState)
	var b strings.Builder
	if s.free {
		b.WriteString("free")
	} else {
		fmt.Fprintf(&b, "balance=%d exec=%d", s.balance, s.exec)
	}
	for i, amount := range a.amounts {
		if n := binary.LittleEndian.Uint32([]byte(s.pool[4*i:])); n > 0 {
			fmt.Fprintf(&b, " pending=%d×%d", n, amount)
		}
	}
	return b.String()
}
