package bank_test

import (
	"testing"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/transport"
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
		{"work above 0", bank.MethodDebit, "", "account=a amount=1 work=5", true},
		{"work=0 does nothing", bank.MethodGet, "", "account=a work=0", false},
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
			r := transport.Request{Method: tt.method, Key: tt.key, Payload: []byte(tt.payload)}
			if got := b.MayBlock(&r); got != tt.want {
				t.Errorf("MayBlock(key=%q payload=%q) = %v, want %v", tt.key, tt.payload, got, tt.want)
			}
		})
	}
}

// TestWorkIgnoresDone: a work field is a step that takes no Done: a
// request whose Done is already closed still executes after its work,
// where a sleep field's wait ends at once, unexecuted.
func TestWorkIgnoresDone(t *testing.T) {
	done := make(chan struct{})
	close(done)
	for _, tt := range []struct {
		payload string
		want    proto.Status
	}{
		{"account=a amount=1 work=20", proto.StatusOK},
		{"account=a amount=1 sleep=20", proto.StatusUnavailable},
	} {
		b := bank.New(bank.NewMemory(), nil)
		r := transport.Request{Method: bank.MethodDebit, Payload: []byte(tt.payload), Done: done}
		if got, _ := b.Execute(&r, nil); got != tt.want {
			t.Errorf("%q with Done closed: %v, want %v", tt.payload, got, tt.want)
		}
	}
}
