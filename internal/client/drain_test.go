package client_test

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/server"
	"github.com/rpcbench/rpcbench/internal/servertest"
)

// writeFrames encodes frames onto nc, ignoring a write error: the test
// reads what the client saw.
func writeFrames(t *testing.T, nc net.Conn, frames ...proto.Frame) {
	var b []byte
	for i := range frames {
		var err error
		if b, err = proto.AppendFrame(b, &frames[i]); err != nil {
			t.Errorf("AppendFrame: %v", err)
			return
		}
	}
	nc.Write(b)
}

func okTo(f proto.Frame) proto.Frame {
	return proto.Frame{Type: proto.TypeResponse, ID: f.ID, Method: f.Method, Payload: []byte("account=a balance=1000")}
}

func drainFrame(id uint64) proto.Frame {
	return proto.Frame{Type: proto.TypeDrain, ID: id, Method: proto.DrainMethod}
}

// TestIDsRiseInWriteOrder: many calls at once on one connection reach
// the server in the order of their IDs, which a drain frame's last ID
// relies on. An ID taken before the lock that queues the request lets a
// later ID overtake an earlier one.
func TestIDsRiseInWriteOrder(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex // guards ids
	var ids []uint64
	addr := fakeServer(t, func(nc net.Conn) {
		fr := proto.NewFrameReader(nc, proto.TypeRequest, 0)
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			mu.Lock()
			ids = append(ids, f.ID)
			mu.Unlock()
			writeFrames(t, nc, okTo(f))
		}
	})
	c := servertest.NewClient(t, addr, servertest.ClientConfig())
	const goroutines, calls = 32, 50
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range calls {
				if r := c.Do(context.Background(), servertest.Get("a")); r.Status != proto.StatusOK {
					t.Errorf("get: %v %v", r.Status, r.Log)
					return
				}
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(ids) != goroutines*calls {
		t.Fatalf("the server read %d requests, want %d", len(ids), goroutines*calls)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("request %d read after request %d: IDs do not rise in write order", ids[i], ids[i-1])
		}
	}
}

// TestDrainResendsAbove: server A, its one worker busy with a slow get,
// drains at the first debit (a drain fault), so its drain frame names
// the get; the get is answered by A, and the three keyless debits, all
// above it, are re-sent to B, which executes each once. None is UNKNOWN,
// and the drain costs no lost connection.
func TestDrainResendsAbove(t *testing.T) {
	t.Parallel()
	cfgA := server.DefaultConfig()
	cfgA.Workers = 1
	srvA, addrA := servertest.Start(t, cfgA, "kind=drain method=debit count=1")
	srvB, addrB := servertest.Start(t, server.DefaultConfig())
	c, err := client.NewMulti([]string{addrA, addrB}, servertest.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })

	get := make(chan client.Result, 1)
	go func() { get <- c.Do(context.Background(), servertest.Get("a", "sleep=300")) }()
	servertest.WaitCounter(t, srvA, "requests.get", 1)
	debits := make([]client.Result, 3)
	var wg sync.WaitGroup
	for i := range debits {
		wg.Go(func() { debits[i] = c.Do(context.Background(), servertest.Debit("a", 10)) })
	}
	wg.Wait()
	if r := <-get; r.Status != proto.StatusOK || r.Log[0].Addr != addrA {
		t.Errorf("the get, taken before the drain: %v %v, want OK from A", r.Status, r.Log)
	}
	for i, r := range debits {
		if r.Status != proto.StatusOK {
			t.Errorf("debit %d: %v, log %v; want OK, re-sent to B", i, r.Status, r.Log)
		}
		for _, a := range r.Log {
			if a.Class == client.ClassUnknown {
				t.Errorf("debit %d: attempt %v is OUTCOME_UNKNOWN; a request above the drain's ID was never taken", i, a)
			}
		}
	}
	for _, tt := range []struct {
		srv  *server.Server
		name string
		want int64
	}{{srvA, "A exec.debit", 0}, {srvB, "B exec.debit", 3}} {
		if got := servertest.Counter(t, tt.srv, "exec.debit"); got != tt.want {
			t.Errorf("%s = %d, want %d", tt.name, got, tt.want)
		}
	}
	st := c.Stats()
	if st.Drains != 1 || st.DrainedResent < 1 || st.ConnsLost != 0 {
		t.Errorf("Stats: Drains=%d DrainedResent=%d ConnsLost=%d, want 1, at least 1, 0", st.Drains, st.DrainedResent, st.ConnsLost)
	}
}

