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

// TestCut: Cut kills the connection under a call in flight, which ends
// as after a lost connection (a keyless debit: UNKNOWN, not re-sent); the
// client stays usable and the next call dials again.
func TestCut(t *testing.T) {
	for _, perCall := range []bool{false, true} {
		srv, addr := servertest.Start(t, server.DefaultConfig())
		cfg := servertest.ClientConfig()
		cfg.ConnPerCall = perCall
		cfg.Deadline, cfg.AttemptTimeout = time.Minute, time.Minute
		c, err := client.New(addr, cfg)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan client.Result, 1)
		go func() { done <- c.Do(context.Background(), servertest.Debit("a", 1, "sleep=3000")) }()
		servertest.WaitCounter(t, srv, "requests.debit", 1)
		c.Cut()
		select {
		case r := <-done:
			if r.Status != proto.StatusUnknown || len(r.Log) != 1 || r.Log[0].Outcome != client.OutcomeConnLost || !errors.Is(r.Err, client.ErrCut) {
				t.Errorf("conn per call %v: call in flight at Cut: %v, log %v, err %v; want UNKNOWN after one lost connection", perCall, r.Status, r.Log, r.Err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("conn per call %v: a call in flight outlived Cut by 10s", perCall)
		}
		if r := c.Do(context.Background(), servertest.Get("a")); r.Status != proto.StatusOK {
			t.Errorf("conn per call %v: a call after Cut: %v %v", perCall, r.Status, r.Err)
		}
		if got := c.Stats().ConnsOpened; got != 2 {
			t.Errorf("conn per call %v: %d connections opened, want 2: the call after Cut dials again", perCall, got)
		}
		c.Close()
	}
}

// TestTrace: Trace sees every attempt of a call, in order, with its
// backoff and a start and end that bracket it.
func TestTrace(t *testing.T) {
	_, addr := servertest.Start(t, server.DefaultConfig(), "kind=unavailable method=get count=2")
	cfg := servertest.ClientConfig()
	type span struct {
		n        int
		a        client.Attempt
		from, to time.Time
	}
	var got []span
	cfg.Trace = func(_ *client.Call, log []client.Attempt, spans []client.Span) {
		for i, a := range log {
			got = append(got, span{i + 1, a, spans[i].Start, spans[i].End})
		}
	}
	c, err := client.New(addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	before := time.Now()
	r := c.Do(context.Background(), servertest.Get("a"))
	if r.Status != proto.StatusOK || len(got) != 3 {
		t.Fatalf("%v after %d attempts, %d traced; want OK after 3, all traced", r.Status, len(r.Log), len(got))
	}
	prev := before
	for i, s := range got {
		if s.n != i+1 || s.a != r.Log[i] || s.from.Before(prev) || s.to.Before(s.from) {
			t.Errorf("trace %d: n=%d, attempt %v (log %v), %v..%v after %v", i, s.n, s.a, r.Log[i], s.from, s.to, prev)
		}
		if i < 2 && s.a.Backoff <= 0 {
			t.Errorf("trace %d: no backoff recorded", i)
		}
		prev = s.to
	}
}
