package serverkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/adapters/gokit/internal/line"
)

// syncBuffer is a bytes.Buffer safe for the handlers' concurrent writes.
type syncBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// lines are the lines written, without deadline_ms's value, which
// varies: "set" for a number, "null" for null.
func (s *syncBuffer) lines(t *testing.T) []string {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range strings.Split(strings.TrimSuffix(s.b.String(), "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if v, ok := m["deadline_ms"]; ok && v != nil {
			m["deadline_ms"] = "set"
		}
		b, _ := json.Marshal(m)
		out = append(out, string(b))
	}
	return out
}

// TestHandlers: each handler's lines and answer, for contexts that
// stay active, end by cancel or pass their deadline during the sleep.
func TestHandlers(t *testing.T) {
	active := func(t *testing.T) context.Context { return t.Context() }
	timeout := func(d time.Duration) func(t *testing.T) context.Context {
		return func(t *testing.T) context.Context {
			ctx, cancel := context.WithTimeout(t.Context(), d)
			t.Cleanup(cancel)
			return ctx
		}
	}
	cancelled := func(t *testing.T) context.Context {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(10*time.Millisecond, cancel)
		return ctx
	}
	tests := []struct {
		name  string
		ctx   func(t *testing.T) context.Context
		call  func(h *Handlers, ctx context.Context) (Account, error)
		want  Account
		code  Code // of the Status; "" for none
		lines []string
	}{
		{"debit", active,
			func(h *Handlers, ctx context.Context) (Account, error) { return h.Debit(ctx, "c", "a", 10, Delay{}) },
			Account{Account: "a", Balance: 990, Exec: 1}, "", []string{
				`{"call":"c","deadline_ms":null,"method":"Debit","type":"start"}`,
				`{"account":"a","amount":10,"balance":990,"call":"c","method":"Debit","type":"exec"}`,
				`{"call":"c","code":"OK","ctx":"active","executed":true,"method":"Debit","type":"end"}`}},
		{"get with a deadline", timeout(3 * time.Second),
			func(h *Handlers, ctx context.Context) (Account, error) {
				return h.Get(ctx, "c", "a", Delay{SleepMS: 1})
			},
			Account{Account: "a", Balance: 1000, BudgetMS: 2999}, "", []string{
				`{"call":"c","deadline_ms":"set","method":"Get","type":"start"}`,
				`{"account":"a","amount":0,"balance":1000,"call":"c","method":"Get","type":"exec"}`,
				`{"call":"c","code":"OK","ctx":"active","executed":true,"method":"Get","type":"end"}`}},
		{"amount not positive", active,
			func(h *Handlers, ctx context.Context) (Account, error) { return h.Debit(ctx, "c", "a", 0, Delay{}) },
			Account{}, InvalidArgument, []string{
				`{"call":"c","deadline_ms":null,"method":"Debit","type":"start"}`,
				`{"call":"c","code":"INVALID_ARGUMENT","ctx":"active","executed":false,"method":"Debit","type":"end"}`}},
		{"cancelled during the sleep", cancelled,
			func(h *Handlers, ctx context.Context) (Account, error) {
				return h.Debit(ctx, "c", "a", 10, Delay{SleepMS: 5000})
			},
			Account{}, Canceled, []string{
				`{"call":"c","deadline_ms":null,"method":"Debit","type":"start"}`,
				`{"call":"c","code":"CANCELLED","ctx":"cancelled","executed":false,"method":"Debit","type":"end"}`}},
		{"deadline during the sleep", timeout(10 * time.Millisecond),
			func(h *Handlers, ctx context.Context) (Account, error) {
				return h.Get(ctx, "c", "a", Delay{SleepMS: 5000})
			},
			Account{}, DeadlineExceeded, []string{
				`{"call":"c","deadline_ms":"set","method":"Get","type":"start"}`,
				`{"call":"c","code":"DEADLINE_EXCEEDED","ctx":"deadline_exceeded","executed":false,"method":"Get","type":"end"}`}},
		{"expired without a sleep still executes", timeout(-time.Second),
			func(h *Handlers, ctx context.Context) (Account, error) { return h.Debit(ctx, "c", "a", 10, Delay{}) },
			Account{Account: "a", Balance: 990, Exec: 1, BudgetMS: -1000}, "", []string{
				`{"call":"c","deadline_ms":"set","method":"Debit","type":"start"}`,
				`{"account":"a","amount":10,"balance":990,"call":"c","method":"Debit","type":"exec"}`,
				`{"call":"c","code":"OK","ctx":"deadline_exceeded","executed":true,"method":"Debit","type":"end"}`}},
		{"work past the deadline still executes", timeout(10 * time.Millisecond),
			func(h *Handlers, ctx context.Context) (Account, error) {
				return h.Debit(ctx, "c", "a", 10, Delay{WorkMS: 50})
			},
			Account{Account: "a", Balance: 990, Exec: 1, BudgetMS: 9}, "", []string{
				`{"call":"c","deadline_ms":"set","method":"Debit","type":"start"}`,
				`{"account":"a","amount":10,"balance":990,"call":"c","method":"Debit","type":"exec"}`,
				`{"call":"c","code":"OK","ctx":"deadline_exceeded","executed":true,"method":"Debit","type":"end"}`}},
		{"echo", active,
			func(h *Handlers, ctx context.Context) (Account, error) { h.Echo(ctx, ""); return Account{}, nil },
			Account{}, "", []string{
				`{"call":"","deadline_ms":null,"method":"Echo","type":"start"}`,
				`{"call":"","code":"OK","ctx":"active","executed":false,"method":"Echo","type":"end"}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out syncBuffer
			h := newHandlers(line.NewWriter(&out))
			got, err := tt.call(h, tt.ctx(t))
			var st *Status
			if errors.As(err, &st) != (tt.code != "") || (st != nil && st.Code != tt.code) {
				t.Errorf("error: got %v, want a Status with code %q", err, tt.code)
			}
			// budget_ms is taken at start: at most the want, within a second.
			if d := tt.want.BudgetMS - got.BudgetMS; tt.want.BudgetMS != 0 && d >= 0 && d < 1000 {
				got.BudgetMS = tt.want.BudgetMS
			}
			if got != tt.want {
				t.Errorf("reply: got %+v, want %+v", got, tt.want)
			}
			if g, w := strings.Join(out.lines(t), "\n"), strings.Join(tt.lines, "\n"); g != w {
				t.Errorf("lines:\ngot  %s\nwant %s", g, w)
			}
		})
	}
}

// TestBankShared: the three handlers share one bank, each account
// starting at 1000, and concurrent debits each execute once.
func TestBankShared(t *testing.T) {
	h := newHandlers(line.NewWriter(&syncBuffer{}))
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() { h.Debit(context.Background(), "c", "a", 3, Delay{}) })
	}
	wg.Wait()
	got, _ := h.Get(context.Background(), "c", "a", Delay{})
	if want := (Account{Account: "a", Balance: 1000 - 150, Exec: 50}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got, _ := h.Get(context.Background(), "c", "b", Delay{}); got.Balance != 1000 || got.Exec != 0 {
		t.Errorf("a new account: got %+v, want 1000, exec 0", got)
	}
}