// TestDrainNamingUnsentID: a drain frame naming an ID the client never
// wrote is a protocol error on that connection: its attempt's outcome is
// unknown, and the next call, on a new connection, is answered.
func TestDrainNamingUnsentID(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex // guards conns
	conns := 0
	addr := fakeServer(t, func(nc net.Conn) {
		mu.Lock()
		conns++
		first := conns == 1
		mu.Unlock()
		fr := proto.NewFrameReader(nc, proto.TypeRequest, 0)
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			if first {
				writeFrames(t, nc, drainFrame(f.ID+5))
				continue
			}
			writeFrames(t, nc, okTo(f))
		}
	})
	c := servertest.NewClient(t, addr, servertest.ClientConfig())
	r := c.Do(context.Background(), servertest.Debit("a", 10))
	if r.Status != proto.StatusUnknown || r.Log[0].Outcome != client.OutcomeProtocolError {
		t.Errorf("debit: %v %v, want UNKNOWN after PROTOCOL_ERROR_AFTER_SEND", r.Status, r.Log)
	}
	if r := c.Do(context.Background(), servertest.Get("a")); r.Status != proto.StatusOK {
		t.Errorf("the next call: %v %v, want OK on a new connection", r.Status, r.Log)
	}
	if st := c.Stats(); st.ProtocolErrors != 1 || st.Drains != 0 {
		t.Errorf("Stats: ProtocolErrors=%d Drains=%d, want 1 and 0", st.ProtocolErrors, st.Drains)
	}
}

// TestDrainedGivesUpUnavailable: a drained call that may make no other
// attempt gives up UNAVAILABLE: no answer came, so it is never OK.
func TestDrainedGivesUpUnavailable(t *testing.T) {
	t.Parallel()
	addr := fakeServer(t, func(nc net.Conn) {
		fr := proto.NewFrameReader(nc, proto.TypeRequest, 0)
		if _, err := fr.ReadFrame(); err != nil {
			return
		}
		writeFrames(t, nc, drainFrame(0))
		for {
			if _, err := fr.ReadFrame(); err != nil {
				return
			}
		}
	})
	cfg := servertest.ClientConfig()
	cfg.MaxAttempts = 1
	c := servertest.NewClient(t, addr, cfg)
	r := c.Do(context.Background(), servertest.Debit("a", 10))
	if r.Status != proto.StatusUnavailable || r.Stop != client.StopMaxAttempts || r.Log[0].Outcome != client.OutcomeDrained ||
		r.Log[0].Class != client.ClassNotExecuted {
		t.Errorf("got %v stop=%v log %v, want UNAVAILABLE, max_attempts, one DRAINED attempt of class NOT_EXECUTED", r.Status, r.Stop, r.Log)
	}
}

