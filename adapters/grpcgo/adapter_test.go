package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/rpcbench/rpcbench/adapters/gokit/bankpb"
	"github.com/rpcbench/rpcbench/adapters/gokit/clientkit"
	"github.com/rpcbench/rpcbench/adapters/gokit/clientkit/clientkittest"
)

// bank is grpc-go's own server for the Bank service. A debit whose
// x-rpcbench-call is in failFirst is answered UNAVAILABLE, unexecuted,
// on that many attempts first.
type bank struct {
	bankpb.UnimplementedBankServer

	mu        sync.Mutex // guards the fields below
	failFirst map[string]int
	attempts  map[string][]metadata.MD // each attempt's metadata, by x-rpcbench-call
}

func (b *bank) Debit(ctx context.Context, req *bankpb.DebitRequest) (*bankpb.AccountReply, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	name := strings.Join(md.Get("x-rpcbench-call"), ",")
	b.mu.Lock()
	b.attempts[name] = append(b.attempts[name], md)
	n := len(b.attempts[name])
	fail := n <= b.failFirst[name]
	b.mu.Unlock()
	if fail {
		return nil, status.Error(codes.Unavailable, "refused before executing")
	}
	grpc.SetHeader(ctx, metadata.Pairs("x-server", "bank", "x-raw-bin", "\x00\xff"))
	grpc.SetTrailer(ctx, metadata.Pairs("x-attempt", fmt.Sprint(n)))
	return &bankpb.AccountReply{Account: req.Account, Balance: 1000 - req.Amount, Exec: 1}, nil
}

