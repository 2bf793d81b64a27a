package workload

import (
	"bytes"
	"fmt"
	"strconv"
)

// DebitAmount is what every debit of the debit workload takes.
const DebitAmount = 1

// DebitsPerAccount is how many debits the debit workload makes on one
// account: exactly as many as DefaultBalance allows, so that the last one
// leaves it at 0 and none is refused for insufficient funds.
const DebitsPerAccount = DefaultBalance / DebitAmount

// DebitAccount returns the number of the account that debit seq (counted
// from 0 over a server's whole life) goes to. Debits go round-robin over a
// lane of Accounts accounts, so that concurrent debits touch different
// accounts, as concurrent clients of a bank mostly do; once every account
// of a lane has had DebitsPerAccount debits, the next lane of Accounts
// fresh accounts takes over. Debits 0..63 go to accounts 0..63, debit
// 64000 to account 64.
func DebitAccount(seq int64) int64 {
	const lane = Accounts * DebitsPerAccount
	return seq/lane*Accounts + seq%Accounts
}

// AppendDebit appends the payload of debit seq to dst:
// "account=acct-N amount=1", N being DebitAccount(seq).
func AppendDebit(dst []byte, seq int64) []byte {
	dst = append(dst, "account=acct-"...)
	dst = strconv.AppendInt(dst, DebitAccount(seq), 10)
	dst = append(dst, " amount="...)
	return strconv.AppendInt(dst, DebitAmount, 10)
}

// CheckDebit reports whether resp answers the debit req, a payload
// AppendDebit made: resp must be rpcserver's OK answer for req's account,
// "account=acct-N balance=B budget=T exec=D replayed=R", with B >= 0 and
// B + D*DebitAmount = DefaultBalance, since every debit of the account
// took DebitAmount and D counts them. It does not allocate unless the
// answer is wrong.
func CheckDebit(req, resp []byte) error {
	account, _, _ := bytes.Cut(req, []byte{' '})
	if !bytes.HasPrefix(resp, account) || len(resp) == len(account) || resp[len(account)] != ' ' {
		return fmt.Errorf("%w: asked %q, got %.80q", ErrWrongAnswer, req, resp)
	}
	bal, ok1 := intField(resp, "balance")
	exec, ok2 := intField(resp, "exec")
	if !ok1 || !ok2 || bal < 0 || bal+exec*DebitAmount != DefaultBalance {
		return fmt.Errorf("%w: asked %q, got %.80q: want balance >= 0 and balance + exec*%d = %d",
			ErrWrongAnswer, req, resp, DebitAmount, DefaultBalance)
	}
	return nil
}

// intField returns the integer value of key in a key=value payload.
func intField(p []byte, key string) (int64, bool) {
	v, ok := field(p, key)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(string(v), 10, 64) // no allocation: the compiler sees the conversion
	return n, err == nil
}
