package conform

import (
	"context"
	"fmt"
	"strings"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// probe is one check's view of the server: its deadline, its raw
// connections, the balance reader, and what it recorded.
type probe struct {
	ctx context.Context
	cfg Config
	// cl reads balances; it is shared by the run's checks.
	cl *client.Client
	// prefix starts the check's account and key names.
	prefix string
	conns  []*wire

	// fields are key=value notes for the CHECK line, in order.
	fields []string
	// fails say why the check failed; none means it passed.
	fails []string
}

// name returns an account or key name unique to this run and check.
func (p *probe) name(suffix string) string { return p.prefix + "-" + suffix }

// budget is the budgetMs of a request that is not meant to expire.
func (p *probe) budget() uint32 { return uint32(p.cfg.Timeout.Milliseconds()) }

// slowMs is the sleep field of a slow request.
func (p *probe) slowMs() int64 { return p.cfg.Slow.Milliseconds() }

// note records a field for the CHECK line. A value with spaces is
// bracketed, as CASE lines do.
func (p *probe) note(key string, v any) {
	s := fmt.Sprint(v)
	if strings.ContainsAny(s, " \t\n") || s == "" {
		s = "[" + s + "]"
	}
	p.fields = append(p.fields, key+"="+s)
}

// failf records why the check failed.
func (p *probe) failf(format string, args ...any) {
	p.fails = append(p.fails, fmt.Sprintf(format, args...))
}

// expect records key=got and fails p's check unless got equals want.
func expect[T comparable](p *probe, key string, got, want T, why string) bool {
	p.note(key, got)
	if got != want {
		p.failf("%s=%v, want %v: %s", key, got, want, why)
		return false
	}
	return true
}

// request returns a request frame with the check's budget.
func (p *probe) request(id uint64, method, key, payload string) proto.Frame {
	return proto.Frame{Type: proto.TypeRequest, ID: id, BudgetMs: p.budget(), Method: method, Key: key, Payload: []byte(payload)}
}

// balance reads account's balance with a get through the client: an
// idempotent call, so a lost answer is retried within the check's time.
func (p *probe) balance(account string) (int64, error) {
	r := p.cl.Do(p.ctx, client.Call{Method: bank.MethodGet, Idempotent: true, Payload: []byte("account=" + account)})
	if r.Status != proto.StatusOK {
		return 0, fmt.Errorf("get %s to read its balance: %v %q (%v)", account, r.Status, r.Payload, r.Err)
	}
	a, err := parseOK(r.Payload)
	if err != nil {
		return 0, fmt.Errorf("get %s to read its balance: %w", account, err)
	}
	if a.Account != account {
		return 0, fmt.Errorf("get %s to read its balance: answer names account %q", account, a.Account)
	}
	return a.Balance, nil
}

// expectBalance reads account's balance, records it as key and fails the
// check unless it is want.
func (p *probe) expectBalance(key, account string, want int64, why string) error {
	b, err := p.balance(account)
	if err != nil {
		return err
	}
	expect(p, key, b, want, why)
	return nil
}

// pingOn sends ctl.ping with id on w and wants OK: the connection is
// open and its requests are being read.
func (p *probe) pingOn(w *wire, id uint64) error {
	ans, err := w.call(p.request(id, serverapi.MethodPing, "", ""))
	if err != nil {
		return fmt.Errorf("%s: %w", serverapi.MethodPing, err)
	}
	if ans.Status != proto.StatusOK {
		return fmt.Errorf("%s answered %s", serverapi.MethodPing, brief(ans))
	}
	return nil
}
