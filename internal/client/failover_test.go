package client_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/server"
	"github.com/rpcbench/rpcbench/internal/servertest"
)

// hop is where one attempt went and what it met.
type hop struct {
	Outcome client.Outcome
	Addr    string
}

func hops(r client.Result) []hop {
	var hs []hop
	for _, a := range r.Log {
		hs = append(hs, hop{a.Outcome, a.Addr})
	}
	return hs
}

func newMulti(t *testing.T, addrs []string, connPerCall bool) *client.Client {
	t.Helper()
	cfg := servertest.ClientConfig()
	cfg.ConnPerCall = connPerCall
	c, err := client.NewMulti(addrs, cfg)
	if err != nil {
		t.Fatalf("NewMulti(%q): %v", addrs, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closeAfter returns a fake server that reads requests and, once n have
// arrived over all its connections together, closes every connection it
// has, and any it accepts later, without answering. It returns the
// server's address and how many requests it read.
func closeAfter(t *testing.T, n int) (string, func() int) {
	var mu sync.Mutex // guards conns, received
	var conns []net.Conn
	received := 0
	addr := fakeServer(t, func(nc net.Conn) {
		mu.Lock()
		conns = append(conns, nc)
		if received >= n {
			nc.Close()
		}
		mu.Unlock()
		fr := proto.NewFrameReader(nc, proto.TypeRequest, 4096)
		for {
			frames, err := fr.ReadBatch()
			mu.Lock()
			received += len(frames)
			if len(frames) > 0 && received >= n {
				for _, c := range conns {
					c.Close()
				}
			}
			mu.Unlock()
			if err != nil {
				return
			}
		}
	})
	return addr, func() int { mu.Lock(); defer mu.Unlock(); return received }
}

// TestFailoverOnRefusedDial: a dial that fails moves the client to the
// next address, so the retry of the NOT_SENT attempt lands there; with
// every address down the attempts go round the list.
func TestFailoverOnRefusedDial(t *testing.T) {
	for _, connPerCall := range []bool{false, true} {
		t.Run(fmt.Sprint("conn_per_call=", connPerCall), func(t *testing.T) {
			t.Parallel()
			t.Run("second_answers", func(t *testing.T) {
				a := refused(t).addr
				_, b := servertest.Start(t, server.DefaultConfig())
				c := newMulti(t, []string{a, b}, connPerCall)

				r := c.Do(context.Background(), servertest.Get("acct"))
				want := []hop{{client.OutcomeConnectFailed, a}, {client.OutcomeResponse, b}}
				if diff := cmp.Diff(want, hops(r)); diff != "" {
					t.Errorf("attempts (-want +got):\n%s\nlog: %v", diff, r.Log)
				}
				if r.Status != proto.StatusOK {
					t.Errorf("status = %v, want OK", r.Status)
				}
				if got := c.Stats().Failovers; got != 1 {
					t.Errorf("Stats().Failovers = %d, want 1", got)
				}
				if len(r.Log) > 0 {
					if got, suffix := r.Log[0].String(), " addr="+a; !strings.HasSuffix(got, suffix) {
						t.Errorf("Attempt.String() = %q, want it to end with %q", got, suffix)
					}
				}

				// The client stays on the address that works.
				r = c.Do(context.Background(), servertest.Get("acct"))
				if diff := cmp.Diff([]hop{{client.OutcomeResponse, b}}, hops(r)); diff != "" {
					t.Errorf("next call's attempts (-want +got):\n%s", diff)
				}
				if got := c.Stats().Failovers; got != 1 {
					t.Errorf("after the next call Stats().Failovers = %d, want 1", got)
				}
			})
			t.Run("all_down_round_robin", func(t *testing.T) {
				a, b := refused(t).addr, refused(t).addr
				c := newMulti(t, []string{a, b}, connPerCall)
				r := c.Do(context.Background(), servertest.Debit("acct", 1))
				cf := client.OutcomeConnectFailed
				want := []hop{{cf, a}, {cf, b}, {cf, a}, {cf, b}}
				if diff := cmp.Diff(want, hops(r)); diff != "" {
					t.Errorf("attempts (-want +got):\n%s", diff)
				}
				if r.Status != proto.StatusUnavailable || r.Stop != client.StopMaxAttempts {
					t.Errorf("got status %v, stop %v; want %v, %v", r.Status, r.Stop, proto.StatusUnavailable, client.StopMaxAttempts)
				}
				if got := c.Stats().Failovers; got != 4 {
					t.Errorf("Stats().Failovers = %d, want 4", got)
				}
			})
		})
	}
}

// TestFailoverAfterConnLost: a server that reads a request and closes the
// connection leaves the attempt's outcome unknown. The classification
// rules are the same as with one server: a keyed debit is retried, and
// the retry lands on the next server; a keyless debit is not retried, but
// the client still moves on for the next call.
func TestFailoverAfterConnLost(t *testing.T) {
	keyed := servertest.Debit("acct", 1)
	keyed.Key = "key-1"
	tests := []struct {
		name      string
		call      client.Call
		status    proto.Status
		stop      client.Stop
		retried   bool  // on the second server, after the attempt on the closing one
		execDebit int64 // on the second server
	}{
		{"keyed_retried_on_next", keyed, proto.StatusOK, client.StopFinal, true, 1},
		{"keyless_not_resent", servertest.Debit("acct", 1), proto.StatusUnknown, client.StopNotRetryable, false, 0},
	}
	for _, connPerCall := range []bool{false, true} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("conn_per_call=%v/%s", connPerCall, tt.name), func(t *testing.T) {
				t.Parallel()
				a, readByA := closeAfter(t, 1)
				srv, b := servertest.Start(t, server.DefaultConfig())
				c := newMulti(t, []string{a, b}, connPerCall)

				r := c.Do(context.Background(), tt.call)
				want := []hop{{client.OutcomeConnLost, a}}
				if tt.retried {
					want = append(want, hop{client.OutcomeResponse, b})
				}
				if diff := cmp.Diff(want, hops(r)); diff != "" {
					t.Errorf("attempts (-want +got):\n%s\nlog: %v", diff, r.Log)
				}
				if len(r.Log) > 0 && r.Log[0].Class != client.ClassUnknown {
					t.Errorf("first attempt class = %v, want %v", r.Log[0].Class, client.ClassUnknown)
				}
				if r.Status != tt.status || r.Stop != tt.stop {
					t.Errorf("got status %v, stop %v; want %v, %v", r.Status, r.Stop, tt.status, tt.stop)
				}
				if got := readByA(); got != 1 {
					t.Errorf("the closing server read %d requests, want 1", got)
				}
				if got := servertest.Counter(t, srv, "exec.debit"); got != tt.execDebit {
					t.Errorf("second server exec.debit = %d, want %d", got, tt.execDebit)
				}

				r = c.Do(context.Background(), servertest.Get("acct"))
				if diff := cmp.Diff([]hop{{client.OutcomeResponse, b}}, hops(r)); diff != "" {
					t.Errorf("next call's attempts (-want +got):\n%s", diff)
				}
				if got := c.Stats().Failovers; got != 1 {
					t.Errorf("Stats().Failovers = %d, want 1", got)
				}
			})
		}
	}
}

