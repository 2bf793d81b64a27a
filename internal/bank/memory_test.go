package bank_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/proto"
)

func claim(t *testing.T, s bank.Store, key string, fp bank.Fingerprint, want bank.ClaimState) bank.Answer {
	t.Helper()
	got, ans, err := s.Claim(key, fp)
	if err != nil || got != want {
		t.Fatalf("Claim(%q) = %v, %v; want %v", key, got, err, want)
	}
	return ans
}

// TestMemoryStoreContract walks one key through the Store contract.
func TestMemoryStoreContract(t *testing.T) {
	s := bank.NewMemory()
	fpA, fpB := bank.Fingerprint{1}, bank.Fingerprint{2}
	never := make(chan struct{})
	soon := func() time.Time { return time.Now().Add(50 * time.Millisecond) }

	claim(t, s, "k", fpA, bank.ClaimTaken)
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

	// Released: a waiter learns it, and the key can be taken again, by
	// another fingerprint too.
	waited := make(chan error, 1)
	go func() {
		_, err := s.Await("k", fpA, time.Now().Add(time.Hour), never)
		waited <- err
	}()
	if err := s.Release("k"); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; !errors.Is(err, bank.ErrReleased) {
		t.Errorf("Await across Release: %v, want %v", err, bank.ErrReleased)
	}
	claim(t, s, "k", fpB, bank.ClaimTaken)

	// A waiter for fpA must not be handed the answer of fpB's request
	// that now holds the key.
	if _, err := s.Await("k", fpA, soon(), never); !errors.Is(err, bank.ErrReleased) {
		t.Errorf("Await for another fingerprint's claim: %v, want %v", err, bank.ErrReleased)
	}

	// Finished: a waiter gets the answer, and so does a later Claim.
	want := bank.Answer{Status: proto.StatusOK, Account: "a", Balance: 990, Debits: 1, Budget: 300}
	go func() {
		_, err := s.Await("k", fpB, time.Now().Add(time.Hour), never)
		waited <- err
	}()
	if err := s.Finish("k", want); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Errorf("Await across Finish: %v", err)
	}
	if diff := cmp.Diff(want, claim(t, s, "k", fpB, bank.ClaimDone)); diff != "" {
		t.Errorf("answer after Finish (-want +got):\n%s", diff)
	}
}

// TestMemoryDebitRecordsWithKey: a keyed debit records its answer in the
// same call that changes the balance; one that fails changes nothing.
func TestMemoryDebitRecordsWithKey(t *testing.T) {
	s := bank.NewMemory()
	claim(t, s, "k", bank.Fingerprint{1}, bank.ClaimTaken)
	after, err := s.Debit([]byte("a"), 10, "k", func(a bank.Account) bank.Answer {
		return bank.Answer{Status: proto.StatusOK, Account: "a", Balance: a.Balance, Debits: a.Debits}
	})
	if err != nil || after.Balance != bank.DefaultBalance-10 {
		t.Fatalf("Debit = %+v, %v", after, err)
	}
	ans := claim(t, s, "k", bank.Fingerprint{1}, bank.ClaimDone)
	if ans.Balance != after.Balance || ans.Debits != 1 {
		t.Errorf("recorded %+v, want the balance %d after one debit", ans, after.Balance)
	}
	if _, err := s.Debit([]byte("a"), 1_000_000, "", nil); !errors.Is(err, bank.ErrInsufficientFunds) {
		t.Errorf("overdraft: %v, want %v", err, bank.ErrInsufficientFunds)
	}
	if got, _ := s.Get([]byte("a")); got != after {
		t.Errorf("after a refused debit: %+v, want %+v", got, after)
	}
}
