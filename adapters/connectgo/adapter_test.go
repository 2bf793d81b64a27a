package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/rpcbench/rpcbench/adapters/gokit/bankpb"
	"github.com/rpcbench/rpcbench/adapters/gokit/bankpb/bankpbconnect"
	"github.com/rpcbench/rpcbench/adapters/gokit/clientkit"
	"github.com/rpcbench/rpcbench/adapters/gokit/clientkit/clientkittest"
)

// bank is connect-go's own handler for the Bank service, serving the
// gRPC protocol among others. A debit of account "code-N" fails with
// code N.
type bank struct {
	bankpbconnect.UnimplementedBankHandler

	mu       sync.Mutex             // guards attempts
	attempts map[string]http.Header // each call's request header, by x-rpcbench-call

	// started gets a value as a get starts, unless it holds one.
	started chan struct{}
}

func (b *bank) Debit(ctx context.Context, req *connect.Request[bankpb.DebitRequest]) (*connect.Response[bankpb.AccountReply], error) {
	b.mu.Lock()
	b.attempts[req.Header().Get("x-rpcbench-call")] = req.Header().Clone()
	b.mu.Unlock()
	if n, ok := strings.CutPrefix(req.Msg.Account, "code-"); ok {
		c, _ := strconv.Atoi(n)
		err := connect.NewError(connect.Code(c), fmt.Errorf("failed with code %d", c))
		err.Meta().Set("x-in-error", "yes")
		return nil, err
	}
	resp := connect.NewResponse(&bankpb.AccountReply{Account: req.Msg.Account, Balance: 1000 - req.Msg.Amount, Exec: 1})
	resp.Header().Set("x-server", "bank")
	resp.Header().Set("x-raw-bin", connect.EncodeBinaryHeader([]byte{0, 0xff}))
	resp.Trailer().Set("x-attempt", "1")
	return resp, nil
}

// Get sleeps sleep_ms, or until its deadline, and answers the budget it
// took from the request's grpc-timeout.
func (b *bank) Get(ctx context.Context, req *connect.Request[bankpb.GetRequest]) (*connect.Response[bankpb.AccountReply], error) {
	select {
	case b.started <- struct{}{}:
	default:
	}
	select {
	case <-time.After(time.Duration(req.Msg.SleepMs) * time.Millisecond):
	case <-ctx.Done():
		// Never an OK after the budget: it could reach the client
		// before its own deadline fires.
		return nil, connect.NewError(connect.CodeDeadlineExceeded, ctx.Err())
	}
	var budget int64
	if d, ok := ctx.Deadline(); ok {
		budget = time.Until(d).Milliseconds()
	}
	return connect.NewResponse(&bankpb.AccountReply{Account: req.Msg.Account, Balance: 1000, BudgetMs: budget}), nil
}

func (b *bank) headerOf(name string) http.Header {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.attempts[name]
}

// startBank serves a bank over HTTP/2 cleartext on a loopback port until
// the test ends.
func startBank(t *testing.T) (*bank, string) {
	ln := clientkittest.Listen(t)
	b := &bank{attempts: map[string]http.Header{}, started: make(chan struct{}, 1)}
	mux := http.NewServeMux()
	mux.Handle(bankpbconnect.NewBankHandler(b))
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: mux, Protocols: &p}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return b, ln.Addr().String()
}

// TestRoundTrip: init_ok names connect-go as linked, with its
// capabilities; a debit reaches connect-go's server with its metadata,
// and its response, headers and trailers come back; a get carries its
// deadline as grpc-timeout; shutdown is answered and the adapter exits 0
// at the end of stdin.
func TestRoundTrip(t *testing.T) {
	b, addr := startBank(t)
	h := clientkittest.Start(t, clientStack)
	h.InitOK("connect-go", connect.Version, clientkit.Capabilities{TransparentRetry: true, Keepalive: true})

	h.Send(clientkittest.DebitLine(1, "ch1", addr, nil, "rt-1"))
	r := h.Recv()
	want := map[string]any{"type": "result", "id": 1.0, "code": "OK", "code_num": 0.0, "message": "",
		"response": map[string]any{"account": "acct-A", "balance": "990", "exec": "1", "replayed": false, "budgetMs": "0"},
		"headers": map[string]any{"content-type": []any{"application/grpc"}, "x-server": []any{"bank"}, "x-raw-bin": []any{"AP8="},
			"grpc-accept-encoding": []any{"gzip"}, "grpc-encoding": []any{"gzip"}},
		"trailers": map[string]any{"x-attempt": []any{"1"}, "grpc-status": []any{"0"}}}
	delete(r, "elapsed_ms")
	delete(r["headers"].(map[string]any), "date") // net/http's server adds it
	if g, w := fmt.Sprint(r), fmt.Sprint(want); g != w {
		t.Errorf("result:\ngot  %s\nwant %s", g, w)
	}
	if md := b.headerOf("rt-1"); md.Get("idempotency-key") != "k-rt-1" {
		t.Errorf("the server saw header %v, want idempotency-key k-rt-1", md)
	}

	h.Send(clientkittest.Call{ID: 2, Channel: map[string]any{"id": "ch1", "target": addr}, Method: "rpcbench.bank.v1.Bank/Get",
		Request: map[string]any{"account": "acct-B"}, DeadlineMS: 3000}.Line())
	r = h.Recv()
	resp, _ := r["response"].(map[string]any)
	budget, _ := strconv.Atoi(fmt.Sprint(resp["budgetMs"]))
	if r["code"] != "OK" || resp["account"] != "acct-B" || budget < 1 || budget > 3000 {
		t.Errorf("get: got %v, want OK for acct-B with budgetMs in [1,3000]", r)
	}

	h.Shutdown()
}

