// Package workload is what the benchmarked systems are asked: the get of
// one of 64 accounts that every system answers with the same text
// rpcserver sends, and the debits only rpcserver serves. The driver takes
// requests and answer checks from here; the peer servers (grpc, net/rpc)
// take the server-side work of a get from here, so every system parses,
// looks up and formats the same thing.
package workload

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"sync"
)

// Accounts is how many accounts the workload spreads its calls over.
const Accounts = 64

// DefaultBalance is every account's balance before its first debit; it
// matches rpcserver's bank.DefaultBalance. The get workload never debits.
const DefaultBalance = 1000

// BudgetMs is the budget the peer servers print in their answer. rpcserver
// prints the budget the client sent, which for the driver's 5s attempt
// timeout is about 5000, so the answers have the same length.
const BudgetMs = 5000

// Account returns the name of account i (taken modulo Accounts).
func Account(i int) string { return "acct-" + strconv.Itoa(i%Accounts) }

// Requests returns the payload of a get of each account, indexed by
// account number: "account=acct-17" for account 17. The driver builds them
// once so that building a request costs nothing inside the measured phase.
func Requests() [][]byte {
	out := make([][]byte, Accounts)
	for i := range out {
		out[i] = []byte("account=" + Account(i))
	}
	return out
}

// ErrWrongAnswer is wrapped by Check's errors.
var ErrWrongAnswer = errors.New("workload: wrong answer")

// Check reports whether resp answers req: resp must start with req's
// "account=NAME" and either end there (the raw echo) or go on with a space
// (every other system). It does not allocate unless the answer is wrong.
func Check(req, resp []byte) error {
	if bytes.HasPrefix(resp, req) && (len(resp) == len(req) || resp[len(req)] == ' ') {
		return nil
	}
	return fmt.Errorf("%w: asked %q, got %.80q", ErrWrongAnswer, req, resp)
}

// ErrBadRequest is wrapped by the errors Store.Get returns.
var ErrBadRequest = errors.New("workload: bad request")

// Store is the peers' account table: the server-side work of one get is a
// parse of the key=value payload, a locked map lookup and a formatted
// answer. A Store is safe for concurrent use.
type Store struct {
	mu      sync.Mutex // guards balance
	balance map[string]int64
}

// NewStore returns a Store holding the workload's accounts at
// DefaultBalance.
func NewStore() *Store {
	s := &Store{balance: make(map[string]int64, Accounts)}
	for i := range Accounts {
		s.balance[Account(i)] = DefaultBalance
	}
	return s
}

// Get answers a get payload such as "account=acct-17" with
// "account=acct-17 balance=1000 budget=5000 exec=0 replayed=false", the
// fields rpcserver sends, in the same order. The answer is a new slice
// the caller owns.
func (s *Store) Get(req []byte) ([]byte, error) {
	name, ok := field(req, "account")
	if !ok || len(name) == 0 {
		return nil, fmt.Errorf("%w: account is required", ErrBadRequest)
	}
	s.mu.Lock()
	bal, ok := s.balance[string(name)] // no allocation: the compiler sees the lookup
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: unknown account %q", ErrBadRequest, name)
	}
	out := make([]byte, 0, 64)
	out = append(out, "account="...)
	out = append(out, name...)
	out = append(out, " balance="...)
	out = strconv.AppendInt(out, bal, 10)
	out = append(out, " budget="...)
	out = strconv.AppendInt(out, BudgetMs, 10)
	out = append(out, " exec=0 replayed=false"...)
	return out, nil
}

// field returns the value of key in a space-separated key=value payload.
func field(p []byte, key string) ([]byte, bool) {
	for len(p) > 0 {
		var tok []byte
		tok, p, _ = bytes.Cut(p, []byte{' '})
		k, v, ok := bytes.Cut(tok, []byte{'='})
		if ok && string(k) == key {
			return v, true
		}
	}
	return nil, false
}