// TestFailoverOnceForManyCalls: many calls in flight to a server that
// closes all their connections at once each meet the failure, and must
// move the client on by one address between them, not one each.
func TestFailoverOnceForManyCalls(t *testing.T) {
	const calls = 16
	for _, connPerCall := range []bool{false, true} {
		t.Run(fmt.Sprint("conn_per_call=", connPerCall), func(t *testing.T) {
			t.Parallel()
			a, readByA := closeAfter(t, calls)
			_, b := servertest.Start(t, server.DefaultConfig())
			_, cAddr := servertest.Start(t, server.DefaultConfig())
			c := newMulti(t, []string{a, b, cAddr}, connPerCall)

			results := make([]client.Result, calls)
			var wg sync.WaitGroup
			for i := range results {
				wg.Go(func() { results[i] = c.Do(context.Background(), servertest.Get(fmt.Sprint("acct-", i))) })
			}
			wg.Wait()
			want := []hop{{client.OutcomeConnLost, a}, {client.OutcomeResponse, b}}
			for i, r := range results {
				if diff := cmp.Diff(want, hops(r)); diff != "" {
					t.Errorf("call %d attempts (-want +got):\n%s\nlog: %v", i, diff, r.Log)
				}
			}
			if got := readByA(); got != calls {
				t.Errorf("the closing server read %d requests, want %d", got, calls)
			}
			if got := c.Stats().Failovers; got != 1 {
				t.Errorf("Stats().Failovers = %d, want 1", got)
			}
			if !connPerCall {
				if got := c.Stats().ConnsOpened; got != 2 {
					t.Errorf("Stats().ConnsOpened = %d, want 2 (one per server)", got)
				}
			}
		})
	}
}

