// Package grpcbank is the grpc-bank rows' gRPC code: grpc-go's generated
// Bank client and server (adapters/gokit/bankpb, the protoc output of
// proto/rpcbench/bank/v1/bank.proto), the server executing Get on
// internal/bank's handler as rpcserver -grpc does.
package grpcbank

import (
	"bytes"
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/rpcbench/rpcbench/adapters/gokit/bankpb"
)

// Client calls Bank over one *grpc.ClientConn.
type Client struct {
	cc   *grpc.ClientConn
	bank bankpb.BankClient
}

// Dial returns a Client for addr, grpc-go's default options but
// plaintext (h2c with prior knowledge, which rpcserver -grpc speaks).
// Like grpc.NewClient it connects on first use.
func Dial(addr string) (*Client, error) {
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("grpcbank: %w", err)
	}
	return &Client{cc: cc, bank: bankpb.NewBankClient(cc)}, nil
}

// Get makes one Bank Get of account.
func (c *Client) Get(ctx context.Context, account string) (*bankpb.AccountReply, error) {
	return c.bank.Get(ctx, &bankpb.GetRequest{Account: account})
}

// accountPrefix starts the workload's get payload.
var accountPrefix = []byte("account=")

// Call makes the Get that the workload's get payload req
// ("account=acct-17") asks for, and returns the reply in the bank's
// answer text (AppendAnswer), a new slice, so that the workload's answer
// check applies unchanged. The text is the driver's: on the wire are
// GetRequest and AccountReply.
func (c *Client) Call(ctx context.Context, req []byte) ([]byte, error) {
	account, ok := bytes.CutPrefix(req, accountPrefix)
	if !ok || bytes.ContainsAny(account, asciiSpace) {
		return nil, fmt.Errorf("grpcbank: payload %q is not account=NAME", req)
	}
	r, err := c.Get(ctx, string(account))
	if err != nil {
		return nil, err
	}
	return AppendAnswer(make([]byte, 0, 64), r), nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.cc.Close() }