func (b *bank) Get(ctx context.Context, req *bankpb.GetRequest) (*bankpb.AccountReply, error) {
	select {
	case <-time.After(time.Duration(req.SleepMs) * time.Millisecond):
	case <-ctx.Done():
		// Never an OK after the budget: it could reach the client
		// before its own deadline fires.
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	return &bankpb.AccountReply{Account: req.Account, Balance: 1000}, nil
}

func (b *bank) attemptsOf(name string) []metadata.MD {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.attempts[name]
}

// startBank serves a bank on a loopback port until the test ends.
func startBank(t *testing.T) (*bank, string) {
	ln := clientkittest.Listen(t)
	b := &bank{failFirst: map[string]int{}, attempts: map[string][]metadata.MD{}}
	srv := grpc.NewServer()
	bankpb.RegisterBankServer(srv, b)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return b, ln.Addr().String()
}

// TestRoundTrip: init_ok names grpc-go as linked, with its capabilities
// (no hedging, no per-attempt timeout); a debit reaches grpc-go's
// server with its metadata, and its response, headers and trailers come
// back; shutdown is answered and the adapter exits 0 at the end of stdin.
func TestRoundTrip(t *testing.T) {
	b, addr := startBank(t)
	h := clientkittest.Start(t, clientStack)
	h.InitOK("grpc-go", grpc.Version, clientkit.Capabilities{RetryPolicy: true, Throttling: true, TransparentRetry: true,
		Keepalive: true, Pushback: true, WaitForReady: true})

	h.Send(clientkittest.DebitLine(1, "ch1", addr, nil, "rt-1"))
	r := h.Recv()
	want := map[string]any{"type": "result", "id": 1.0, "code": "OK", "code_num": 0.0, "message": "",
		"response": map[string]any{"account": "acct-A", "balance": "990", "exec": "1", "replayed": false, "budgetMs": "0"},
		"headers":  map[string]any{"content-type": []any{"application/grpc"}, "x-server": []any{"bank"}, "x-raw-bin": []any{"AP8="}},
		"trailers": map[string]any{"x-attempt": []any{"1"}}}
	delete(r, "elapsed_ms")
	if g, w := fmt.Sprint(r), fmt.Sprint(want); g != w {
		t.Errorf("result:\ngot  %s\nwant %s", g, w)
	}
	att := b.attemptsOf("rt-1")
	if len(att) != 1 || strings.Join(att[0].Get("idempotency-key"), ",") != "k-rt-1" {
		t.Errorf("the server saw attempts %v, want one with idempotency-key k-rt-1", att)
	}

	h.Shutdown()
}

// TestRetryPolicyHonoured: a debit refused UNAVAILABLE twice succeeds
// on its third attempt under the harness's retry config, with
// grpc-previous-rpc-attempts on the retries; under no config it ends
// UNAVAILABLE after one attempt.
func TestRetryPolicyHonoured(t *testing.T) {
	b, addr := startBank(t)
	b.failFirst["retry-1"], b.failFirst["default-1"] = 2, 2
	h := clientkittest.Start(t, clientStack)
	h.Init()

	h.Send(clientkittest.DebitLine(1, "retry", addr, clientkittest.ServiceConfig(t, "retry.json"), "retry-1"))
	if r := h.Recv(); r["code"] != "OK" {
		t.Errorf("under retry: got %v, want OK", r)
	}
	att := b.attemptsOf("retry-1")
	var prev []string
	for _, md := range att {
		prev = append(prev, strings.Join(md.Get("grpc-previous-rpc-attempts"), ","))
	}
	if got := strings.Join(prev, " "); len(att) != 3 || got != " 1 2" {
		t.Errorf("under retry: the server saw %d attempts with grpc-previous-rpc-attempts %q, want 3 with \" 1 2\"", len(att), got)
	}

	h.Send(clientkittest.DebitLine(2, "default", addr, nil, "default-1"))
	if r := h.Recv(); r["code"] != "UNAVAILABLE" || r["code_num"] != 14.0 || r["message"] != "refused before executing" {
		t.Errorf("under no config: got %v, want UNAVAILABLE", r)
	}
	if n := len(b.attemptsOf("default-1")); n != 1 {
		t.Errorf("under no config: %d attempts, want 1", n)
	}
}

// TestHarnessConfigsAccepted: grpc-go builds a channel from every service
// config the harness sends.
func TestHarnessConfigsAccepted(t *testing.T) {
	_, addr := startBank(t)
	files, _ := filepath.Glob(filepath.Join(clientkittest.ConfigDir, "*.json"))
	if len(files) < 2 {
		t.Fatalf("found %v in %s, want the harness's configs", files, clientkittest.ConfigDir)
	}
	h := clientkittest.Start(t, clientStack)
	h.Init()
	for i, f := range files {
		h.Send(clientkittest.DebitLine(i+1, f, addr, clientkittest.ServiceConfig(t, filepath.Base(f)), "cfg"))
		if r := h.Recv(); r["type"] != "result" || r["code"] != "OK" {
			t.Errorf("%s: got %v, want an OK result", f, r)
		}
	}
}

// TestServiceConfigRefused: a service config grpc-go's parser refuses
// is the call's call_error config, in grpc-go's words; the generic call
// errors are clientkit's and tested there.
func TestServiceConfigRefused(t *testing.T) {
	_, addr := startBank(t)
	h := clientkittest.Start(t, clientStack)
	h.Init()
	sc := json.RawMessage(`{"methodConfig":[{"name":[{"service":"rpcbench.bank.v1.Bank"}],"retryPolicy":{"maxAttempts":4,"initialBackoff":"100ms","maxBackoff":"0.2s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]}`)
	h.Send(clientkittest.DebitLine(1, "bad", addr, sc, "x"))
	r := h.Recv()
	if r["type"] != "call_error" || r["kind"] != clientkit.KindConfig || !strings.Contains(fmt.Sprint(r["text"]), `malformed duration "100ms"`) {
		t.Errorf("got %v, want call_error config containing %q", r, `malformed duration "100ms"`)
	}
}

// TestDeadline: the call's deadline is grpc-go's, so a slow get ends
// DEADLINE_EXCEEDED at about deadline_ms.
func TestDeadline(t *testing.T) {
	_, addr := startBank(t)
	h := clientkittest.Start(t, clientStack)
	h.Init()
	h.Send(`{"type":"call","id":1,"channel":{"id":"c","target":"` + addr + `"},"method":"rpcbench.bank.v1.Bank/Get","request":{"account":"a","sleepMs":"2000"},"deadline_ms":100,"metadata":{},"wait_for_ready":false}`)
	r := h.Recv()
	if r["code"] != "DEADLINE_EXCEEDED" || r["code_num"] != 4.0 || r["response"] != nil {
		t.Errorf("got %v, want DEADLINE_EXCEEDED", r)
	}
	if ms := r["elapsed_ms"].(float64); ms < 100 || ms > 1000 {
		t.Errorf("elapsed_ms %v, want about 100", ms)
	}
}

// silentPeer is a cleartext HTTP/2 server that never answers: on each
// connection it reads the client's preface, sends its own SETTINGS,
// and from then on reads every frame and writes nothing, not even a
// PING's ACK, as a peer behind a link gone silent would.
type silentPeer struct {
	headers chan struct{} // one value per HEADERS frame read (up to 16): a call reached the peer

	mu    sync.Mutex // guards conns, pings
	conns []net.Conn
	pings int // PING frames read, on every connection
}

// startSilentPeer serves a silentPeer on a loopback port of its own
// until the test ends, when its connections are closed and its
// goroutines have returned.
func startSilentPeer(t *testing.T) (*silentPeer, string) {
	ln := clientkittest.Listen(t)
	p := &silentPeer{headers: make(chan struct{}, 16)}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			p.conns = append(p.conns, c)
			p.mu.Unlock()
			wg.Go(func() { p.serve(c) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		wg.Wait()
	})
	return p, ln.Addr().String()
}

// HTTP/2 frame types the silent peer tells apart (RFC 9113 §6).
const (
	frameHeaders  = 0x1
	frameSettings = 0x4
	framePing     = 0x6
)

func (p *silentPeer) serve(c net.Conn) {
	preface := make([]byte, len("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"))
	if _, err := io.ReadFull(c, preface); err != nil {
		return
	}
	// An empty SETTINGS frame: length 0, type SETTINGS, no flags, stream 0.
	if _, err := c.Write([]byte{0, 0, 0, frameSettings, 0, 0, 0, 0, 0}); err != nil {
		return
	}
	hdr := make([]byte, 9)
	for {
		if _, err := io.ReadFull(c, hdr); err != nil {
			return
		}
		n := int64(hdr[0])<<16 | int64(hdr[1])<<8 | int64(hdr[2])
		if _, err := io.CopyN(io.Discard, c, n); err != nil {
			return
		}
		switch hdr[3] {
		case frameHeaders:
			select {
			case p.headers <- struct{}{}:
			default: // 16 already say so
			}
		case framePing:
			p.mu.Lock()
			p.pings++
			p.mu.Unlock()
		}
	}
}

func (p *silentPeer) pingsRead() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pings
}

