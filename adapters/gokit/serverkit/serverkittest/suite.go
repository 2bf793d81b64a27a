package serverkittest

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/adapters/gokit/serverkit"
)

// Client calls the Bank service at one address with a library's own
// generated client. A call named "" is sent without x-rpcbench-call; any
// other carries it as that metadata.
type Client interface {
	Get(ctx context.Context, call, account string, d serverkit.Delay) (serverkit.Account, error)
	Debit(ctx context.Context, call, account string, amount int64, d serverkit.Delay) (serverkit.Account, error)
	Echo(ctx context.Context, call string, payload []byte) ([]byte, error)
	// Code is err's canonical status name, "OK" for nil.
	Code(err error) string
}

// Dial returns a Client for addr, closed when the test ends.
type Dial func(t *testing.T, addr string) Client

// clientDeadline is the deadline of a call that is not about deadlines.
const clientDeadline = 5 * time.Second

// Suite runs, against stack served in-process, every test of what a
// server adapter's handlers write and answer, calling it through dial.
func Suite(t *testing.T, stack serverkit.Stack, dial Dial) {
	for _, tt := range []struct {
		name string
		run  func(t *testing.T, h *Harness, c Client)
	}{
		{"debit_then_get", testDebitThenGet},
		{"no_deadline_no_name", testNoDeadlineNoName},
		{"echo", testEcho},
		{"amount_not_positive", testAmountNotPositive},
		{"deadline_during_sleep", testDeadlineDuringSleep},
		{"cancel_during_sleep", testCancelDuringSleep},
		{"work_past_deadline", testWorkPastDeadline},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := Start(t, stack)
			serving := h.Init()
			want := Line{"type": "serving", "protocol": serverkit.Protocol, "stack": stack.Name, "version": stack.Version,
				"runtime": serving["runtime"], "addr": h.Addr()}
			if fmt.Sprint(serving) != fmt.Sprint(want) || !strings.HasPrefix(h.Addr(), "127.0.0.1:") || !strings.HasPrefix(fmt.Sprint(serving["runtime"]), "go1.") {
				t.Errorf("serving: got %v, want %v", serving, want)
			}
			tt.run(t, h, dial(t, h.Addr()))
			h.Send(`{"type":"shutdown"}`)
			if l := h.Next(); l["type"] != "shutdown_ok" {
				t.Errorf("got %v, want shutdown_ok", l)
			}
			h.CloseStdin()
			if code := h.Exit(); code != 0 {
				t.Errorf("exit status %d, want 0", code)
			}
		})
	}
}

// checkEvents compares got with want line by line, deadline_ms apart:
// want's deadline_ms is nil for null, else the most it may be, and got's
// must be within a second below it.
func checkEvents(t *testing.T, got, want []Line) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("lines:\ngot  %v\nwant %v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if w["type"] == "start" {
			if max, ok := w["deadline_ms"].(float64); ok {
				ms, isNum := g["deadline_ms"].(float64)
				if !isNum || ms > max || ms < max-1000 {
					t.Errorf("start deadline_ms: got %v, want in (%v, %v]", g["deadline_ms"], max-1000, max)
				}
				g, w = clone(g), clone(w)
				g["deadline_ms"], w["deadline_ms"] = "checked", "checked"
			}
		}
		if fmt.Sprint(g) != fmt.Sprint(w) {
			t.Errorf("line %d:\ngot  %v\nwant %v", i, g, w)
		}
	}
}

func clone(l Line) Line {
	c := Line{}
	for k, v := range l {
		c[k] = v
	}
	return c
}

func startLine(call, method string, deadlineMS any) Line {
	return Line{"type": "start", "call": call, "method": method, "deadline_ms": deadlineMS}
}

func execLine(call, method, account string, amount, balance int64) Line {
	return Line{"type": "exec", "call": call, "method": method, "account": account, "amount": float64(amount), "balance": float64(balance)}
}

func endLine(call, method string, executed bool, ctx, code string) Line {
	return Line{"type": "end", "call": call, "method": method, "executed": executed, "ctx": ctx, "code": code}
}

func callCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

var deadlineMax = float64(clientDeadline / time.Millisecond)

