package client_test

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/server"
	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/servertest"
)

// lostLog records Config.OnConnLost calls.
type lostLog struct {
	n    atomic.Int64
	once chan lostCall // the first call
}

type lostCall struct {
	addr string
	err  error
}

func newLostLog() *lostLog { return &lostLog{once: make(chan lostCall, 1)} }

func (l *lostLog) hook(addr string, err error) {
	if l.n.Add(1) == 1 {
		l.once <- lostCall{addr, err}
	}
}

// wait returns the first OnConnLost call, failing the test if none comes
// within servertest.WaitLimit.
func (l *lostLog) wait(t *testing.T) lostCall {
	t.Helper()
	select {
	case lc := <-l.once:
		return lc
	case <-time.After(servertest.WaitLimit):
		t.Fatalf("OnConnLost not called within %v", servertest.WaitLimit)
		return lostCall{}
	}
}

// silentServer accepts connections and reads everything sent on them,
// but never answers: a peer that is gone while the connection looks
// open (its host hung, or the network drops its packets and ours).
func silentServer(t *testing.T) string {
	return fakeServer(t, func(nc net.Conn) { io.Copy(io.Discard, nc) })
}

// TestKeepaliveSilentPeer: a call in flight to a peer that reads but never
// answers. With keepalive the connection is declared dead Time+Timeout
// after its last read (here its opening), long before the call's own
// 10s: the keyless debit ends UNKNOWN, lost after send, with
// ErrKeepaliveTimeout. Without it (the negative control) the client
// still believes the connection alive well after that.
func TestKeepaliveSilentPeer(t *testing.T) {
	const (
		kaTime    = 100 * time.Millisecond
		kaTimeout = 100 * time.Millisecond
		// margin is how much longer than Time+Timeout the negative
		// control waits before it looks.
		margin = 700 * time.Millisecond
	)
	tests := []struct {
		name      string
		keepalive *client.KeepaliveConfig
	}{
		{"keepalive", &client.KeepaliveConfig{Time: kaTime, Timeout: kaTimeout}},
		{"negative_control_no_keepalive", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := silentServer(t)
			lost := newLostLog()
			cfg := servertest.ClientConfig()
			cfg.AttemptTimeout, cfg.Deadline = 10*time.Second, 10*time.Second
			cfg.Keepalive = tt.keepalive
			cfg.OnConnLost = lost.hook
			c, err := client.New(addr, cfg)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan client.Result, 1)
			go func() { done <- c.Do(context.Background(), servertest.Debit("a", 1)) }()

			if tt.keepalive == nil {
				select {
				case r := <-done:
					t.Fatalf("call ended without keepalive: %v %v %v", r.Status, r.Log, r.Err)
				case <-time.After(kaTime + kaTimeout + margin):
				}
				if got := c.Stats(); got.ConnsLost != 0 || got.PingsSent != 0 || got.ConnsOpened != 1 {
					t.Errorf("got ConnsLost %d, PingsSent %d, ConnsOpened %d; want 0, 0, 1: the connection still believed alive", got.ConnsLost, got.PingsSent, got.ConnsOpened)
				}
				c.Close()
				if r := <-done; !errors.Is(r.Err, client.ErrClosed) {
					t.Errorf("call at Close: got Err %v, want %v", r.Err, client.ErrClosed)
				}
				if got := lost.n.Load(); got != 0 {
					t.Errorf("OnConnLost called %d times, want 0: Close is no failure", got)
				}
				return
			}

			defer c.Close()
			var r client.Result
			select {
			case r = <-done:
			case <-time.After(servertest.WaitLimit):
				t.Fatalf("call to a silent peer still waiting after %v with keepalive %+v", servertest.WaitLimit, *tt.keepalive)
			}
			var cle *client.ConnLostError
			if r.Status != proto.StatusUnknown || len(r.Log) != 1 || r.Log[0].Outcome != client.OutcomeConnLost || r.Log[0].Class != client.ClassUnknown {
				t.Errorf("got %v after %v; want UNKNOWN after one CONN_LOST_AFTER_SEND attempt", r.Status, r.Log)
			}
			if !errors.Is(r.Err, client.ErrKeepaliveTimeout) || !errors.As(r.Err, &cle) {
				t.Errorf("got Err %v; want a *ConnLostError wrapping %v", r.Err, client.ErrKeepaliveTimeout)
			}
			// Nothing was ever read: the last read is the connection's
			// opening, after the call started.
			if r.Elapsed < kaTime+kaTimeout || r.Elapsed > 5*time.Second {
				t.Errorf("call ended after %v; want within [%v, 5s]: Time+Timeout after the last read, well before its 10s", r.Elapsed, kaTime+kaTimeout)
			}
			lc := lost.wait(t)
			if lc.addr != addr || !errors.Is(lc.err, client.ErrKeepaliveTimeout) {
				t.Errorf("OnConnLost(%q, %v); want (%q, an error wrapping %v)", lc.addr, lc.err, addr, client.ErrKeepaliveTimeout)
			}
			c.Close()
			if got := lost.n.Load(); got != 1 {
				t.Errorf("OnConnLost called %d times, want 1", got)
			}
			if got := c.Stats(); got.KeepaliveTimeouts != 1 || got.ConnsLost != 1 || got.PingsSent < 1 || got.ConnsOpened != 1 {
				t.Errorf("got KeepaliveTimeouts %d, ConnsLost %d, PingsSent %d, ConnsOpened %d; want 1, 1, >= 1, 1", got.KeepaliveTimeouts, got.ConnsLost, got.PingsSent, got.ConnsOpened)
			}
		})
	}
}

