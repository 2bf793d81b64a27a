package serverkit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rpcbench/rpcbench/adapters/gokit/internal/line"
)

// Code is a status a handler returns, by its canonical upper-case name.
type Code string

// The codes the handlers return; an adapter maps each to its library's.
const (
	OK               Code = "OK"
	Canceled         Code = "CANCELLED"
	DeadlineExceeded Code = "DEADLINE_EXCEEDED"
	InvalidArgument  Code = "INVALID_ARGUMENT"
)

// StatusCodes lists every Code a Status can carry, so that an adapter's
// test can check its mapping covers them.
var StatusCodes = []Code{Canceled, DeadlineExceeded, InvalidArgument}

// Status is a handler's answer other than OK; its Code is never OK. The
// handler has written its end line before it returns one.
type Status struct {
	Code    Code
	Message string
}

func (s *Status) Error() string { return "serverkit: " + string(s.Code) + ": " + s.Message }

// Account is a Get's or a Debit's reply, the fields of AccountReply.
// Replayed is always false: idempotency keys are not honoured.
type Account struct {
	Account  string
	Balance  int64
	Exec     int64 // the debits the account has executed
	BudgetMS int64 // whole milliseconds of the deadline at start, 0 without one
}

// The states of a handler's context in an end line.
const (
	ctxActive           = "active"
	ctxCancelled        = "cancelled"
	ctxDeadlineExceeded = "deadline_exceeded"
)

// initialBalance is what an account not seen before holds.
const initialBalance = 1000

// Handlers are the Bank service's three handlers, independent of the
// library that serves them: an adapter's handler methods take the call's
// name (its x-rpcbench-call, "" without one) and the request's fields
// from the library, call these, and hand the result back. They share one
// bank and write their events to the session's stdout.
type Handlers struct {
	out *line.Writer

	mu       sync.Mutex // guards balances and execs, and orders exec lines as applied
	balances map[string]int64
	execs    map[string]int64 // executed debits, by account

	inflight tracker
}

func newHandlers(out *line.Writer) *Handlers {
	return &Handlers{out: out, balances: map[string]int64{}, execs: map[string]int64{}}
}

// Delay is what a request asks its handler to spend before it executes,
// in milliseconds, 0 for none: first SleepMS (sleep_ms) or until the
// context ends, then WorkMS (work_ms) without looking at the context.
type Delay struct {
	SleepMS int64
	WorkMS  int64
}

// Get reads account after d.
func (h *Handlers) Get(ctx context.Context, call, account string, d Delay) (Account, error) {
	return h.account(ctx, call, "Get", account, 0, d)
}

// Debit takes amount from account after d; amount must be positive.
func (h *Handlers) Debit(ctx context.Context, call, account string, amount int64, d Delay) (Account, error) {
	return h.account(ctx, call, "Debit", account, amount, d)
}

// Echo writes its start and end; it executes nothing, and the adapter
// answers the payload.
func (h *Handlers) Echo(ctx context.Context, call string) {
	h.inflight.enter()
	defer h.inflight.leave()
	h.start(ctx, call, "Echo")
	h.end(ctx, call, "Echo", false, OK)
}

// account is Get (amount 0) and Debit, as SERVER-PROTOCOL.md's steps.
func (h *Handlers) account(ctx context.Context, call, method, account string, amount int64, d Delay) (Account, error) {
	h.inflight.enter()
	defer h.inflight.leave()
	deadlineMS := h.start(ctx, call, method)
	if d.SleepMS > 0 {
		select {
		case <-time.After(time.Duration(d.SleepMS) * time.Millisecond):
		case <-ctx.Done():
			state := stateOf(ctx)
			code := Canceled
			if state == ctxDeadlineExceeded {
				code = DeadlineExceeded
			}
			h.end(ctx, call, method, false, code)
			return Account{}, &Status{Code: code, Message: fmt.Sprintf("%s: context ended during the sleep: %v", method, ctx.Err())}
		}
	}
	if d.WorkMS > 0 {
		// Blind to ctx, as a CPU-bound step or a call that takes no
		// context is: whatever the library does to the context
		// meanwhile, the handler goes on to execute.
		time.Sleep(time.Duration(d.WorkMS) * time.Millisecond)
	}
	// No deadline or cancellation check here: whether expired work
	// reaches this point is the library's doing, and what is measured.
	if method == "Debit" && amount <= 0 {
		h.end(ctx, call, method, false, InvalidArgument)
		return Account{}, &Status{Code: InvalidArgument, Message: fmt.Sprintf("Debit: amount %d not positive", amount)}
	}
	a := h.execute(call, method, account, amount)
	if deadlineMS != nil {
		a.BudgetMS = int64(*deadlineMS) // toward zero
	}
	h.end(ctx, call, method, true, OK)
	return a, nil
}

// execute applies a debit of amount (0 for a Get) and writes its exec
// line, both under the bank's lock, so that exec lines come out in the
// order their balances were reached.
func (h *Handlers) execute(call, method, account string, amount int64) Account {
	h.mu.Lock()
	defer h.mu.Unlock()
	bal, ok := h.balances[account]
	if !ok {
		bal = initialBalance
	}
	if method == "Debit" {
		bal -= amount
		h.balances[account] = bal
		h.execs[account]++
	}
	h.out.Send(wireExec{Type: "exec", Call: call, Method: method, Account: account, Amount: amount, Balance: bal})
	return Account{Account: account, Balance: bal, Exec: h.execs[account]}
}

// start writes the start line and returns its deadline_ms.
func (h *Handlers) start(ctx context.Context, call, method string) *float64 {
	var ms *float64
	if d, ok := ctx.Deadline(); ok {
		v := float64(time.Until(d)) / float64(time.Millisecond)
		ms = &v
	}
	h.out.Send(wireStart{Type: "start", Call: call, Method: method, DeadlineMS: ms})
	return ms
}

func (h *Handlers) end(ctx context.Context, call, method string, executed bool, code Code) {
	h.out.Send(wireEnd{Type: "end", Call: call, Method: method, Executed: executed, Ctx: stateOf(ctx), Code: code})
}

// stateOf names ctx's state as the library tells it; an ended context
// that is not past its deadline counts as cancelled.
func stateOf(ctx context.Context) string {
	switch err := ctx.Err(); {
	case err == nil:
		return ctxActive
	case errors.Is(err, context.DeadlineExceeded):
		return ctxDeadlineExceeded
	default:
		return ctxCancelled
	}
}

// tracker counts the handlers running, so that shutdown can wait for
// the last end line after the server stopped without waiting for them.
type tracker struct {
	mu   sync.Mutex    // guards n and idle
	n    int           // handlers running
	idle chan struct{} // closed when n drops to 0; nil before the first handler
}

func (t *tracker) enter() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 {
		t.idle = make(chan struct{})
	}
	t.n++
}

func (t *tracker) leave() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n--
	if t.n == 0 {
		close(t.idle)
	}
}

// wait returns true once no handler runs, false if d passes first.
func (t *tracker) wait(d time.Duration) bool {
	t.mu.Lock()
	n, idle := t.n, t.idle
	t.mu.Unlock()
	if n == 0 {
		return true
	}
	select {
	case <-idle:
		return true
	case <-time.After(d):
		return false
	}
}
