package main

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/rpcbench/rpcbench/adapters/grpcgo/bankpb"
	"github.com/rpcbench/rpcbench/adapters/serverkit"
	"github.com/rpcbench/rpcbench/adapters/serverkit/serverkittest"
)

// envServeMain set to "1" makes the test binary run main as
// "adapter-grpcgo serve", for serverkittest.ProcessSuite.
const envServeMain = "RPCBENCH_TEST_SERVE_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envServeMain) == "1" {
		os.Args = []string{os.Args[0], "serve"}
		main()
	}
	os.Exit(m.Run())
}

// client is grpc-go's generated Bank client, for serverkittest.
type client struct{ c bankpb.BankClient }

func dial(t *testing.T, addr string) serverkittest.Client {
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return client{bankpb.NewBankClient(cc)}
}

func named(ctx context.Context, call string) context.Context {
	if call == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "x-rpcbench-call", call)
}

func account(r *bankpb.AccountReply) serverkit.Account {
	return serverkit.Account{Account: r.GetAccount(), Balance: r.GetBalance(), Exec: r.GetExec(), BudgetMS: r.GetBudgetMs()}
}

func (c client) Get(ctx context.Context, call, acct string, d serverkit.Delay) (serverkit.Account, error) {
	r, err := c.c.Get(named(ctx, call), &bankpb.GetRequest{Account: acct, SleepMs: d.SleepMS, WorkMs: d.WorkMS})
	return account(r), err
}

func (c client) Debit(ctx context.Context, call, acct string, amount int64, d serverkit.Delay) (serverkit.Account, error) {
	r, err := c.c.Debit(named(ctx, call), &bankpb.DebitRequest{Account: acct, Amount: amount, SleepMs: d.SleepMS, WorkMs: d.WorkMS})
	return account(r), err
}

func (c client) Echo(ctx context.Context, call string, payload []byte) ([]byte, error) {
	r, err := c.c.Echo(named(ctx, call), &bankpb.EchoRequest{Payload: payload})
	return r.GetPayload(), err
}

func (client) Code(err error) string { return codeName(status.Code(err)) }

// TestServe: grpc-go's server under serverkit's handlers does what
// SERVER-PROTOCOL.md says, called by grpc-go's own client.
func TestServe(t *testing.T) {
	serverkittest.Suite(t, stack, dial)
}

// TestServeProcess: main dispatches "serve" to the server adapter, with
// the protocol's exit statuses.
func TestServeProcess(t *testing.T) {
	serverkittest.ProcessSuite(t, func(t *testing.T) *exec.Cmd {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envServeMain+"=1")
		return cmd
	})
}

// TestStatusCodes: every code a handler returns has grpc-go's own.
func TestStatusCodes(t *testing.T) {
	for _, c := range serverkit.StatusCodes {
		if g, ok := grpcCodes[c]; !ok || codeName(g) != string(c) {
			t.Errorf("%s: got grpc-go code %v (%v), want the one named %s", c, g, ok, c)
		}
	}
}
