package main

import (
	"context"
	"net/http"
	"os"
	"testing"

	"connectrpc.com/connect"

	"github.com/rpcbench/rpcbench/adapters/gokit/bankpb"
	"github.com/rpcbench/rpcbench/adapters/gokit/bankpb/bankpbconnect"
	"github.com/rpcbench/rpcbench/adapters/gokit/clientkit"
	"github.com/rpcbench/rpcbench/adapters/gokit/serverkit"
	"github.com/rpcbench/rpcbench/adapters/gokit/serverkit/serverkittest"
)

// TestMain lets TestServeProcess run this test binary as the adapter.
func TestMain(m *testing.M) { os.Exit(serverkittest.Main(m, main)) }

// client is connect-go's generated Bank client in its gRPC protocol over
// net/http's unencrypted HTTP/2, for serverkittest.
type client struct{ c bankpbconnect.BankClient }

func dial(t *testing.T, addr string) serverkittest.Client {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: &p}
	t.Cleanup(tr.CloseIdleConnections)
	return client{bankpbconnect.NewBankClient(&http.Client{Transport: tr}, "http://"+addr, connect.WithGRPC())}
}

func named[T any](call string, msg *T) *connect.Request[T] {
	req := connect.NewRequest(msg)
	if call != "" {
		req.Header().Set("x-rpcbench-call", call)
	}
	return req
}

func account(r *connect.Response[bankpb.AccountReply], err error) (serverkit.Account, error) {
	if err != nil {
		return serverkit.Account{}, err
	}
	m := r.Msg
	return serverkit.Account{Account: m.GetAccount(), Balance: m.GetBalance(), Exec: m.GetExec(), BudgetMS: m.GetBudgetMs()}, nil
}

func (c client) Get(ctx context.Context, call, acct string, d serverkit.Delay) (serverkit.Account, error) {
	return account(c.c.Get(ctx, named(call, &bankpb.GetRequest{Account: acct, SleepMs: d.SleepMS, WorkMs: d.WorkMS})))
}

func (c client) Debit(ctx context.Context, call, acct string, amount int64, d serverkit.Delay) (serverkit.Account, error) {
	return account(c.c.Debit(ctx, named(call, &bankpb.DebitRequest{Account: acct, Amount: amount, SleepMs: d.SleepMS, WorkMs: d.WorkMS})))
}

func (c client) Echo(ctx context.Context, call string, payload []byte) ([]byte, error) {
	r, err := c.c.Echo(ctx, named(call, &bankpb.EchoRequest{Payload: payload}))
	if err != nil {
		return nil, err
	}
	return r.Msg.GetPayload(), nil
}

func (client) Code(err error) string {
	if err == nil {
		return "OK"
	}
	return clientkit.CodeName(uint32(connect.CodeOf(err)))
}

// TestServe: connect-go's handler under serverkit's handlers does what
// SERVER-PROTOCOL.md says, called by connect-go's own client over gRPC.
func TestServe(t *testing.T) {
	serverkittest.Suite(t, serverStack, dial)
}

// TestServeProcess: main dispatches "serve" to the server adapter, with
// the protocol's exit statuses.
func TestServeProcess(t *testing.T) { serverkittest.ProcessSuite(t, serverkittest.Self) }

// TestStatusCodes: every code a handler returns has connect-go's own.
func TestStatusCodes(t *testing.T) {
	for _, c := range serverkit.StatusCodes {
		if g, ok := connectCodes[c]; !ok || clientkit.CodeName(uint32(g)) != string(c) {
			t.Errorf("%s: got connect-go code %v (%v), want the one named %s", c, g, ok, c)
		}
	}
}
