package bank

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/rpcbench/rpcbench/internal/proto"
)

// args are the fields of a get or debit payload.
type args struct {
	account       []byte // aliases the payload
	amount, sleep int64
	hasSleep      bool // the payload has a sleep field, maybe 0
	// work is the work field: milliseconds the handler spends, after
	// any sleep, without looking at the request's Done.
	work int64
}

var errAmount = errors.New("amount must be a positive integer")

// parseArgs reads the key=value pairs of a business payload, separated by
// ASCII white space, without allocating. A later pair overrides an
// earlier one with the same key; unknown keys are ignored.
func parseArgs(p []byte) (args, error) {
	var a args
	for len(p) > 0 {
		var tok []byte
		if i := bytes.IndexAny(p, " \t\n\v\f\r"); i >= 0 {
			tok, p = p[:i], p[i+1:]
		} else {
			tok, p = p, nil
		}
		if len(tok) == 0 {
			continue
		}
		k, v, ok := bytes.Cut(tok, []byte("="))
		if !ok || len(k) == 0 {
			return a, fmt.Errorf("bank: %q is not key=value", tok)
		}
		switch string(k) {
		case "account":
			a.account = v
		case "amount":
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil {
				return a, errAmount
			}
			a.amount = n
		case "sleep":
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil {
				return a, fmt.Errorf("bank: field %s=%q is not an integer", k, v)
			}
			a.sleep, a.hasSleep = n, true
		case "work":
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil {
				return a, fmt.Errorf("bank: field %s=%q is not an integer", k, v)
			}
			a.work = n
		}
	}
	return a, nil
}

// check applies the rules parseArgs cannot: an account is required, and a
// debit needs a positive amount.
func (a *args) check(method string) error {
	if len(a.account) == 0 {
		return errors.New("account is required")
	}
	if method == MethodDebit && a.amount <= 0 {
		return errAmount
	}
	return nil
}

// appendPayload appends the answer's payload to dst: the message when
// the status is not OK, otherwise as appendOK.
func (ans *Answer) appendPayload(dst []byte, replayed bool) []byte {
	if ans.Status != proto.StatusOK {
		return append(dst, ans.Msg...)
	}
	return appendOK(dst, ans.Account, Account{Balance: ans.Balance, Debits: ans.Debits}, ans.Budget, replayed)
}

// appendOK appends an OK answer's payload,
// "account=A balance=N budget=N exec=N replayed=B" (keys sorted).
func appendOK[S string | []byte](dst []byte, account S, a Account, budget uint32, replayed bool) []byte {
	dst = append(dst, "account="...)
	dst = append(dst, account...)
	dst = append(dst, " balance="...)
	dst = strconv.AppendInt(dst, a.Balance, 10)
	dst = append(dst, " budget="...)
	dst = strconv.AppendUint(dst, uint64(budget), 10)
	dst = append(dst, " exec="...)
	dst = strconv.AppendInt(dst, a.Debits, 10)
	dst = append(dst, " replayed="...)
	dst = strconv.AppendBool(dst, replayed)
	return dst
}
