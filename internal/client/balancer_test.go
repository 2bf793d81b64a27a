package client_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/server"
	"github.com/rpcbench/rpcbench/internal/servertest"
)

// balanced returns a client of addrs with balancer b, closed when the
// test ends.
func balanced(t *testing.T, addrs []string, b client.Balancer) *client.Client {
	t.Helper()
	cfg := servertest.ClientConfig()
	cfg.Balancer = b
	c, err := client.NewMulti(addrs, cfg)
	if err != nil {
		t.Fatalf("NewMulti: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestRoundRobinSpreads: 30 gets, one at a time, over three servers are
// 10 on each, each server's own counter says.
func TestRoundRobinSpreads(t *testing.T) {
	var srvs []*server.Server
	var addrs []string
	for range 3 {
		s, a := servertest.Start(t, server.DefaultConfig())
		srvs, addrs = append(srvs, s), append(addrs, a)
	}
	c := balanced(t, addrs, client.RoundRobin)
	for i := range 30 {
		if r := c.Do(context.Background(), servertest.Get("acct")); r.Status.String() != "OK" {
			t.Fatalf("call %d: %v %v", i, r.Status, r.Log)
		}
	}
	for i, s := range srvs {
		if got := servertest.Counter(t, s, "exec.get"); got != 10 {
			t.Errorf("server %d exec.get: got %d, want 10", i, got)
		}
	}
	if got := c.Stats().ConnsOpened; got != 3 {
		t.Errorf("ConnsOpened: got %d, want 3, one per address", got)
	}
}

// TestRetryAvoidsPrevious: one of two servers refuses every get
// (UNAVAILABLE, not executed). Under p2c, whose two choices among two
// addresses are a coin toss, every call's retry goes to the other
// server, so each call ends OK within two attempts.
func TestRetryAvoidsPrevious(t *testing.T) {
	_, bad := servertest.Start(t, server.DefaultConfig(), "kind=unavailable method=get")
	_, good := servertest.Start(t, server.DefaultConfig())
	c := balanced(t, []string{bad, good}, client.P2C)
	retried := 0
	for i := range 40 {
		r := c.Do(context.Background(), servertest.Get("acct"))
		if r.Status.String() != "OK" || r.Attempts > 2 {
			t.Fatalf("call %d: %v after %d attempts, want OK within 2: %v", i, r.Status, r.Attempts, r.Log)
		}
		if r.Attempts == 2 {
			retried++
			if r.Log[0].Addr != bad || r.Log[1].Addr != good {
				t.Errorf("call %d went to %s then %s, want %s then %s", i, r.Log[0].Addr, r.Log[1].Addr, bad, good)
			}
		}
	}
	if retried == 0 {
		t.Errorf("no call was sent to the refusing server first; the test shows nothing")
	}
}

// TestPassOverFailedAddress: an address nothing listens on is dialed
// once, and then passed over for the next calls, made well within a
// second; a client without passing over would dial it for about half of
// them.
func TestPassOverFailedAddress(t *testing.T) {
	dead := deadAddr(t)
	_, live := servertest.Start(t, server.DefaultConfig())
	c := balanced(t, []string{dead, live}, client.P2C)
	failed := 0
	for i := range 20 {
		r := c.Do(context.Background(), servertest.Get("acct"))
		if r.Status.String() != "OK" {
			t.Fatalf("call %d: %v %v", i, r.Status, r.Log)
		}
		for _, a := range r.Log {
			if a.Outcome == client.OutcomeConnectFailed {
				failed++
			}
		}
	}
	if failed > 1 {
		t.Errorf("dials to the dead address: got %d, want at most 1", failed)
	}
}

func deadAddr(t *testing.T) string {
	t.Helper()
	s, addr := servertest.Start(t, server.DefaultConfig())
	if err := s.Close(); err != nil {
		t.Fatal(fmt.Errorf("closing the server whose address is reused: %w", err))
	}
	return addr
}
