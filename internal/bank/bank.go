// Package bank is the business the rpcserver serves: accounts with get and
// debit, their payload grammar, and exactly-once execution of keyed
// requests, over a Store.
package bank

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/transport"
)

// Business methods.
const (
	MethodGet   = "get"
	MethodDebit = "debit"
	// MethodEcho answers its payload unchanged and touches no account:
	// the benchmark's payload-size rows measure the transport with it.
	// It takes no idempotency key, having nothing to record.
	MethodEcho = "echo"
)

// ErrEchoKey is the text of the INVALID_ARGUMENT answer to an echo that
// carries an idempotency key.
const ErrEchoKey = "echo takes no idempotency key"

// DefaultBalance is every account's balance before its first debit.
const DefaultBalance = 1000

// ErrKeyReused is the text of the INVALID_ARGUMENT answer to a request
// that reuses an idempotency key with a different method or payload.
const ErrKeyReused = "idempotency key reused with different request"

// Bank executes get and debit over a Store. It is a transport.Handler.
type Bank struct {
	store Store
	log   *slog.Logger

	execGet, execDebit, execEcho, dedupHits, keyConflicts atomic.Int64
}

var _ transport.Handler = (*Bank)(nil)

// New returns a Bank over store that logs its events (dedup hits, key
// conflicts, expired waits) to log; nil discards them.
func New(store Store, log *slog.Logger) *Bank {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Bank{store: store, log: log}
}

// Methods implements transport.Handler.
func (b *Bank) Methods() []string { return []string{MethodGet, MethodDebit, MethodEcho} }

// MayBlock implements transport.Handler: a keyed request may wait for its
// original, one with a sleep field may sleep, and one with a work field
// works. A sleep field counts
// whatever its value, so sleep=0 is how a caller sends a request through
// the server's queue without slowing it down.
func (b *Bank) MayBlock(r *transport.Request) bool {
	if r.Method == MethodEcho {
		// Never blocks, keyed or not (a keyed echo is refused at once),
		// and its payload, up to 64 KiB, is not the bank's to scan.
		return false
	}
	if r.Key != "" {
		return true
	}
	// Without either word there is no sleep or work field: most
	// requests are answered here without parsing their payload twice.
	if !bytes.Contains(r.Payload, []byte("sleep")) && !bytes.Contains(r.Payload, []byte("work")) {
		return false
	}
	a, err := parseArgs(r.Payload)
	return err == nil && (a.hasSleep || a.work > 0)
}

// Counters implements transport.Handler.
func (b *Bank) Counters(add func(string, int64)) {
	add("exec.get", b.execGet.Load())
	add("exec.debit", b.execDebit.Load())
	add("exec.echo", b.execEcho.Load())
	add("dedup_hits", b.dedupHits.Load())
	add("key_conflicts", b.keyConflicts.Load())
}

// Execute implements transport.Handler. A request without a key executes. The
// first request with a key executes and its answer is recorded; a
// duplicate with the same fingerprint gets that answer, waiting for it at
// most until its own budget ends; one with another fingerprint is refused.
func (b *Bank) Execute(r *transport.Request, dst []byte) (proto.Status, []byte) {
	if r.Method == MethodEcho {
		if r.Key != "" {
			return proto.StatusInvalidArgument, append(dst, ErrEchoKey...)
		}
		b.execEcho.Add(1)
		// The request's own memory, not a copy: the transport writes a
		// large echo from where it lies.
		return proto.StatusOK, r.Payload
	}
	if r.Key == "" {
		return b.apply(r, Hold{}, dst)
	}
	fp := fingerprint(r)
	for {
		c, err := b.store.Claim(r.Key, fp)
		if err != nil {
			return proto.StatusUnavailable, append(dst, err.Error()...)
		}
		ans := c.Answer
		switch c.State {
		case ClaimTaken:
			if b.log.Enabled(context.Background(), slog.LevelDebug) {
				b.log.Debug(serverapi.EventClaim, serverapi.KeyID, r.ID, serverapi.KeyKey, r.Key)
			}
			return b.apply(r, c.Hold, dst)
		case ClaimConflict:
			b.keyConflicts.Add(1)
			b.log.Warn(serverapi.EventKeyConflict, serverapi.KeyID, r.ID, serverapi.KeyKey, r.Key)
			return proto.StatusInvalidArgument, append(dst, ErrKeyReused...)
		case ClaimRunning:
			ans, err = b.store.Await(r.Key, fp, r.Expiry, r.Done)
			switch {
			case errors.Is(err, ErrReleased):
				continue
			case errors.Is(err, ErrAwaitExpired):
				b.log.Warn(serverapi.EventDedupWaitExpired, serverapi.KeyID, r.ID, serverapi.KeyKey, r.Key)
				return proto.StatusDeadlineExceeded, append(dst, "original request with this key still executing"...)
			case errors.Is(err, ErrClosing):
				return proto.StatusUnavailable, append(dst, "server closing"...)
			case err != nil:
				return proto.StatusUnavailable, append(dst, err.Error()...)
			}
		}
		b.dedupHits.Add(1)
		b.log.Info(serverapi.EventDedupHit, serverapi.KeyID, r.ID, serverapi.KeyKey, r.Key)
		return ans.Status, ans.appendPayload(dst, ans.Status == proto.StatusOK)
	}
}

