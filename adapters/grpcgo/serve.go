package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/rpcbench/rpcbench/adapters/gokit/bankpb"
	"github.com/rpcbench/rpcbench/adapters/gokit/serverkit"
)

// bankServer is the Bank service as grpc-go's generated interface.
type bankServer struct {
	bankpb.UnimplementedBankServer
	h *serverkit.Handlers
}

func (b *bankServer) Get(ctx context.Context, req *bankpb.GetRequest) (*bankpb.AccountReply, error) {
	d := serverkit.Delay{SleepMS: req.GetSleepMs(), WorkMS: req.GetWorkMs()}
	a, err := b.h.Get(ctx, callName(ctx), req.GetAccount(), d)
	return reply(a, err)
}

func (b *bankServer) Debit(ctx context.Context, req *bankpb.DebitRequest) (*bankpb.AccountReply, error) {
	d := serverkit.Delay{SleepMS: req.GetSleepMs(), WorkMS: req.GetWorkMs()}
	a, err := b.h.Debit(ctx, callName(ctx), req.GetAccount(), req.GetAmount(), d)
	return reply(a, err)
}

func (b *bankServer) Echo(ctx context.Context, req *bankpb.EchoRequest) (*bankpb.EchoReply, error) {
	b.h.Echo(ctx, callName(ctx))
	return &bankpb.EchoReply{Payload: req.GetPayload()}, nil
}

// callName is the request's first x-rpcbench-call value, "" without one.
func callName(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get("x-rpcbench-call"); len(v) > 0 {
		return v[0]
	}
	return ""
}

// grpcCodes maps every code of a serverkit.Status to grpc-go's.
var grpcCodes = map[serverkit.Code]codes.Code{
	serverkit.Canceled:         codes.Canceled,
	serverkit.DeadlineExceeded: codes.DeadlineExceeded,
	serverkit.InvalidArgument:  codes.InvalidArgument,
}

func reply(a serverkit.Account, err error) (*bankpb.AccountReply, error) {
	if st, ok := errors.AsType[*serverkit.Status](err); ok {
		return nil, status.Error(grpcCodes[st.Code], st.Message)
	} else if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &bankpb.AccountReply{Account: a.Account, Balance: a.Balance, Exec: a.Exec, BudgetMs: a.BudgetMS}, nil
}

// serverStack is grpc-go's server for serverkit.
var serverStack = serverkit.Stack{Name: "grpc-go", Version: grpc.Version, New: newServer}

// newServer is grpc.NewServer with no options, serving the Bank, and
// server reflection, as a service of a user's may: rpcbench target reads
// the Bank's schema from it, as it would theirs. Reflection is a service
// beside the Bank; the Bank's handlers and the server's options are
// untouched.
func newServer(h *serverkit.Handlers, _ *log.Logger) (serverkit.Server, error) {
	s := grpc.NewServer()
	bankpb.RegisterBankServer(s, &bankServer{h: h})
	reflection.Register(s)
	return &server{s}, nil
}

// server is a grpc.Server.
type server struct{ s *grpc.Server }

// Serve serves ln until Shutdown or Close. A shutdown that comes before
// Serve has started makes it return grpc.ErrServerStopped at once: that
// is a server stopped as asked, not an error.
func (sv *server) Serve(ln net.Listener) error {
	if err := sv.s.Serve(ln); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("grpc.Server.Serve: %w", err)
	}
	return nil
}

// Shutdown runs GracefulStop, which cannot be interrupted: if ctx ends
// first it returns, and Close's Stop makes GracefulStop return.
func (sv *server) Shutdown(ctx context.Context) error {
	done := make(chan struct{})
	go func() { sv.s.GracefulStop(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (sv *server) Close() { sv.s.Stop() }
