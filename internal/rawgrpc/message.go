package rawgrpc

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// The Bank's messages (proto/rpcbench/bank/v1/bank.proto), encoded and
// decoded by hand: the client sends them as bytes it controls.

// GetRequest encodes a GetRequest; a zero sleepMs or workMs is left
// out, as proto3 encoders leave it out.
func GetRequest(account string, sleepMs, workMs int64) []byte {
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	b = protowire.AppendString(b, account)
	b = appendInt(b, 2, sleepMs)
	return appendInt(b, 3, workMs)
}

// DebitRequest encodes a DebitRequest, as GetRequest does.
func DebitRequest(account string, amount, sleepMs, workMs int64) []byte {
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	b = protowire.AppendString(b, account)
	b = appendInt(b, 2, amount)
	b = appendInt(b, 3, sleepMs)
	return appendInt(b, 4, workMs)
}

// EchoRequest encodes an EchoRequest.
func EchoRequest(payload []byte) []byte {
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	return protowire.AppendBytes(b, payload)
}

func appendInt(b []byte, num protowire.Number, v int64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(v))
}

// AccountReply is a decoded AccountReply.
type AccountReply struct {
	Account  string
	Balance  int64
	Exec     int64
	Replayed bool
	BudgetMs int64
}

// DecodeAccountReply decodes an AccountReply; unknown fields are
// skipped, as protobuf's rules say.
func DecodeAccountReply(b []byte) (AccountReply, error) {
	var r AccountReply
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return r, fmt.Errorf("rawgrpc: AccountReply: %w", protowire.ParseError(n))
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.BytesType:
			s, m := protowire.ConsumeString(b)
			if m < 0 {
				return r, fmt.Errorf("rawgrpc: AccountReply.account: %w", protowire.ParseError(m))
			}
			r.Account, n = s, m
		case num >= 2 && num <= 5 && typ == protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return r, fmt.Errorf("rawgrpc: AccountReply field %d: %w", num, protowire.ParseError(m))
			}
			switch num {
			case 2:
				r.Balance = int64(v)
			case 3:
				r.Exec = int64(v)
			case 4:
				r.Replayed = v != 0
			case 5:
				r.BudgetMs = int64(v)
			}
			n = m
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return r, fmt.Errorf("rawgrpc: AccountReply field %d: %w", num, protowire.ParseError(n))
			}
		}
		b = b[n:]
	}
	return r, nil
}

// Reply is the result's one AccountReply: an error unless the server
// answered OK with exactly one message that decodes.
func (r Result) Reply() (AccountReply, error) {
	if !r.HasCode || r.Code != 0 {
		return AccountReply{}, fmt.Errorf("rawgrpc: the call ended %s, not OK", r.Outcome())
	}
	if r.BadBody != "" || len(r.Messages) != 1 {
		return AccountReply{}, fmt.Errorf("rawgrpc: an OK answer with %d messages (%s), want 1", len(r.Messages), r.BadBody)
	}
	return DecodeAccountReply(r.Messages[0])
}
