package bank_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/transport"
)

// BenchmarkExecuteKeyedDebit is the bank's share of a keyed debit on the
// in-memory store: a fresh key each time, so every request claims,
// executes and records. Accounts rotate so that none runs dry.
func BenchmarkExecuteKeyedDebit(b *testing.B) {
	bk := bank.New(bank.NewMemory(), nil)
	done := make(chan struct{})
	var scratch []byte
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		req := transport.Request{ID: uint64(n), Method: bank.MethodDebit, Key: "k-" + strconv.Itoa(n),
			Payload: []byte("account=a" + strconv.Itoa(n/1000) + " amount=1"), BudgetMs: 1 << 30,
			Expiry: time.Now().Add(time.Hour), Done: done}
		st, p := bk.Execute(&req, scratch[:0])
		if st != proto.StatusOK {
			b.Fatalf("Execute: %v %q, want OK", st, p)
		}
		scratch = p
		n++
	}
}
