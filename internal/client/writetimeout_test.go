package client_test

import (
	"bytes"
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/client"
)

// TestWriteTimeoutIsItsOwn: a server that reads nothing blocks the
// client's writes; the connection must die after Config.WriteTimeout,
// failing the calls as lost connections, not wait for their attempt
// timeouts (the write timeout once was Config.Deadline).
func TestWriteTimeoutIsItsOwn(t *testing.T) {
	stop := make(chan struct{})
	// Read nothing; hold the connection until the test ends.
	addr := fakeServer(t, func(net.Conn) { <-stop })
	t.Cleanup(func() { close(stop) })
	cfg := client.DefaultConfig()
	cfg.MaxAttempts = 1
	cfg.AttemptTimeout = 20 * time.Second
	cfg.Deadline = 30 * time.Second
	cfg.WriteTimeout = 200 * time.Millisecond
	c, err := client.New(addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// Far more than the socket buffers of both ends hold.
	const calls = 400
	payload := bytes.Repeat([]byte("x"), 60<<10)
	results := make([]client.Result, calls)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			results[i] = c.Do(context.Background(), client.Call{Method: "debit", Payload: payload})
		})
	}
	wg.Wait()
	lost := 0
	for _, r := range results {
		if len(r.Log) == 1 && r.Log[0].Outcome == client.OutcomeConnLost {
			lost++
		}
	}
	if lost == 0 {
		t.Errorf("no call ended CONN_LOST_AFTER_SEND; first: %v %v", results[0].Log, results[0].Err)
	}
}
