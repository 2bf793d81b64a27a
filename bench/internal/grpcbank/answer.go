package grpcbank

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/rpcbench/rpcbench/adapters/gokit/bankpb"
)

// ErrAnswer is wrapped by the errors of ParseAnswer.
var ErrAnswer = errors.New("grpcbank: malformed answer")

// asciiSpace is the white space that separates the bank's payload and
// answer fields: an account holding any of it cannot be written as
// payload text.
const asciiSpace = " \t\n\v\f\r"

func isASCIISpace(r rune) bool { return strings.ContainsRune(asciiSpace, r) }

// ParseAnswer decodes the bank's OK answer to a get, "account=A
// balance=N budget=N exec=N replayed=B" (internal/bank), into the reply
// message rpcserver -grpc sends for it: the same five fields, as
// internal/grpcwire's appendReply maps them. Any other field, or one
// that is not key=value, is an error.
func ParseAnswer(answer []byte) (*bankpb.AccountReply, error) {
	var r bankpb.AccountReply
	// The bank separates its fields with ASCII white space only: an
	// account may hold other spaces.
	for _, tok := range bytes.FieldsFunc(answer, isASCIISpace) {
		k, v, ok := bytes.Cut(tok, []byte("="))
		if !ok {
			return nil, fmt.Errorf("%w: %q: %q is not key=value", ErrAnswer, answer, tok)
		}
		var err error
		switch string(k) {
		case "account":
			r.Account = string(v)
		case "balance":
			r.Balance, err = strconv.ParseInt(string(v), 10, 64)
		case "budget":
			r.BudgetMs, err = strconv.ParseInt(string(v), 10, 64)
		case "exec":
			r.Exec, err = strconv.ParseInt(string(v), 10, 64)
		case "replayed":
			r.Replayed, err = strconv.ParseBool(string(v))
		default:
			err = errors.New("unknown field")
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %q: field %q: %w", ErrAnswer, answer, tok, err)
		}
	}
	return &r, nil
}

// AppendAnswer appends r in the bank's answer text, the inverse of
// ParseAnswer: "account=A balance=N budget=N exec=N replayed=B", the
// fields in rpcserver's order.
func AppendAnswer(dst []byte, r *bankpb.AccountReply) []byte {
	dst = append(dst, "account="...)
	dst = append(dst, r.GetAccount()...)
	dst = append(dst, " balance="...)
	dst = strconv.AppendInt(dst, r.GetBalance(), 10)
	dst = append(dst, " budget="...)
	dst = strconv.AppendInt(dst, r.GetBudgetMs(), 10)
	dst = append(dst, " exec="...)
	dst = strconv.AppendInt(dst, r.GetExec(), 10)
	dst = append(dst, " replayed="...)
	return strconv.AppendBool(dst, r.GetReplayed())
}