// testDebitThenGet: a debit executes once, with its exec line and reply
// agreeing with the bank, and a get reads it back.
func testDebitThenGet(t *testing.T, h *Harness, c Client) {
	a, err := c.Debit(callCtx(t, clientDeadline), "d-1", "acct-A", 10, serverkit.Delay{})
	if c.Code(err) != "OK" || a.Account != "acct-A" || a.Balance != 990 || a.Exec != 1 || a.BudgetMS < 4000 || a.BudgetMS > 5000 {
		t.Errorf("debit: got %+v, %v; want acct-A 990 exec 1, budget_ms about 5000", a, err)
	}
	checkEvents(t, h.Events("d-1"), []Line{startLine("d-1", "Debit", deadlineMax),
		execLine("d-1", "Debit", "acct-A", 10, 990), endLine("d-1", "Debit", true, "active", "OK")})
	a, err = c.Get(callCtx(t, clientDeadline), "g-1", "acct-A", serverkit.Delay{SleepMS: 1})
	if c.Code(err) != "OK" || a.Account != "acct-A" || a.Balance != 990 || a.Exec != 1 {
		t.Errorf("get: got %+v, %v; want acct-A 990 exec 1", a, err)
	}
	checkEvents(t, h.Events("g-1"), []Line{startLine("g-1", "Get", deadlineMax),
		execLine("g-1", "Get", "acct-A", 0, 990), endLine("g-1", "Get", true, "active", "OK")})
}

// testNoDeadlineNoName: a call with neither deadline nor x-rpcbench-call
// starts with deadline_ms null, is named "", and has budget_ms 0.
func testNoDeadlineNoName(t *testing.T, h *Harness, c Client) {
	a, err := c.Get(t.Context(), "", "acct-B", serverkit.Delay{})
	if c.Code(err) != "OK" || a.Balance != 1000 || a.Exec != 0 || a.BudgetMS != 0 {
		t.Errorf("get: got %+v, %v; want 1000, exec 0, budget_ms 0", a, err)
	}
	checkEvents(t, h.Events(""), []Line{startLine("", "Get", nil),
		execLine("", "Get", "acct-B", 0, 1000), endLine("", "Get", true, "active", "OK")})
}

// testEcho: an echo answers its payload and executes nothing.
func testEcho(t *testing.T, h *Harness, c Client) {
	p, err := c.Echo(callCtx(t, clientDeadline), "e-1", []byte("\x00hello"))
	if c.Code(err) != "OK" || !bytes.Equal(p, []byte("\x00hello")) {
		t.Errorf("echo: got %q, %v; want the payload", p, err)
	}
	checkEvents(t, h.Events("e-1"), []Line{startLine("e-1", "Echo", deadlineMax), endLine("e-1", "Echo", false, "active", "OK")})
}

// testAmountNotPositive: a debit of 0 or less is INVALID_ARGUMENT,
// unexecuted, and the bank is unchanged.
func testAmountNotPositive(t *testing.T, h *Harness, c Client) {
	for i, amount := range []int64{0, -5} {
		call := fmt.Sprintf("bad-%d", i)
		_, err := c.Debit(callCtx(t, clientDeadline), call, "acct-C", amount, serverkit.Delay{})
		if code := c.Code(err); code != "INVALID_ARGUMENT" {
			t.Errorf("debit of %d: got %s (%v), want INVALID_ARGUMENT", amount, code, err)
		}
		checkEvents(t, h.Events(call), []Line{startLine(call, "Debit", deadlineMax), endLine(call, "Debit", false, "active", "INVALID_ARGUMENT")})
	}
	checkBalance(t, h, c, "acct-C", 1000)
}

// testDeadlineDuringSleep: a debit sleeping past the client's deadline
// ends unexecuted. Which of the two the handler's context says depends
// on what the library hears first: its own timer for the request's
// grpc-timeout, or the client's RST_STREAM at the client's deadline; so
// either is accepted, with the code that goes with it.
func testDeadlineDuringSleep(t *testing.T, h *Harness, c Client) {
	_, err := c.Debit(callCtx(t, 200*time.Millisecond), "dl-1", "acct-D", 10, serverkit.Delay{SleepMS: 2000})
	if code := c.Code(err); code != "DEADLINE_EXCEEDED" {
		t.Errorf("debit: got %s (%v), want DEADLINE_EXCEEDED", code, err)
	}
	got := h.Events("dl-1")
	want := []Line{startLine("dl-1", "Debit", 200.0), endLine("dl-1", "Debit", false, "deadline_exceeded", "DEADLINE_EXCEEDED")}
	if len(got) == 2 && got[1]["ctx"] == "cancelled" {
		want[1] = endLine("dl-1", "Debit", false, "cancelled", "CANCELLED")
	}
	t.Logf("end: %v", got[len(got)-1])
	checkEvents(t, got, want)
	checkBalance(t, h, c, "acct-D", 1000)
}

