package main

import (
	"context"
	"encoding/json"
	"fmt"
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