// TestAttemptAddrSingle: with one address every attempt still records it,
// but Attempt.String prints what it printed before there were several.
func TestAttemptAddrSingle(t *testing.T) {
	_, addr := servertest.Start(t, server.DefaultConfig())
	c := servertest.NewClient(t, addr, servertest.ClientConfig())
	r := c.Do(context.Background(), servertest.Get("acct"))
	if r.Status != proto.StatusOK || len(r.Log) != 1 {
		t.Fatalf("got status %v after %v, want OK after 1 attempt", r.Status, r.Log)
	}
	if got := r.Log[0].Addr; got != addr {
		t.Errorf("Attempt.Addr = %q, want %q", got, addr)
	}
	want := fmt.Sprintf("RESPONSE status=OK id=%d budget=%d class=FINAL", r.Log[0].ID, r.Log[0].BudgetMs)
	if got := r.Log[0].String(); got != want {
		t.Errorf("Attempt.String() = %q, want %q", got, want)
	}
	if got := c.Stats().Failovers; got != 0 {
		t.Errorf("Stats().Failovers = %d, want 0", got)
	}
}

func TestNewMultiValidation(t *testing.T) {
	bad := client.DefaultConfig()
	bad.MaxAttempts = 0
	tests := []struct {
		name  string
		addrs []string
		cfg   client.Config
		ok    bool
	}{
		{"nil", nil, client.DefaultConfig(), false},
		{"empty_list", []string{}, client.DefaultConfig(), false},
		{"empty_address", []string{""}, client.DefaultConfig(), false},
		{"empty_second", []string{"127.0.0.1:1", ""}, client.DefaultConfig(), false},
		{"duplicate", []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:1"}, client.DefaultConfig(), false},
		{"bad_config", []string{"127.0.0.1:1"}, bad, false},
		{"one", []string{"127.0.0.1:1"}, client.DefaultConfig(), true},
		{"two", []string{"127.0.0.1:1", "127.0.0.1:2"}, client.DefaultConfig(), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := client.NewMulti(tt.addrs, tt.cfg)
			if tt.ok {
				if err != nil || c == nil {
					t.Fatalf("NewMulti(%q) = %v, %v; want a client", tt.addrs, c, err)
				}
				c.Close()
				return
			}
			if !errors.Is(err, client.ErrConfig) || c != nil {
				t.Errorf("NewMulti(%q) = %v, %v; want nil, an error wrapping %v", tt.addrs, c, err, client.ErrConfig)
			}
		})
	}
	if c, err := client.New("", client.DefaultConfig()); !errors.Is(err, client.ErrConfig) || c != nil {
		t.Errorf(`New("") = %v, %v; want nil, an error wrapping %v`, c, err, client.ErrConfig)
	}
}

// TestFailoverStaleDeathIgnored: after a connection to the first server
// dies, the dial to the second fails too; the retry must go to the third.
// The dead connection is still the client's last one when the retry
// comes, and counting its death a second time would skip the third
// server and go back to the first.
func TestFailoverStaleDeathIgnored(t *testing.T) {
	for _, connPerCall := range []bool{false, true} {
		t.Run(fmt.Sprint("conn_per_call=", connPerCall), func(t *testing.T) {
			t.Parallel()
			a, _ := closeAfter(t, 1)
			b := refused(t).addr
			_, cAddr := servertest.Start(t, server.DefaultConfig())
			c := newMulti(t, []string{a, b, cAddr}, connPerCall)

			r := c.Do(context.Background(), servertest.Get("acct"))
			want := []hop{{client.OutcomeConnLost, a}, {client.OutcomeConnectFailed, b}, {client.OutcomeResponse, cAddr}}
			if diff := cmp.Diff(want, hops(r)); diff != "" {
				t.Errorf("attempts (-want +got):\n%s\nlog: %v", diff, r.Log)
			}
			if got := c.Stats().Failovers; got != 2 {
				t.Errorf("Stats().Failovers = %d, want 2", got)
			}
		})
	}
}
