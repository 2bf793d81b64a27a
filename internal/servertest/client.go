package servertest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
)

// ClientConfig is client.DefaultConfig without jitter and with an attempt
// timeout long enough that a healthy local answer never times out, even
// under the race detector on a loaded machine.
func ClientConfig() client.Config {
	cfg := client.DefaultConfig()
	cfg.Jitter = 0
	cfg.AttemptTimeout = 2 * time.Second
	cfg.Deadline = 5 * time.Second
	return cfg
}

// NewClient returns a client for addr that is closed when the test ends.
func NewClient(t testing.TB, addr string, cfg client.Config) *client.Client {
	t.Helper()
	c, err := client.New(addr, cfg)
	if err != nil {
		t.Fatalf("client.New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Get returns an idempotent get of account; extra fields ("sleep=500")
// are appended to the payload.
func Get(account string, extra ...string) client.Call {
	return client.Call{Method: bank.MethodGet, Idempotent: true, Payload: payload("account="+account, extra...)}
}

// Debit returns a keyless debit of amount from account; extra fields are
// appended to the payload.
func Debit(account string, amount int, extra ...string) client.Call {
	return client.Call{Method: bank.MethodDebit, Payload: payload(fmt.Sprintf("account=%s amount=%d", account, amount), extra...)}
}

func payload(first string, extra ...string) []byte {
	return []byte(strings.Join(append([]string{first}, extra...), " "))
}