// TestCodes: each code the server answers is reported by its canonical
// name and number, with the message and the error's metadata as
// connect-go surfaced them.
func TestCodes(t *testing.T) {
	_, addr := startBank(t)
	h := clientkittest.Start(t, clientStack)
	h.Init()
	names := []string{"CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
		"PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
		"INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}
	for i, name := range names {
		num := i + 1
		h.Send(clientkittest.Call{ID: num, Channel: map[string]any{"id": "c", "target": addr},
			Request: map[string]any{"account": fmt.Sprint("code-", num), "amount": "1"}}.Line())
		r := h.Recv()
		tr, _ := r["trailers"].(map[string]any)
		if r["type"] != "result" || r["code"] != name || r["code_num"] != float64(num) ||
			r["message"] != fmt.Sprint("failed with code ", num) || r["response"] != nil || fmt.Sprint(tr["x-in-error"]) != "[yes]" {
			t.Errorf("code %d: got %v, want %s, its message, x-in-error in trailers", num, r, name)
		}
	}
}

// TestCallErrors: what connect-go cannot do, refused with the kind the
// protocol gives it; none of them reaches the server. The generic call
// errors are clientkit's and tested there.
func TestCallErrors(t *testing.T) {
	b, addr := startBank(t)
	h := clientkittest.Start(t, clientStack)
	h.Init()
	h.Send(clientkittest.DebitLine(1, "ch1", addr, nil, "ok"))
	h.Recv()
	ka := func(id string, timeMS, timeoutMS int, permit bool) map[string]any {
		return map[string]any{"id": id, "target": addr,
			"keepalive": map[string]any{"time_ms": timeMS, "timeout_ms": timeoutMS, "permit_without_stream": permit}}
	}
	tests := []struct {
		name, line, kind, text string
	}{
		{"retry config", clientkittest.DebitLine(2, "retry", addr, clientkittest.ServiceConfig(t, "retry.json"), "x"), clientkit.KindUnsupported, "no service config"},
		{"throttled config", clientkittest.DebitLine(3, "thr", addr, clientkittest.ServiceConfig(t, "throttled.json"), "x"), clientkit.KindUnsupported, "no service config"},
		{"empty config", clientkittest.DebitLine(4, "empty", addr, json.RawMessage(`{}`), "x"), clientkit.KindUnsupported, "no service config"},
		{"wait for ready", clientkittest.Call{ID: 5, Channel: map[string]any{"id": "ch1", "target": addr}, WaitForReady: true}.Line(), clientkit.KindUnsupported, "no wait-for-ready"},
		{"keepalive without streams", clientkittest.Call{ID: 6, Channel: ka("ka", 1000, 1000, false)}.Line(), clientkit.KindUnsupported, "permit_without_stream false"},
		{"keepalive of zero", clientkittest.Call{ID: 7, Channel: ka("ka0", 0, 1000, true)}.Line(), clientkit.KindConfig, "time_ms 0"},
		{"target not host:port", clientkittest.Call{ID: 8, Channel: map[string]any{"id": "bad", "target": addr + "/x"}}.Line(), clientkit.KindConfig, "is not host:port"},
	}
	for _, tt := range tests {
		h.Send(tt.line)
		r := h.Recv()
		if r["type"] != "call_error" || r["kind"] != tt.kind || !strings.Contains(fmt.Sprint(r["text"]), tt.text) {
			t.Errorf("%s: got %v, want call_error %s containing %q", tt.name, r, tt.kind, tt.text)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.attempts) != 1 {
		t.Errorf("the server saw calls %v, want only the first", b.attempts)
	}
}

// TestDeadline: the call's deadline is connect-go's, so a slow get ends
// DEADLINE_EXCEEDED at about deadline_ms.
func TestDeadline(t *testing.T) {
	_, addr := startBank(t)
	h := clientkittest.Start(t, clientStack)
	h.Init()
	h.Send(clientkittest.Call{ID: 1, Channel: map[string]any{"id": "c", "target": addr}, Method: "rpcbench.bank.v1.Bank/Get",
		Request: map[string]any{"account": "a", "sleepMs": "2000"}, DeadlineMS: 100}.Line())
	r := h.Recv()
	if r["code"] != "DEADLINE_EXCEEDED" || r["code_num"] != 4.0 || r["response"] != nil {
		t.Errorf("got %v, want DEADLINE_EXCEEDED", r)
	}
	if ms := r["elapsed_ms"].(float64); ms < 100 || ms > 1500 {
		t.Errorf("elapsed_ms %v, want about 100", ms)
	}
}

// TestKeepaliveChannel: a channel with a keepalive the transport can
// honour is built and answers.
func TestKeepaliveChannel(t *testing.T) {
	_, addr := startBank(t)
	h := clientkittest.Start(t, clientStack)
	h.Init()
	h.Send(clientkittest.Call{ID: 1, Channel: map[string]any{"id": "ka", "target": addr,
		"keepalive": map[string]any{"time_ms": 10000, "timeout_ms": 1000, "permit_without_stream": true}}}.Line())
	if r := h.Recv(); r["type"] != "result" || r["code"] != "OK" {
		t.Errorf("got %v, want an OK result", r)
	}
}

// silencer forwards one loopback connection at a time to a backend until
// silence is called; from then on it reads both sides and forwards
// nothing, as a peer whose link went dead would.
type silencer struct {
	ln      net.Listener
	backend string
	quiet   chan struct{}
	once    sync.Once
}

func startSilencer(t *testing.T, backend string) *silencer {
	ln := clientkittest.Listen(t)
	s := &silencer{ln: ln, backend: backend, quiet: make(chan struct{})}
	var wg sync.WaitGroup
	var mu sync.Mutex // guards conns
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", backend)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, b)
			mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); s.pipe(b, c) }()
			go func() { defer wg.Done(); s.pipe(c, b) }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return s
}

