package workload

import (
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/transport"
)

// BankGet returns a maker of handlers that do the work rpcserver does for
// one get, and nothing else:
// internal/bank's handler over the in-memory store, the handler and
// store rpcserver runs by default, executing "account=acct-17" into
// "account=acct-17 balance=1000 budget=5000 exec=0 replayed=false". A
// handler appends the answer's payload to dst; a request the bank refuses
// is answered with the refusal's text, which the driver's Check counts as
// a wrong answer. The handlers share one bank; each reuses its Request
// from call to call, as an rpcserver connection's reader does, so one
// handler is for one goroutine.
//
// What rpcserver does around the handler (decoding and checking the
// frame, counting the request, its budget and queue rules, encoding the
// answer) is left out: that is what the floor-get row measures it
// without.
func BankGet() func() func(dst, payload []byte) []byte {
	b := bank.New(bank.NewMemory(), nil)
	never := time.Now().Add(100 * 365 * 24 * time.Hour)
	return func() func(dst, payload []byte) []byte {
		req := new(transport.Request)
		return func(dst, payload []byte) []byte {
			// The payload aliases the caller's read buffer; the bank
			// keeps nothing of a get without a key.
			*req = transport.Request{Method: bank.MethodGet, Payload: payload, BudgetMs: BudgetMs, Expiry: never}
			_, out := b.Execute(req, dst)
			return out
		}
	}
}