// TestDrainStopsKeepalive: a server that drains drops pings. The drained
// connection's answer comes long after keepalive would have declared the
// connection dead, and still reaches its call: keepalive stopped at the
// drain frame.
func TestDrainStopsKeepalive(t *testing.T) {
	t.Parallel()
	const answerAfter = 600 * time.Millisecond // Time+Timeout is 150ms
	addr := fakeServer(t, func(nc net.Conn) {
		fr := proto.NewFrameReader(nc, proto.TypeRequest, 0)
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		writeFrames(t, nc, drainFrame(f.ID))
		go func() {
			// Everything after the drain frame is dropped, pings included.
			for {
				if _, err := fr.ReadFrame(); err != nil {
					return
				}
			}
		}()
		select {
		case <-time.After(answerAfter):
		case <-t.Context().Done():
			return
		}
		writeFrames(t, nc, okTo(f))
		nc.(*net.TCPConn).CloseWrite()
	})
	cfg := servertest.ClientConfig()
	withKeepalive(50*time.Millisecond, 100*time.Millisecond)(&cfg)
	c := servertest.NewClient(t, addr, cfg)
	r := c.Do(context.Background(), servertest.Debit("a", 10))
	if r.Status != proto.StatusOK {
		t.Errorf("the drained connection's taken debit: %v %v, want OK", r.Status, r.Log)
	}
	if st := c.Stats(); st.KeepaliveTimeouts != 0 || st.ConnsLost != 0 {
		t.Errorf("Stats: KeepaliveTimeouts=%d ConnsLost=%d, want 0 and 0", st.KeepaliveTimeouts, st.ConnsLost)
	}
}

// TestDrainedNeverPickedAgain: instance A drains the connection of the
// first call that reaches it, answering that call; it keeps accepting,
// and would answer any later connection. Every later call, made well
// within passOver, goes to B: A's listener accepts no second
// connection, the client dials nothing beyond one connection to each,
// and no attempt is sent to A. Under every balancer, pick_first's ring
// included.
func TestDrainedNeverPickedAgain(t *testing.T) {
	t.Parallel()
	for _, bal := range []client.Balancer{client.PickFirst, client.RoundRobin, client.P2C} {
		t.Run(string(bal), func(t *testing.T) {
			t.Parallel()
			var accepted atomic.Int64
			addrA := fakeServer(t, func(nc net.Conn) {
				n := accepted.Add(1)
				fr := proto.NewFrameReader(nc, proto.TypeRequest, 0)
				if n == 1 {
					f, err := fr.ReadFrame()
					if err != nil {
						return
					}
					// The call is taken and answered; nothing after it
					// is.
					writeFrames(t, nc, drainFrame(f.ID), okTo(f))
					nc.(*net.TCPConn).CloseWrite()
				}
				for {
					f, err := fr.ReadFrame()
					if err != nil {
						return
					}
					if n > 1 {
						writeFrames(t, nc, okTo(f))
					}
				}
			})
			_, addrB := servertest.Start(t, server.DefaultConfig())
			c := balanced(t, []string{addrA, addrB}, bal)

			// p2c tosses a coin between the two; the others take A first.
			drained := false
			for i := 0; i < 40 && !drained; i++ {
				r := c.Do(context.Background(), servertest.Get("a"))
				if r.Status != proto.StatusOK || len(r.Log) != 1 {
					t.Fatalf("call %d before the drain: %v %v, want OK in one attempt", i, r.Status, r.Log)
				}
				drained = r.Log[0].Addr == addrA
			}
			if !drained {
				t.Fatalf("no call reached A; the test shows nothing")
			}
			if st := c.Stats(); st.Drains != 1 {
				t.Fatalf("Stats.Drains = %d after A's answer, want 1", st.Drains)
			}
			for i := range 8 {
				r := c.Do(context.Background(), servertest.Get("a"))
				if r.Status != proto.StatusOK {
					t.Errorf("call %d after the drain: %v %v, want OK from B", i, r.Status, r.Log)
				}
				for _, a := range r.Log {
					if a.Addr != addrB {
						t.Errorf("call %d after the drain: attempt %v, want it sent to B %s", i, a, addrB)
					}
				}
			}
			if got := accepted.Load(); got != 1 {
				t.Errorf("A accepted %d connections, want 1: the drained instance was dialed again", got)
			}
			if st := c.Stats(); st.ConnsOpened != 2 {
				t.Errorf("Stats.ConnsOpened = %d, want 2, one to each instance, none to A after its drain", st.ConnsOpened)
			}
		})
	}
}
