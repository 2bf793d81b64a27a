package bank_test

import (
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/transport"
)

// executeGet returns one request's worth of what the server asks of the
// bank for a keyless get it runs on a connection's reader: MayBlock, then
// Execute into a reused payload buffer. Together with the transport's
// share (BenchmarkServeGet in internal/server) this is the whole
// execute-and-encode path of a request.
func executeGet(tb testing.TB) func() {
	tb.Helper()
	b := bank.New(bank.NewMemory(), nil)
	req := transport.Request{ID: 1, Method: bank.MethodGet, Payload: []byte("account=acct-17"), BudgetMs: 1 << 30,
		Expiry: time.Now().Add(time.Hour), Done: make(chan struct{})}
	var scratch []byte
	return func() {
		if b.MayBlock(&req) {
			tb.Fatal("MayBlock = true for a keyless get without sleep, want false")
		}
		st, p := b.Execute(&req, scratch[:0])
		if st != proto.StatusOK {
			tb.Fatalf("Execute: %v %q, want OK", st, p)
		}
		scratch = p
	}
}

// BenchmarkExecuteGet reports the bank's allocations per keyless get.
func BenchmarkExecuteGet(b *testing.B) {
	execute := executeGet(b)
	b.ReportAllocs()
	for b.Loop() {
		execute()
	}
}

// TestExecuteGetAllocs holds BenchmarkExecuteGet's point: once the account
// exists and the payload buffer has grown, a get allocates nothing.
func TestExecuteGetAllocs(t *testing.T) {
	execute := executeGet(t)
	if n := testing.AllocsPerRun(1000, execute); n != 0 {
		t.Errorf("executing a get allocates %v times per request, want 0", n)
	}
}
