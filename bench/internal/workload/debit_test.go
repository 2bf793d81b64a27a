package workload

import (
	"errors"
	"testing"

	"github.com/rpcbench/rpcbench/internal/bank"
)

func TestDefaultBalanceIsRPCServers(t *testing.T) {
	if DefaultBalance != bank.DefaultBalance {
		t.Errorf("DefaultBalance: got %d, want bank.DefaultBalance %d", DefaultBalance, bank.DefaultBalance)
	}
}

func TestDebitAccount(t *testing.T) {
	tests := []struct{ seq, want int64 }{
		{0, 0}, {1, 1}, {63, 63}, {64, 0}, {65, 1},
		{63999, 63}, {64000, 64}, {64063, 127}, {64064, 64},
		{3*64000 + 5, 3*64 + 5},
	}
	for _, tt := range tests {
		if got := DebitAccount(tt.seq); got != tt.want {
			t.Errorf("DebitAccount(%d): got %d, want %d", tt.seq, got, tt.want)
		}
	}
}

// TestDebitAccountNeverOverdraws: over three lanes, every account gets
// exactly DebitsPerAccount debits, and the 64 debits in a row that
// concurrent callers make touch 64 different accounts.
func TestDebitAccountNeverOverdraws(t *testing.T) {
	const lanes = 3
	count := map[int64]int{}
	for seq := range int64(lanes * Accounts * DebitsPerAccount) {
		count[DebitAccount(seq)]++
		if seq%Accounts == Accounts-1 {
			seen := map[int64]bool{}
			for s := seq - Accounts + 1; s <= seq; s++ {
				seen[DebitAccount(s)] = true
			}
			if len(seen) != Accounts {
				t.Fatalf("debits %d..%d: got %d accounts, want %d", seq-Accounts+1, seq, len(seen), Accounts)
			}
		}
	}
	if len(count) != lanes*Accounts {
		t.Errorf("accounts: got %d, want %d", len(count), lanes*Accounts)
	}
	for a, n := range count {
		if n != DebitsPerAccount {
			t.Errorf("account %d: got %d debits, want %d", a, n, DebitsPerAccount)
		}
	}
	if DebitsPerAccount*DebitAmount > DefaultBalance {
		t.Errorf("%d debits of %d overdraw a balance of %d", DebitsPerAccount, DebitAmount, DefaultBalance)
	}
}

func TestAppendDebit(t *testing.T) {
	if got, want := string(AppendDebit([]byte("x"), 64001)), "xaccount=acct-65 amount=1"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestCheckDebit(t *testing.T) {
	const req = "account=acct-1 amount=1"
	tests := []struct {
		name, resp string
		ok         bool
	}{
		{"first debit", "account=acct-1 balance=999 budget=4999 exec=1 replayed=false", true},
		{"last debit", "account=acct-1 balance=0 budget=4999 exec=1000 replayed=false", true},
		{"replayed", "account=acct-1 balance=500 budget=4999 exec=500 replayed=true", true},
		{"other account sharing a prefix", "account=acct-17 balance=999 budget=4999 exec=1 replayed=false", false},
		{"other account", "account=acct-2 balance=999 budget=4999 exec=1 replayed=false", false},
		{"debited twice as much", "account=acct-1 balance=998 budget=4999 exec=1 replayed=false", false},
		{"not debited", "account=acct-1 balance=1000 budget=4999 exec=1 replayed=false", false},
		{"overdrawn", "account=acct-1 balance=-1 budget=4999 exec=1001 replayed=false", false},
		{"no exec", "account=acct-1 balance=999 budget=4999", false},
		{"bad balance", "account=acct-1 balance=x exec=1", false},
		{"account alone", "account=acct-1", false},
		{"error text", "insufficient funds", false},
		{"empty", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckDebit([]byte(req), []byte(tt.resp))
			if got := err == nil; got != tt.ok {
				t.Fatalf("got ok=%v (%v), want ok=%v", got, err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrWrongAnswer) {
				t.Errorf("got %v, want an error wrapping ErrWrongAnswer", err)
			}
		})
	}
}

func TestDebitAllocs(t *testing.T) {
	req := AppendDebit(nil, 12345)
	resp := []byte("account=acct-57 balance=807 budget=5000 exec=193 replayed=false")
	if err := CheckDebit(req, resp); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { CheckDebit(req, resp) }); n > 0 {
		t.Errorf("CheckDebit: got %v allocations, want 0", n)
	}
	buf := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(100, func() { AppendDebit(buf[:0], 12345) }); n > 0 {
		t.Errorf("AppendDebit into room: got %v allocations, want 0", n)
	}
}