func (s *silencer) addr() string { return s.ln.Addr().String() }
func (s *silencer) silence()     { s.once.Do(func() { close(s.quiet) }) }

// pipe copies src to dst until src ends, dropping what it reads once
// the silencer is quiet.
func (s *silencer) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if err != nil {
			return
		}
		select {
		case <-s.quiet:
		default:
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
	}
}

// TestKeepaliveEndsSilentPeer: with a keepalive, net/http's ping health
// check ends a connection whose peer went silent while a get was in
// flight, and the get ends UNAVAILABLE long before its deadline would
// have ended it DEADLINE_EXCEEDED.
func TestKeepaliveEndsSilentPeer(t *testing.T) {
	b, addr := startBank(t)
	s := startSilencer(t, addr)
	h := clientkittest.Start(t, clientStack)
	h.Init()
	h.Send(clientkittest.Call{ID: 1, Channel: map[string]any{"id": "ka", "target": s.addr(),
		"keepalive": map[string]any{"time_ms": 100, "timeout_ms": 100, "permit_without_stream": true}},
		Method: "rpcbench.bank.v1.Bank/Get", Request: map[string]any{"account": "a", "sleepMs": "60000"}, DeadlineMS: 5000}.Line())
	<-b.started
	s.silence()
	if r := h.Recv(); r["code"] != "UNAVAILABLE" || r["message"] != "http2: client connection lost" {
		t.Errorf("got %v, want UNAVAILABLE, the connection lost", r)
	}
}

// TestShutdownCancelsStragglers: a call still in flight when shutdown
// has waited its 2 s is cancelled and answered before shutdown_ok, so
// that no answer comes out of turn.
func TestShutdownCancelsStragglers(t *testing.T) {
	b, addr := startBank(t)
	h := clientkittest.Start(t, clientStack)
	h.Init()
	h.Send(clientkittest.Call{ID: 1, Channel: map[string]any{"id": "c", "target": addr}, Method: "rpcbench.bank.v1.Bank/Get",
		Request: map[string]any{"account": "a", "sleepMs": "60000"}, DeadlineMS: 30000}.Line())
	<-b.started
	h.Send(`{"type":"shutdown"}`)
	if r := h.Recv(); r["type"] != "result" || r["id"] != 1.0 || r["code"] != "CANCELLED" {
		t.Errorf("got %v, want call 1 CANCELLED", r)
	}
	if r := h.Recv(); r["type"] != "shutdown_ok" {
		t.Errorf("got %v, want shutdown_ok", r)
	}
}
