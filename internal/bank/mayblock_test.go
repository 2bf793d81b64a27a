package bank_test

import (
	"testing"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/server"
)

// TestMayBlock: the bank, not the transport, says which requests may
// block; the transport runs the others on the connection's reader.
func TestMayBlock(t *testing.T) {
	tests := []struct {
		name    string
		method  string
		key     string
		payload string
		want    bool
	}{
		{"plain get", bank.MethodGet, "", "account=a", false},
		{"sleep above 0", bank.MethodGet, "", "account=a sleep=5", true},
		{"sleep=0 still asks for the queue", bank.MethodGet, "", "account=a sleep=0", true},
		{"idempotency key", bank.MethodGet, "k", "account=a", true},
		{"sleep in the account name is not a sleep field", bank.MethodGet, "", "account=sleep=1", false},
		{"unparsable payload fails fast", bank.MethodGet, "", "account", false},
		// The payload is not scanned: a 16 KiB echo paid for a search
		// for "sleep" in every request.
		{"echo with a sleep field never blocks", bank.MethodEcho, "", "account=a sleep=5", false},
		{"keyed echo is refused at once", bank.MethodEcho, "k", "x", false},
	}
	b := bank.New(bank.NewMemory(), nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := server.Request{Method: tt.method, Key: tt.key, Payload: []byte(tt.payload)}
			if got := b.MayBlock(&r); got != tt.want {
				t.Errorf("MayBlock(key=%q payload=%q) = %v, want %v", tt.key, tt.payload, got, tt.want)
			}
		})
	}
}
