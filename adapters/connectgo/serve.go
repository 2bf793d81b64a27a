package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"

	"connectrpc.com/connect"

	"github.com/rpcbench/rpcbench/adapters/gokit/bankpb"
	"github.com/rpcbench/rpcbench/adapters/gokit/bankpb/bankpbconnect"
	"github.com/rpcbench/rpcbench/adapters/gokit/serverkit"
)

// serverStack is connect-go's server for serverkit.
var serverStack = serverkit.Stack{Name: "connect-go", Version: connect.Version, New: newServer}

// newServer is connect-go's generated Bank handler, with its default
// options (which accept gRPC, gRPC-Web and Connect), in an http.Server
// speaking only unencrypted HTTP/2 with prior knowledge: what cleartext
// gRPC requires, and nothing else of the adapter's.
func newServer(h *serverkit.Handlers, logger *log.Logger) (serverkit.Server, error) {
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	mux := http.NewServeMux()
	mux.Handle(bankpbconnect.NewBankHandler(&bankHandler{h: h}))
	return &server{&http.Server{Handler: mux, Protocols: &protocols, ErrorLog: logger}}, nil
}

// server is an http.Server.
type server struct{ s *http.Server }

func (sv *server) Serve(ln net.Listener) error {
	if err := sv.s.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("http.Server.Serve: %w", err)
	}
	return nil
}

func (sv *server) Shutdown(ctx context.Context) error { return sv.s.Shutdown(ctx) }
func (sv *server) Close()                             { sv.s.Close() }

// bankHandler is the Bank service as connect-go's generated interface.
type bankHandler struct {
	h *serverkit.Handlers
}

func (b *bankHandler) Get(ctx context.Context, req *connect.Request[bankpb.GetRequest]) (*connect.Response[bankpb.AccountReply], error) {
	d := serverkit.Delay{SleepMS: req.Msg.GetSleepMs(), WorkMS: req.Msg.GetWorkMs()}
	a, err := b.h.Get(ctx, callName(req), req.Msg.GetAccount(), d)
	return reply(a, err)
}

func (b *bankHandler) Debit(ctx context.Context, req *connect.Request[bankpb.DebitRequest]) (*connect.Response[bankpb.AccountReply], error) {
	d := serverkit.Delay{SleepMS: req.Msg.GetSleepMs(), WorkMS: req.Msg.GetWorkMs()}
	a, err := b.h.Debit(ctx, callName(req), req.Msg.GetAccount(), req.Msg.GetAmount(), d)
	return reply(a, err)
}

func (b *bankHandler) Echo(ctx context.Context, req *connect.Request[bankpb.EchoRequest]) (*connect.Response[bankpb.EchoReply], error) {
	b.h.Echo(ctx, callName(req))
	return connect.NewResponse(&bankpb.EchoReply{Payload: req.Msg.GetPayload()}), nil
}

// callName is the request's first x-rpcbench-call value, "" without one.
func callName(req connect.AnyRequest) string {
	return req.Header().Get("x-rpcbench-call")
}

// connectCodes maps every code of a serverkit.Status to connect-go's.
var connectCodes = map[serverkit.Code]connect.Code{
	serverkit.Canceled:         connect.CodeCanceled,
	serverkit.DeadlineExceeded: connect.CodeDeadlineExceeded,
	serverkit.InvalidArgument:  connect.CodeInvalidArgument,
}

func reply(a serverkit.Account, err error) (*connect.Response[bankpb.AccountReply], error) {
	if st, ok := errors.AsType[*serverkit.Status](err); ok {
		return nil, connect.NewError(connectCodes[st.Code], errors.New(st.Message))
	} else if err != nil {
		return nil, connect.NewError(connect.CodeInternal, err)
	}
	return connect.NewResponse(&bankpb.AccountReply{Account: a.Account, Balance: a.Balance, Exec: a.Exec, BudgetMs: a.BudgetMS}), nil
}