// TestKeepaliveEndsSilentCall: a get in flight on a connection gone
// silent ends UNAVAILABLE well before its deadline on a channel with
// keepalive, after the ping's time and timeout, and the peer read the
// ping; on a channel without keepalive, the control, the same get runs
// to its deadline and no ping is sent. The keepalive is the harness's
// (10 s, 1 s): grpc-go raises a client's Time below 10 s to 10 s
// (internal.KeepaliveMinPingTime), so this test takes the deadline,
// 14 s, the two calls running at once.
func TestKeepaliveEndsSilentCall(t *testing.T) {
	const deadline = 14 * time.Second
	withKA, addrKA := startSilentPeer(t)
	without, addr := startSilentPeer(t)
	h := clientkittest.Start(t, clientStack)
	h.Init()
	get := func(id int, ch map[string]any) string {
		return clientkittest.Call{ID: id, Channel: ch, Method: "rpcbench.bank.v1.Bank/Get",
			Request: map[string]any{"account": "a"}, DeadlineMS: int(deadline.Milliseconds())}.Line()
	}
	h.Send(get(1, map[string]any{"id": "keepalive", "target": addrKA,
		"keepalive": map[string]any{"time_ms": 10000, "timeout_ms": 1000, "permit_without_stream": false}}))
	h.Send(get(2, map[string]any{"id": "none", "target": addr}))
	results := map[float64]map[string]any{}
	for range 2 {
		r := h.Recv()
		results[r["id"].(float64)] = r
	}
	ka, control := results[1], results[2]
	t.Logf("with keepalive: %v after %v ms; without: %v after %v ms", ka["code"], ka["elapsed_ms"], control["code"], control["elapsed_ms"])
	if ka["code"] != "UNAVAILABLE" {
		t.Errorf("with keepalive: got %v, want UNAVAILABLE before the %v deadline", ka, deadline)
	}
	// Pings start Time after the last read, which follows the call's
	// start: the call cannot end sooner.
	if ms, _ := ka["elapsed_ms"].(float64); ms < 10000 {
		t.Errorf("with keepalive: elapsed_ms %v, want at least Time, 10000", ms)
	}
	if len(withKA.headers) == 0 {
		t.Error("with keepalive: the call never reached the peer")
	}
	if n := withKA.pingsRead(); n == 0 {
		t.Errorf("with keepalive: the peer read %d PINGs, want at least 1", n)
	}
	if control["code"] != "DEADLINE_EXCEEDED" {
		t.Errorf("without keepalive: got %v, want DEADLINE_EXCEEDED at the %v deadline", control, deadline)
	}
	if len(without.headers) == 0 {
		t.Error("without keepalive: the call never reached the peer")
	}
	if n := without.pingsRead(); n != 0 {
		t.Errorf("without keepalive: the peer read %d PINGs, want 0", n)
	}
}