// apply executes a get or debit; with a key, which the caller holds, it
// records the answer.
func (b *Bank) apply(r *transport.Request, key Hold, dst []byte) (proto.Status, []byte) {
	a, err := parseArgs(r.Payload)
	if err == nil {
		err = a.check(r.Method)
	}
	if err != nil {
		return b.refuse(r, key, Answer{Status: proto.StatusInvalidArgument, Msg: err.Error()}, dst)
	}
	if !r.Sleep(time.Duration(a.sleep) * time.Millisecond) {
		b.release(r, key)
		return proto.StatusUnavailable, append(dst, "server closing"...)
	}
	if a.work > 0 {
		// A step that takes no Done: it runs to its end, whatever
		// happened to the request meanwhile.
		time.Sleep(time.Duration(a.work) * time.Millisecond)
	}
	var acct Account
	if r.Method == MethodDebit {
		var ans func(Account) Answer // only a keyed debit pays for the closure
		if key.Key != "" {
			// Capture a copy: capturing a itself, whose address check
			// takes, would move a to the heap on every call.
			account := a.account
			ans = func(acct Account) Answer { return okAnswer(account, acct, r.BudgetMs) }
		}
		acct, err = b.store.Debit(a.account, a.amount, key, ans)
		if errors.Is(err, ErrInsufficientFunds) {
			b.logExec(r, a.account, proto.StatusAppError)
			return b.refuse(r, key, Answer{Status: proto.StatusAppError, Msg: err.Error()}, dst)
		}
		if err == nil {
			b.execDebit.Add(1)
		}
	} else {
		acct, err = b.store.Get(a.account)
		if err == nil {
			b.execGet.Add(1)
			if key.Key != "" {
				err = b.store.Finish(key, okAnswer(a.account, acct, r.BudgetMs))
			}
		}
	}
	if err != nil {
		// Unless the commit's outcome is unknown, nothing was recorded:
		// a debit's transaction did not commit, and a get changes
		// nothing. Give the key back so that a retry is not left waiting
		// for an answer that never comes, unless another request took
		// it over.
		switch {
		case errors.Is(err, ErrCommitUnknown):
			// It may have executed: no answer, and the key stays
			// claimed until its lease ends, so that a retry either
			// finds the committed answer or takes the key over.
			b.log.Error(serverapi.EventStoreError, serverapi.KeyID, r.ID, serverapi.KeyKey, key.Key, serverapi.KeyErr, err.Error())
			return proto.StatusUnknown, dst
		case errors.Is(err, ErrLeaseLost):
			b.log.Warn(serverapi.EventLeaseLost, serverapi.KeyID, r.ID, serverapi.KeyKey, key.Key)
		default:
			b.release(r, key)
		}
		return proto.StatusUnavailable, append(dst, err.Error()...)
	}
	b.logExec(r, a.account, proto.StatusOK)
	return proto.StatusOK, appendOK(dst, a.account, acct, r.BudgetMs, false)
}

// logExec logs an EXEC event, at debug level, for a request that reached
// the store: counting the OK debits of an account in the log counts its
// executions. Checked first, so that a server not logging them pays no
// allocation per request.
func (b *Bank) logExec(r *transport.Request, account []byte, st proto.Status) {
	if !b.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	if a := r.Attempt; a != nil {
		b.log.Debug(serverapi.EventExec, serverapi.KeyConn, r.Conn, serverapi.KeyID, r.ID, serverapi.KeyMethod, r.Method,
			serverapi.KeyKey, r.Key, serverapi.KeyAccount, string(account), serverapi.KeyStatus, st.String(),
			serverapi.KeyWire, a.Wire, serverapi.KeyStream, a.Stream, serverapi.KeyCall, a.Call, serverapi.KeyAttempt, a.N,
			serverapi.KeyPrev, a.Prev, serverapi.KeyGRPCTimeout, a.Timeout, serverapi.KeyBudget, a.BudgetMs)
		return
	}
	b.log.Debug(serverapi.EventExec, serverapi.KeyConn, r.Conn, serverapi.KeyID, r.ID, serverapi.KeyMethod, r.Method,
		serverapi.KeyKey, r.Key, serverapi.KeyAccount, string(account), serverapi.KeyStatus, st.String())
}

// release gives up a claimed key, if there is one. A store that cannot
// release it is logged: its duplicates then wait out their budgets.
func (b *Bank) release(r *transport.Request, key Hold) {
	if key.Key == "" {
		return
	}
	if err := b.store.Release(key); err != nil {
		b.log.Error(serverapi.EventStoreError, serverapi.KeyID, r.ID, serverapi.KeyKey, key.Key, serverapi.KeyErr, err.Error())
	}
}

// refuse answers a request that executed to a refusal, recording the
// refusal under key when there is one, so that duplicates get it too. A
// refusal changed nothing, so if it cannot be recorded the key is given
// back and a duplicate executes to the same refusal.
func (b *Bank) refuse(r *transport.Request, key Hold, ans Answer, dst []byte) (proto.Status, []byte) {
	if key.Key != "" {
		if err := b.store.Finish(key, ans); err != nil {
			b.log.Error(serverapi.EventStoreError, serverapi.KeyID, r.ID, serverapi.KeyKey, key.Key, serverapi.KeyErr, err.Error())
			if !errors.Is(err, ErrLeaseLost) {
				b.release(r, key)
			}
		}
	}
	return ans.Status, ans.appendPayload(dst, false)
}

func okAnswer(account []byte, a Account, budget uint32) Answer {
	return Answer{Status: proto.StatusOK, Account: string(account), Balance: a.Balance, Debits: a.Debits, Budget: budget}
}

func fingerprint(r *transport.Request) Fingerprint {
	h := sha256.New()
	h.Write([]byte(r.Method))
	h.Write([]byte{0})
	h.Write(r.Payload)
	var sum Fingerprint
	h.Sum(sum[:0])
	return sum
}