// testCancelDuringSleep: a client's cancel while the handler sleeps
// ends the handler's context, and the debit unexecuted.
func testCancelDuringSleep(t *testing.T, h *Harness, c Client) {
	ctx, cancel := context.WithCancel(callCtx(t, clientDeadline))
	done := make(chan error, 1)
	go func() {
		_, err := c.Debit(ctx, "cx-1", "acct-E", 10, serverkit.Delay{SleepMS: 2000})
		done <- err
	}()
	if l := h.Next(); l["type"] != "start" || l["call"] != "cx-1" {
		t.Fatalf("got %v, want cx-1's start", l)
	}
	cancel()
	if err := <-done; c.Code(err) != "CANCELLED" {
		t.Errorf("debit: got %s (%v), want CANCELLED", c.Code(err), err)
	}
	checkEvents(t, h.Events("cx-1"), []Line{endLine("cx-1", "Debit", false, "cancelled", "CANCELLED")})
	checkBalance(t, h, c, "acct-E", 1000)
}

// testWorkPastDeadline: a debit whose work_ms, blind to the context,
// outlasts the client's deadline executes anyway, once, and ends OK
// with its context no longer active; the client has had its
// DEADLINE_EXCEEDED long before. As for a sleep, which of the two ended
// the context is the library's to say.
func testWorkPastDeadline(t *testing.T, h *Harness, c Client) {
	_, err := c.Debit(callCtx(t, 100*time.Millisecond), "wk-1", "acct-W", 10, serverkit.Delay{WorkMS: 300})
	if code := c.Code(err); code != "DEADLINE_EXCEEDED" {
		t.Errorf("debit: got %s (%v), want DEADLINE_EXCEEDED", code, err)
	}
	got := h.Events("wk-1")
	want := []Line{startLine("wk-1", "Debit", 100.0), execLine("wk-1", "Debit", "acct-W", 10, 990),
		endLine("wk-1", "Debit", true, "deadline_exceeded", "OK")}
	if len(got) == 3 && got[2]["ctx"] == "cancelled" {
		want[2] = endLine("wk-1", "Debit", true, "cancelled", "OK")
	}
	t.Logf("end: %v", got[len(got)-1])
	checkEvents(t, got, want)
	checkBalance(t, h, c, "acct-W", 990)
}

// checkBalance reads account with a get of its own and wants balance.
func checkBalance(t *testing.T, h *Harness, c Client, account string, balance int64) {
	t.Helper()
	call := "check-" + account
	a, err := c.Get(callCtx(t, clientDeadline), call, account, serverkit.Delay{})
	if c.Code(err) != "OK" || a.Balance != balance {
		t.Errorf("balance of %s: got %+v, %v; want %d", account, a, err, balance)
	}
	h.Events(call)
}

// ProcessSuite runs, against the adapter binary in serve mode that
// command starts, what only a process shows: its exit statuses.
func ProcessSuite(t *testing.T, command func(t *testing.T) *exec.Cmd) {
	t.Run("shutdown", func(t *testing.T) {
		h := StartProcess(t, command(t))
		h.Init()
		h.Send(`{"type":"shutdown"}`)
		if l := h.Next(); l["type"] != "shutdown_ok" {
			t.Errorf("got %v, want shutdown_ok", l)
		}
		h.CloseStdin()
		if code := h.Exit(); code != 0 {
			t.Errorf("exit status %d, want 0", code)
		}
	})
	t.Run("bad_init", func(t *testing.T) {
		h := StartProcess(t, command(t))
		h.Send(`{"type":"init","protocol":"` + serverkit.Protocol + `","scenario":"x","port":1}`)
		if l := h.Next(); l["type"] != "fatal" || !strings.Contains(fmt.Sprint(l["text"]), `unknown field "port"`) || len(l) != 2 {
			t.Errorf("got %v, want fatal naming the unknown field", l)
		}
		if code := h.Exit(); code != 2 {
			t.Errorf("exit status %d, want 2", code)
		}
	})
}
