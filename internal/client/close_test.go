package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/server"
	"github.com/rpcbench/rpcbench/internal/servertest"
)

// TestCloseWithConnPerCall: Close must fail a call in flight on its own
// connection with ErrClosed, and no call after Close may dial.
func TestCloseWithConnPerCall(t *testing.T) {
	srv, addr := servertest.Start(t, server.DefaultConfig())
	cfg := servertest.ClientConfig()
	cfg.ConnPerCall = true
	cfg.Deadline = time.Minute
	c, err := client.New(addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan client.Result, 1)
	go func() { done <- c.Do(context.Background(), servertest.Debit("a", 1, "sleep=5000")) }()
	servertest.WaitCounter(t, srv, "requests.debit", 1)
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	select {
	case r := <-done:
		if r.Stop != client.StopClosed || !errors.Is(r.Err, client.ErrClosed) {
			t.Errorf("call in flight at Close: got stop %v, Err %v; want %v, %v", r.Stop, r.Err, client.StopClosed, client.ErrClosed)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a call in flight on its own connection outlived Close by 10s")
	}
	opened := c.Stats().ConnsOpened
	r := c.Do(context.Background(), servertest.Get("a"))
	if r.Status == proto.StatusOK || !errors.Is(r.Err, client.ErrClosed) {
		t.Errorf("call after Close: got status %v, Err %v; want a failure with %v", r.Status, r.Err, client.ErrClosed)
	}
	if got := c.Stats().ConnsOpened; got != opened {
		t.Errorf("a call after Close dialed: ConnsOpened %d -> %d", opened, got)
	}
	if err := c.Close(); !errors.Is(err, client.ErrClosed) {
		t.Errorf("second Close: got %v, want %v", err, client.ErrClosed)
	}
}