// TestKeepaliveIdleConnGoesSilent: a connection that served a call and
// sits idle is checked too. Once the path to its server goes silent it is
// declared dead, with no call on it, and the next call dials afresh.
func TestKeepaliveIdleConnGoesSilent(t *testing.T) {
	_, addr := servertest.Start(t, server.DefaultConfig())
	px := newProxy(t, addr)
	lost := newLostLog()
	cfg := servertest.ClientConfig()
	cfg.Keepalive = &client.KeepaliveConfig{Time: 100 * time.Millisecond, Timeout: 100 * time.Millisecond}
	cfg.OnConnLost = lost.hook
	c := servertest.NewClient(t, px.addr, cfg)

	if r := c.Do(context.Background(), servertest.Get("a")); r.Status != proto.StatusOK {
		t.Fatalf("first call: got %v %v, want OK", r.Status, r.Err)
	}
	px.silence()
	lc := lost.wait(t)
	if lc.addr != px.addr || !errors.Is(lc.err, client.ErrKeepaliveTimeout) {
		t.Errorf("OnConnLost(%q, %v); want (%q, an error wrapping %v)", lc.addr, lc.err, px.addr, client.ErrKeepaliveTimeout)
	}
	if got := c.Stats(); got.KeepaliveTimeouts != 1 || got.ConnsLost != 1 || got.PingsSent < 1 {
		t.Errorf("got KeepaliveTimeouts %d, ConnsLost %d, PingsSent %d; want 1, 1, >= 1", got.KeepaliveTimeouts, got.ConnsLost, got.PingsSent)
	}
	if r := c.Do(context.Background(), servertest.Get("a")); r.Status != proto.StatusOK || len(r.Log) != 1 {
		t.Errorf("call after the death: got %v after %v, want OK at the first attempt", r.Status, r.Log)
	}
	if got := c.Stats().ConnsOpened; got != 2 {
		t.Errorf("got ConnsOpened %d, want 2: the call after the death dials again", got)
	}
}

// TestKeepaliveNoFalsePositive: an idle connection to a server that
// answers its pings is kept for many intervals, and the pings' answers
// are not late responses.
func TestKeepaliveNoFalsePositive(t *testing.T) {
	const kaTime = 20 * time.Millisecond
	_, addr := servertest.Start(t, server.DefaultConfig())
	cfg := servertest.ClientConfig()
	cfg.Keepalive = &client.KeepaliveConfig{Time: kaTime, Timeout: 200 * time.Millisecond}
	cfg.OnConnLost = func(addr string, err error) { t.Errorf("OnConnLost(%q, %v) on a healthy connection", addr, err) }
	c := servertest.NewClient(t, addr, cfg)

	if r := c.Do(context.Background(), servertest.Get("a")); r.Status != proto.StatusOK {
		t.Fatalf("first call: got %v %v, want OK", r.Status, r.Err)
	}
	time.Sleep(20 * kaTime)
	if r := c.Do(context.Background(), servertest.Get("a")); r.Status != proto.StatusOK || len(r.Log) != 1 {
		t.Errorf("call after idling: got %v after %v, want OK at the first attempt", r.Status, r.Log)
	}
	got := c.Stats()
	if got.PingsSent == 0 || got.KeepaliveTimeouts != 0 || got.ConnsLost != 0 || got.ConnsOpened != 1 || got.LateDropped != 0 {
		t.Errorf("got PingsSent %d, KeepaliveTimeouts %d, ConnsLost %d, ConnsOpened %d, LateDropped %d; want > 0, 0, 0, 1, 0",
			got.PingsSent, got.KeepaliveTimeouts, got.ConnsLost, got.ConnsOpened, got.LateDropped)
	}
}

