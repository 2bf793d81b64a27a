package bank

import (
	"crypto/sha256"
	"errors"
	"time"

	"github.com/rpcbench/rpcbench/internal/proto"
)

// Account is an account's state.
type Account struct {
	Balance int64
	// Debits counts the debits executed on the account.
	Debits int64
}

// Answer is the outcome of an executed request, as stored under an
// idempotency key and replayed to the key's duplicates.
type Answer struct {
	Status proto.Status
	// Msg is the payload when Status is not OK.
	Msg string
	// The fields of an OK answer.
	Account string
	Balance int64
	Debits  int64
	Budget  uint32
}

// Fingerprint identifies what a keyed request asks for: its method and
// payload. A key reused with another fingerprint is refused.
type Fingerprint [sha256.Size]byte

// ClaimState is what Store.Claim found under a key.
type ClaimState uint8

// Claim results.
const (
	// ClaimTaken: the key was free and is now the caller's. The caller
	// executes the request and must then record its answer, by Debit with
	// the key or by Finish, or give the key up with Release.
	ClaimTaken ClaimState = iota + 1
	// ClaimDone: a request with the key was executed; its answer is
	// returned.
	ClaimDone
	// ClaimRunning: a request with the key is executing; Await its answer.
	ClaimRunning
	// ClaimConflict: the key was used by a request with another
	// fingerprint.
	ClaimConflict
)

// Errors a Store returns.
var (
	// ErrInsufficientFunds: Debit found the balance below the amount and
	// changed nothing.
	ErrInsufficientFunds = errors.New("insufficient funds")
	// ErrAwaitExpired: Await's deadline came before the answer.
	ErrAwaitExpired = errors.New("bank: original request with this key still executing")
	// ErrClosing: Await gave up because the server is closing.
	ErrClosing = errors.New("bank: server closing")
	// ErrReleased: the request Await waited for gave its key up
	// unexecuted; the key may be claimed again.
	ErrReleased = errors.New("bank: key released")
	// ErrLeaseLost: the claim's lease expired and another request took
	// the key over; Debit or Finish changed nothing.
	ErrLeaseLost = errors.New("bank: lease on the key was taken over")
	// ErrCommitUnknown: Debit's commit failed without saying whether it
	// took effect (a connection lost during COMMIT). The key, if any, is
	// left running: a retry finds its answer if the commit happened, or
	// takes it over once its lease expires if not.
	ErrCommitUnknown = errors.New("bank: commit outcome unknown")
)

// Hold is a claim on an idempotency key: the key and the token of the
// claim that took it. A durable store commits a keyed debit only while
// that claim still holds the key, so an executor whose lease was taken
// over cannot commit a second execution. The zero Hold is no key.
type Hold struct {
	Key   string
	Token uint64
}

// Claimed is what Store.Claim found or took.
type Claimed struct {
	State ClaimState
	// Answer is set for ClaimDone.
	Answer Answer
	// Hold is set for ClaimTaken: the caller's claim on the key.
	Hold Hold
}

// Hooks are called by a store during a keyed debit, for fault injection:
// BeforeCommit once the debit and its record are written but not
// committed, AfterCommit once both are committed and before Debit
// returns. Nil hooks are skipped.
type Hooks struct {
	BeforeCommit, AfterCommit func()
	// AwaitWaiting is called each time Await, having found the key's
	// request still running, starts to wait for it: a test's way to know
	// that a waiter is waiting before the original gives its key up.
	AwaitWaiting func()
}

// Store keeps the accounts and the idempotency records. Its methods are
// safe for concurrent use. A store whose records are durable must commit
// a keyed debit's balance change and its record in one transaction, so
// that a crash leaves both or neither.
type Store interface {
	// Get returns the account's state; an account never debited has
	// DefaultBalance. account is not retained.
	Get(account []byte) (Account, error)
	// Debit takes amount from the account and returns its state after.
	// When h is not the zero Hold, the answer ans builds from that state
	// is recorded under h.Key in the same transaction, which commits only
	// while h still holds the key: otherwise nothing changes and Debit
	// returns ErrLeaseLost. A balance below amount returns
	// ErrInsufficientFunds and changes nothing. account is not retained.
	Debit(account []byte, amount int64, h Hold, ans func(Account) Answer) (Account, error)
	// Claim takes key for a request with fingerprint fp, or reports what
	// holds it.
	Claim(key string, fp Fingerprint) (Claimed, error)
	// Finish records ans under the held key, or returns ErrLeaseLost when
	// h no longer holds it. Only the caller that claimed the key may call
	// it, once.
	Finish(h Hold, ans Answer) error
	// Release gives up the held key without recording an answer: the
	// request was not executed, or its answer could not be recorded. Only
	// the caller that claimed the key may call it, instead of Finish.
	Release(h Hold) error
	// Await waits, until the deadline or until done is closed, for the
	// answer of the running request with key and fingerprint fp. It
	// returns ErrReleased when that request gave the key up, when its
	// lease expired (the key may be taken over), or when the key is now
	// held by another fingerprint: the caller claims again.
	Await(key string, fp Fingerprint, deadline time.Time, done <-chan struct{}) (Answer, error)
}
