package grpcbank

import (
	"context"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/rpcbench/rpcbench/adapters/gokit/bankpb"
	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/transport"
)

// NewServer returns a grpc-go server, default options, whose Bank
// service answers Get on a fresh internal/bank handler over the in-memory
// store, the handler and store rpcserver -grpc runs by default. Debit and
// Echo are left unimplemented: the rows make gets only.
func NewServer() *grpc.Server {
	s := grpc.NewServer()
	bankpb.RegisterBankServer(s, &service{h: bank.New(bank.NewMemory(), nil)})
	return s
}

// service is the Bank service on the bank's handler.
type service struct {
	bankpb.UnimplementedBankServer
	h   *bank.Bank
	ids atomic.Uint64 // request ids, as the handler's log events name them
}

// noBudget is the expiry of a request without a deadline: never, in
// practice, as rpcserver -grpc's is.
const noBudget = 100 * 365 * 24 * time.Hour

// Get does what rpcserver -grpc does with a GetRequest (internal/grpcwire):
// the request becomes the bank's payload text, the handler executes it
// with the request's deadline as its budget, and its answer text becomes
// the AccountReply; a refusal is the gRPC status the fault server maps
// it to. grpc-go owns decoding, encoding and the transport.
func (s *service) Get(ctx context.Context, in *bankpb.GetRequest) (*bankpb.AccountReply, error) {
	account := in.GetAccount()
	if strings.ContainsAny(account, asciiSpace) {
		return nil, status.Errorf(codes.InvalidArgument, "grpcbank: account %q holds white space", account)
	}
	payload := make([]byte, 0, 32)
	payload = append(payload, "account="...)
	payload = append(payload, account...)
	if ms := in.GetSleepMs(); ms != 0 {
		payload = append(payload, " sleep="...)
		payload = strconv.AppendInt(payload, ms, 10)
	}
	req := transport.Request{
		ID: s.ids.Add(1), Method: bank.MethodGet, Payload: payload,
		BudgetMs: math.MaxUint32, Expiry: time.Now().Add(noBudget),
		// The call's end, the client's cancel or the server's stop: a
		// sleeping get stops then, as it does on the fault server.
		Done: ctx.Done(),
	}
	if dl, ok := ctx.Deadline(); ok {
		req.BudgetMs = uint32(min(max(time.Until(dl).Milliseconds(), 0), math.MaxUint32))
		req.Expiry = dl
	}
	st, answer := s.h.Execute(&req, nil)
	if st != proto.StatusOK {
		return nil, status.Error(code(st), string(answer))
	}
	r, err := ParseAnswer(answer)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return r, nil
}

// code maps the handler's status to the gRPC code, as rpcserver -grpc
// does (internal/grpcwire/SPEC.md, Answers).
func code(st proto.Status) codes.Code {
	switch st {
	case proto.StatusOK:
		return codes.OK
	case proto.StatusAppError:
		return codes.FailedPrecondition
	case proto.StatusInvalidArgument:
		return codes.InvalidArgument
	case proto.StatusDeadlineExceeded:
		return codes.DeadlineExceeded
	case proto.StatusUnavailable:
		return codes.Unavailable
	}
	return codes.Unknown
}