// TestKeepalivePingIDs: on one connection carrying answered calls, an
// abandoned call with its ctl.cancel and keepalive pings, no two requests
// share an ID. Pings have bit 62 set and bit 63 clear, so they can meet
// neither a call (IDs count up from 1) nor a cancel (bit 63 set).
func TestKeepalivePingIDs(t *testing.T) {
	const (
		cancelBit = 1 << 63
		pingBit   = 1 << 62
	)
	type req struct {
		id     uint64
		method string
	}
	var mu sync.Mutex // guards seen
	var seen []req
	addr := fakeServer(t, func(nc net.Conn) {
		fr := proto.NewFrameReader(nc, proto.TypeRequest, 0)
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			mu.Lock()
			seen = append(seen, req{f.ID, f.Method})
			mu.Unlock()
			if string(f.Payload) == "noreply" {
				continue
			}
			b, err := proto.AppendFrame(nil, &proto.Frame{Type: proto.TypeResponse, ID: f.ID, Method: f.Method})
			if err != nil {
				t.Errorf("encoding an answer: %v", err)
				return
			}
			if _, err := nc.Write(b); err != nil {
				return
			}
		}
	})
	cfg := servertest.ClientConfig()
	cfg.MaxAttempts = 1
	cfg.CancelAbandoned = true
	cfg.Keepalive = &client.KeepaliveConfig{Time: 10 * time.Millisecond, Timeout: 2 * time.Second}
	c := servertest.NewClient(t, addr, cfg)
	ctx := context.Background()
	for range 3 {
		if r := c.Do(ctx, client.Call{Method: "get"}); r.Status != proto.StatusOK {
			t.Fatalf("got %v %v, want OK", r.Status, r.Err)
		}
	}
	if r := c.Do(ctx, client.Call{Method: "get", Payload: []byte("noreply"), AttemptTimeout: 30 * time.Millisecond}); len(r.Log) != 1 || r.Log[0].Outcome != client.OutcomeTimeout {
		t.Fatalf("unanswered call: got %v, want TIMEOUT", r.Log)
	}
	servertest.WaitFor(t, "3 pings", func() bool { return c.Stats().PingsSent >= 3 })
	if r := c.Do(ctx, client.Call{Method: "get"}); r.Status != proto.StatusOK {
		t.Fatalf("got %v %v, want OK", r.Status, r.Err)
	}
	servertest.WaitFor(t, "the cancel", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range seen {
			if r.method == serverapi.MethodCancel {
				return true
			}
		}
		return false
	})

	mu.Lock()
	defer mu.Unlock()
	ids := make(map[uint64]string)
	count := make(map[string]int)
	for _, r := range seen {
		if m, ok := ids[r.id]; ok {
			t.Errorf("request ID %#x sent for %s and %s", r.id, m, r.method)
		}
		ids[r.id] = r.method
		count[r.method]++
		var ok bool
		switch r.method {
		case serverapi.MethodPing:
			ok = r.id&pingBit != 0 && r.id&cancelBit == 0
		case serverapi.MethodCancel:
			ok = r.id&cancelBit != 0 && r.id&pingBit == 0
		default:
			ok = r.id&(cancelBit|pingBit) == 0
		}
		if !ok {
			t.Errorf("%s sent with ID %#x", r.method, r.id)
		}
	}
	if count[serverapi.MethodPing] < 3 || count[serverapi.MethodCancel] != 1 || count["get"] != 5 {
		t.Errorf("got requests %v; want >= 3 pings, 1 cancel, 5 gets", count)
	}
	if got := c.Stats().LateDropped; got != 0 {
		t.Errorf("got LateDropped %d, want 0: ping and cancel answers are not late", got)
	}
}

// proxy relays TCP connections to a server until silence makes the ones
// open at that moment drop everything in both directions, still reading:
// to the client, a server gone silent behind an open connection.
type proxy struct {
	addr string
	mu   sync.Mutex     // guards mute
	mute []*atomic.Bool // one per relayed connection
}

func newProxy(t *testing.T, to string) *proxy {
	p := &proxy{}
	p.addr = fakeServer(t, func(cc net.Conn) {
		sc, err := net.Dial("tcp", to)
		if err != nil {
			t.Errorf("proxy: %v", err)
			return
		}
		muted := new(atomic.Bool)
		p.mu.Lock()
		p.mute = append(p.mute, muted)
		p.mu.Unlock()
		relay := func(dst, src net.Conn) {
			buf := make([]byte, 4096)
			for {
				n, err := src.Read(buf)
				if n > 0 && !muted.Load() {
					dst.Write(buf[:n])
				}
				if err != nil {
					// Unblock the other direction.
					cc.Close()
					sc.Close()
					return
				}
			}
		}
		var wg sync.WaitGroup
		wg.Go(func() { relay(sc, cc) })
		relay(cc, sc)
		wg.Wait()
	})
	return p
}

// silence mutes every connection relayed so far.
func (p *proxy) silence() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range p.mute {
		m.Store(true)
	}
}
