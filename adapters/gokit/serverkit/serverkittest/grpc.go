package serverkittest

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/rpcbench/rpcbench/adapters/gokit/bankpb"
	"github.com/rpcbench/rpcbench/adapters/gokit/clientkit"
	"github.com/rpcbench/rpcbench/adapters/gokit/serverkit"
)

// GRPCDial is a Dial to grpc-go's generated Bank client, with default
// options but plaintext: every server adapter serves gRPC, so any may
// be called by it.
func GRPCDial(t *testing.T, addr string) Client {
	cc, err := newClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return grpcClient{bankpb.NewBankClient(cc)}
}

// grpcClient is grpc-go's generated Bank client as a Client.
type grpcClient struct{ c bankpb.BankClient }

// named is ctx carrying call as its x-rpcbench-call, if any.
func named(ctx context.Context, call string) context.Context {
	if call == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "x-rpcbench-call", call)
}

func account(r *bankpb.AccountReply) serverkit.Account {
	return serverkit.Account{Account: r.GetAccount(), Balance: r.GetBalance(), Exec: r.GetExec(), BudgetMS: r.GetBudgetMs()}
}

func (c grpcClient) Get(ctx context.Context, call, acct string, d serverkit.Delay) (serverkit.Account, error) {
	r, err := c.c.Get(named(ctx, call), &bankpb.GetRequest{Account: acct, SleepMs: d.SleepMS, WorkMs: d.WorkMS})
	return account(r), err
}

func (c grpcClient) Debit(ctx context.Context, call, acct string, amount int64, d serverkit.Delay) (serverkit.Account, error) {
	r, err := c.c.Debit(named(ctx, call), &bankpb.DebitRequest{Account: acct, Amount: amount, SleepMs: d.SleepMS, WorkMs: d.WorkMS})
	return account(r), err
}

func (c grpcClient) Echo(ctx context.Context, call string, payload []byte) ([]byte, error) {
	r, err := c.c.Echo(named(ctx, call), &bankpb.EchoRequest{Payload: payload})
	return r.GetPayload(), err
}

func (grpcClient) Code(err error) string { return clientkit.CodeName(uint32(status.Code(err))) }
