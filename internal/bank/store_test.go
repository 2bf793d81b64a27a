package bank_test

import (
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/proto"
)

// clock is a settable clock for leases and TTLs.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *clock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// storeKind opens a fresh, empty store of one kind.
type storeKind struct {
	name string
	open func(t *testing.T, opts bank.SQLOptions) bank.Store
}

// sqlKinds are the durable stores. PostgreSQL is added by
// postgres_test.go.
var sqlKinds = []storeKind{
	{bank.KindSQLite, func(t *testing.T, opts bank.SQLOptions) bank.Store {
		t.Helper()
		s, err := bank.OpenSQLite(filepath.Join(t.TempDir(), "bank.db"), opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}},
}

func allKinds() []storeKind {
	return append([]storeKind{{bank.KindMemory, func(t *testing.T, opts bank.SQLOptions) bank.Store {
		m := bank.NewMemory()
		m.Hooks = opts.Hooks
		return m
	}}}, sqlKinds...)
}

func claim(t *testing.T, s bank.Store, key string, fp bank.Fingerprint, want bank.ClaimState) bank.Claimed {
	t.Helper()
	c, err := s.Claim(key, fp)
	if err != nil || c.State != want {
		t.Fatalf("Claim(%q) = %v, %v; want %v", key, c.State, err, want)
	}
	return c
}

// TestStoreContract walks one key through the Store contract, on every
// store.
func TestStoreContract(t *testing.T) {
	for _, k := range allKinds() {
		t.Run(k.name, func(t *testing.T) {
			s := k.open(t, bank.SQLOptions{})
			fpA, fpB := bank.Fingerprint{1}, bank.Fingerprint{2}
			never := make(chan struct{})
			soon := func() time.Time { return time.Now().Add(50 * time.Millisecond) }

			a := claim(t, s, "k", fpA, bank.ClaimTaken)
			claim(t, s, "k", fpA, bank.ClaimRunning)
			claim(t, s, "k", fpB, bank.ClaimConflict)
			if _, err := s.Await("k", fpA, soon(), never); !errors.Is(err, bank.ErrAwaitExpired) {
				t.Errorf("Await on a running key past its deadline: %v, want %v", err, bank.ErrAwaitExpired)
			}
			closing := make(chan struct{})
			close(closing)
			if _, err := s.Await("k", fpA, time.Now().Add(time.Hour), closing); !errors.Is(err, bank.ErrClosing) {
				t.Errorf("Await while closing: %v, want %v", err, bank.ErrClosing)
			}

			// Released: a waiter learns it, and the key can be taken
			// again, by another fingerprint too.
			waited := make(chan error, 1)
			go func() {
				_, err := s.Await("k", fpA, time.Now().Add(time.Hour), never)
				waited <- err
			}()
			if err := s.Release(a.Hold); err != nil {
				t.Fatal(err)
			}
			if err := <-waited; !errors.Is(err, bank.ErrReleased) {
				t.Errorf("Await across Release: %v, want %v", err, bank.ErrReleased)
			}
			b := claim(t, s, "k", fpB, bank.ClaimTaken)

			// A waiter for fpA must not be handed the answer of fpB's
			// request that now holds the key.
			if _, err := s.Await("k", fpA, soon(), never); !errors.Is(err, bank.ErrReleased) {
				t.Errorf("Await for another fingerprint's claim: %v, want %v", err, bank.ErrReleased)
			}

			// Finished: a waiter gets the answer, and so does a later
			// Claim.
			want := bank.Answer{Status: proto.StatusOK, Account: "a", Balance: 990, Debits: 1, Budget: 300}
			answered := make(chan bank.Answer, 1)
			go func() {
				ans, err := s.Await("k", fpB, time.Now().Add(time.Hour), never)
				if err != nil {
					t.Errorf("Await across Finish: %v", err)
				}
				answered <- ans
			}()
			if err := s.Finish(b.Hold, want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, <-answered); diff != "" {
				t.Errorf("awaited answer (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want, claim(t, s, "k", fpB, bank.ClaimDone).Answer); diff != "" {
				t.Errorf("answer after Finish (-want +got):\n%s", diff)
			}
			claim(t, s, "k", fpA, bank.ClaimConflict)
		})
	}
}

func okAnswer(a bank.Account) bank.Answer {
	return bank.Answer{Status: proto.StatusOK, Account: "a", Balance: a.Balance, Debits: a.Debits}
}

// TestDebitRecordsWithKey: a keyed debit records its answer in the same
// call that changes the balance; one that fails changes nothing.
func TestDebitRecordsWithKey(t *testing.T) {
	for _, k := range allKinds() {
		t.Run(k.name, func(t *testing.T) {
			s := k.open(t, bank.SQLOptions{})
			c := claim(t, s, "k", bank.Fingerprint{1}, bank.ClaimTaken)
			after, err := s.Debit([]byte("a"), 10, c.Hold, okAnswer)
			if err != nil || after.Balance != bank.DefaultBalance-10 {
				t.Fatalf("Debit = %+v, %v", after, err)
			}
			ans := claim(t, s, "k", bank.Fingerprint{1}, bank.ClaimDone).Answer
			if ans.Balance != after.Balance || ans.Debits != 1 {
				t.Errorf("recorded %+v, want the balance %d after one debit", ans, after.Balance)
			}
			if _, err := s.Debit([]byte("a"), 1_000_000, bank.Hold{}, nil); !errors.Is(err, bank.ErrInsufficientFunds) {
				t.Errorf("overdraft: %v, want %v", err, bank.ErrInsufficientFunds)
			}
			if got, _ := s.Get([]byte("a")); got != after {
				t.Errorf("after a refused debit: %+v, want %+v", got, after)
			}
			if got, _ := s.Get([]byte("never-debited")); got != (bank.Account{Balance: bank.DefaultBalance}) {
				t.Errorf("new account: %+v", got)
			}
		})
	}
}

// crash is what a BeforeCommit hook panics with, standing in for the
// process dying inside the transaction.
type crash struct{}

// TestCrashBeforeCommitLeavesNothing: a keyed debit whose transaction
// dies before its commit changes neither the balance nor the record;
// the key is still running, and once its lease expires a retry takes it
// over and executes once.
func TestCrashBeforeCommitLeavesNothing(t *testing.T) {
	for _, k := range sqlKinds {
		t.Run(k.name, func(t *testing.T) {
			clk := newClock()
			var armed atomic.Bool
			armed.Store(true)
			s := k.open(t, bank.SQLOptions{Now: clk.Now, Lease: time.Second, Hooks: bank.Hooks{BeforeCommit: func() {
				if armed.CompareAndSwap(true, false) {
					panic(crash{})
				}
			}}})
			fp := bank.Fingerprint{7}
			c := claim(t, s, "k", fp, bank.ClaimTaken)
			func() {
				defer func() {
					if r := recover(); r != (crash{}) {
						t.Fatalf("the hook did not fire inside Debit: recovered %v", r)
					}
				}()
				s.Debit([]byte("a"), 10, c.Hold, okAnswer)
			}()
			if got, _ := s.Get([]byte("a")); got != (bank.Account{Balance: bank.DefaultBalance}) {
				t.Errorf("after a crash before commit the account is %+v, want untouched", got)
			}
			claim(t, s, "k", fp, bank.ClaimRunning)
			clk.Advance(time.Second)
			retry := claim(t, s, "k", fp, bank.ClaimTaken)
			if after, err := s.Debit([]byte("a"), 10, retry.Hold, okAnswer); err != nil || after.Debits != 1 {
				t.Fatalf("the retry's debit = %+v, %v; want the first execution", after, err)
			}
		})
	}
}

// TestExpiredLeaseOneTaker: when a running claim's lease expires, of
// many concurrent retries exactly one takes the key over; the others
// find it running. The first claim, which lost its lease, can no longer
// commit, so the debit executes once.
func TestExpiredLeaseOneTaker(t *testing.T) {
	for _, k := range sqlKinds {
		t.Run(k.name, func(t *testing.T) {
			clk := newClock()
			s := k.open(t, bank.SQLOptions{Now: clk.Now, Lease: time.Second})
			fp := bank.Fingerprint{3}
			first := claim(t, s, "k", fp, bank.ClaimTaken)
			clk.Advance(time.Second + time.Millisecond)

			const takers = 8
			var (
				wg    sync.WaitGroup
				start = make(chan struct{})
				mu    sync.Mutex
				got   = map[bank.ClaimState]int{}
				won   bank.Hold
			)
			for range takers {
				wg.Go(func() {
					<-start
					c, err := s.Claim("k", fp)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					defer mu.Unlock()
					got[c.State]++
					if c.State == bank.ClaimTaken {
						won = c.Hold
					}
				})
			}
			close(start)
			wg.Wait()
			if want := (map[bank.ClaimState]int{bank.ClaimTaken: 1, bank.ClaimRunning: takers - 1}); !cmp.Equal(got, want) {
				t.Fatalf("claims of an expired lease: %v, want %v", got, want)
			}
			if _, err := s.Debit([]byte("a"), 10, first.Hold, okAnswer); !errors.Is(err, bank.ErrLeaseLost) {
				t.Errorf("the first claim's debit after the takeover: %v, want %v", err, bank.ErrLeaseLost)
			}
			if err := s.Finish(first.Hold, bank.Answer{Status: proto.StatusAppError}); !errors.Is(err, bank.ErrLeaseLost) {
				t.Errorf("the first claim's Finish after the takeover: %v, want %v", err, bank.ErrLeaseLost)
			}
			if after, err := s.Debit([]byte("a"), 10, won, okAnswer); err != nil || after.Debits != 1 {
				t.Errorf("the taker's debit = %+v, %v; want the one execution", after, err)
			}
			if got, _ := s.Get([]byte("a")); got.Debits != 1 {
				t.Errorf("debits = %d, want 1", got.Debits)
			}
		})
	}
}

// TestTTLSweep: records past their TTL are swept, except a running one
// under a live lease; a key past its TTL executes again.
func TestTTLSweep(t *testing.T) {
	for _, k := range sqlKinds {
		t.Run(k.name, func(t *testing.T) {
			clk := newClock()
			s := k.open(t, bank.SQLOptions{Now: clk.Now, TTL: time.Minute, Lease: 2 * time.Minute, SweepEvery: -1})
			sw := s.(*bank.SQLStore)
			done := claim(t, s, "done", bank.Fingerprint{1}, bank.ClaimTaken)
			if _, err := s.Debit([]byte("a"), 10, done.Hold, okAnswer); err != nil {
				t.Fatal(err)
			}
			claim(t, s, "running", bank.Fingerprint{1}, bank.ClaimTaken)
			if n, err := sw.Sweep(); err != nil || n != 0 {
				t.Fatalf("sweep before the TTL deleted %d, %v", n, err)
			}
			claim(t, s, "done", bank.Fingerprint{1}, bank.ClaimDone)

			clk.Advance(time.Minute)
			if n, err := sw.Sweep(); err != nil || n != 1 {
				t.Fatalf("sweep after the TTL deleted %d, %v; want 1: the running record's lease is live", n, err)
			}
			claim(t, s, "running", bank.Fingerprint{1}, bank.ClaimRunning)
			clk.Advance(time.Minute)
			if n, err := sw.Sweep(); err != nil || n != 1 {
				t.Fatalf("sweep after the lease deleted %d, %v; want 1", n, err)
			}

			// The boundary the TTL documents: the same key, later,
			// executes again.
			again := claim(t, s, "done", bank.Fingerprint{1}, bank.ClaimTaken)
			if after, err := s.Debit([]byte("a"), 10, again.Hold, okAnswer); err != nil || after.Debits != 2 {
				t.Errorf("debit after the TTL = %+v, %v; want a second execution", after, err)
			}
		})
	}
}

// TestExpiredRecordTakenOverWithoutSweep: a claim does not need the
// sweeper to see that a record's TTL passed.
func TestExpiredRecordTakenOverWithoutSweep(t *testing.T) {
	for _, k := range sqlKinds {
		t.Run(k.name, func(t *testing.T) {
			clk := newClock()
			s := k.open(t, bank.SQLOptions{Now: clk.Now, TTL: time.Minute, SweepEvery: -1})
			c := claim(t, s, "k", bank.Fingerprint{1}, bank.ClaimTaken)
			if err := s.Finish(c.Hold, bank.Answer{Status: proto.StatusAppError, Msg: "no"}); err != nil {
				t.Fatal(err)
			}
			claim(t, s, "k", bank.Fingerprint{2}, bank.ClaimConflict)
			clk.Advance(time.Minute)
			claim(t, s, "k", bank.Fingerprint{2}, bank.ClaimTaken)
		})
	}
}

// TestBinaryNamesAndKeys: keys and account names are bytes on the wire,
// not text; every store keeps them as they are, invalid UTF-8 and NUL
// included.
func TestBinaryNamesAndKeys(t *testing.T) {
	for _, k := range allKinds() {
		t.Run(k.name, func(t *testing.T) {
			s := k.open(t, bank.SQLOptions{})
			key, account := "k\xff\x00z", []byte("a\xfe\x00b")
			c := claim(t, s, key, bank.Fingerprint{1}, bank.ClaimTaken)
			after, err := s.Debit(account, 10, c.Hold, func(a bank.Account) bank.Answer {
				return bank.Answer{Status: proto.StatusOK, Account: string(account), Balance: a.Balance, Debits: a.Debits}
			})
			if err != nil {
				t.Fatalf("Debit: %v", err)
			}
			if got := claim(t, s, key, bank.Fingerprint{1}, bank.ClaimDone).Answer.Account; got != string(account) {
				t.Errorf("replayed account %q, want %q", got, account)
			}
			claim(t, s, "k\xff\x00y", bank.Fingerprint{1}, bank.ClaimTaken)
			if got, _ := s.Get(account); got != after {
				t.Errorf("Get = %+v, want %+v", got, after)
			}
			if got, _ := s.Get([]byte("a\xfe\x00c")); got.Debits != 0 {
				t.Errorf("another binary name shares the account: %+v", got)
			}
		})
	}
}

// TestTTLRunsFromTheAnswer: an execution that outlasts the TTL still
// deduplicates its retries: the TTL counts from the answer, and while the
// lease is live a waiter keeps waiting instead of claiming again.
func TestTTLRunsFromTheAnswer(t *testing.T) {
	for _, k := range sqlKinds {
		t.Run(k.name, func(t *testing.T) {
			clk := newClock()
			s := k.open(t, bank.SQLOptions{Now: clk.Now, TTL: time.Minute, Lease: 10 * time.Minute, SweepEvery: -1})
			fp := bank.Fingerprint{5}
			c := claim(t, s, "k", fp, bank.ClaimTaken)
			clk.Advance(2 * time.Minute) // past the TTL, within the lease
			claim(t, s, "k", fp, bank.ClaimRunning)
			if _, err := s.Await("k", fp, time.Now().Add(20*time.Millisecond), make(chan struct{})); !errors.Is(err, bank.ErrAwaitExpired) {
				t.Errorf("Await on a running key past its TTL, lease live: %v, want %v", err, bank.ErrAwaitExpired)
			}
			if _, err := s.Debit([]byte("a"), 10, c.Hold, okAnswer); err != nil {
				t.Fatal(err)
			}
			clk.Advance(time.Minute - time.Millisecond)
			if got := claim(t, s, "k", fp, bank.ClaimDone).Answer; got.Debits != 1 {
				t.Errorf("the retry got %+v, want the one execution's answer", got)
			}
		})
	}
}

// TestReleaseWakesWaiter: a duplicate already waiting when the original
// gives its key back ends with ErrReleased, never with an answer, on
// every store. The waiter is known to be waiting (Hooks.AwaitWaiting)
// before Release, so the wake-up path is the one exercised, not a read
// that finds the record gone.
func TestReleaseWakesWaiter(t *testing.T) {
	for _, k := range allKinds() {
		t.Run(k.name, func(t *testing.T) {
			waiting := make(chan struct{}, 1)
			s := k.open(t, bank.SQLOptions{Hooks: bank.Hooks{AwaitWaiting: func() {
				select {
				case waiting <- struct{}{}:
				default:
				}
			}}})
			fp := bank.Fingerprint{1}
			a := claim(t, s, "k", fp, bank.ClaimTaken)
			type result struct {
				ans bank.Answer
				err error
			}
			done := make(chan result, 1)
			go func() {
				ans, err := s.Await("k", fp, time.Now().Add(time.Minute), make(chan struct{}))
				done <- result{ans, err}
			}()
			select {
			case <-waiting:
			case r := <-done:
				t.Fatalf("Await returned %+v, %v before the key was released", r.ans, r.err)
			case <-time.After(30 * time.Second):
				t.Fatal("Await never started waiting")
			}
			if err := s.Release(a.Hold); err != nil {
				t.Fatal(err)
			}
			select {
			case r := <-done:
				if !errors.Is(r.err, bank.ErrReleased) {
					t.Errorf("waiter got %+v, %v; want %v", r.ans, r.err, bank.ErrReleased)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the waiter was not woken by Release")
			}
		})
	}
}
