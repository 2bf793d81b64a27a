package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/rpcbench/rpcbench/adapters/grpcgo/bankpb"
)

// configDir holds the service configs the harness sends
// (internal/cut/grpcconfig.go embeds them).
const configDir = "../../internal/cut/grpcconfig"

func serviceConfig(t *testing.T, file string) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(configDir, file))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &bank{failFirst: map[string]int{}, attempts: map[string][]metadata.MD{}}
	srv := grpc.NewServer()
	bankpb.RegisterBankServer(srv, b)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return b, ln.Addr().String()
}

// harness drives run in-process as the harness would drive the binary.
type harness struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Scanner
	exit chan int
}

func startAdapter(t *testing.T) *harness {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := &harness{t: t, in: inW, out: bufio.NewScanner(outR), exit: make(chan int, 1)}
	h.out.Buffer(nil, maxLine+1)
	go func() {
		h.exit <- run(inR, outW, io.Discard)
		outW.Close()
	}()
	t.Cleanup(func() {
		inW.Close()
		go io.Copy(io.Discard, outR)
		<-h.exit
	})
	return h
}

func (h *harness) send(line string) {
	h.t.Helper()
	if _, err := io.WriteString(h.in, line+"\n"); err != nil {
		h.t.Fatal(err)
	}
}

// recv returns the adapter's next line, decoded.
func (h *harness) recv() map[string]any {
	h.t.Helper()
	if !h.out.Scan() {
		h.t.Fatalf("adapter's stdout ended: %v", h.out.Err())
	}
	var m map[string]any
	if err := json.Unmarshal(h.out.Bytes(), &m); err != nil {
		h.t.Fatalf("adapter wrote %q: %v", h.out.Bytes(), err)
	}
	return m
}

func (h *harness) init() map[string]any {
	h.t.Helper()
	h.send(`{"type":"init","protocol":"rpcbench-adapter/1","scenario":"test"}`)
	return h.recv()
}

// callLine is a call message for Debit on channel chID of addr.
func callLine(id int, chID, addr string, sc json.RawMessage, name string) string {
	ch := map[string]any{"id": chID, "target": addr}
	if sc != nil {
		ch["service_config"] = sc
	}
	b, _ := json.Marshal(map[string]any{"type": "call", "id": id, "channel": ch, "method": "rpcbench.bank.v1.Bank/Debit",
		"request": map[string]any{"account": "acct-A", "amount": "10"}, "deadline_ms": 2000,
		"metadata": map[string]string{"x-rpcbench-call": name, "idempotency-key": "k-" + name}, "wait_for_ready": false})
	return string(b)
}

// TestRoundTrip: init_ok names grpc-go as linked; a debit reaches grpc-go's
// server with its metadata, and its response, headers and trailers come
// back; shutdown is answered and the adapter exits 0 at the end of stdin.
func TestRoundTrip(t *testing.T) {
	b, addr := startBank(t)
	h := startAdapter(t)
	got := h.init()
	if got["type"] != "init_ok" || got["stack"] != "grpc-go" || got["version"] != grpc.Version || got["protocol"] != protocol {
		t.Errorf("init_ok: got %v", got)
	}
	if caps := got["capabilities"].(map[string]any); caps["hedging"] != false || caps["retry_policy"] != true || caps["per_attempt_timeout"] != false || len(caps) != 8 {
		t.Errorf("capabilities: got %v", caps)
	}

	h.send(callLine(1, "ch1", addr, nil, "rt-1"))
	r := h.recv()
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

	h.send(`{"type":"shutdown"}`)
	if got := h.recv(); got["type"] != "shutdown_ok" {
		t.Errorf("got %v, want shutdown_ok", got)
	}
	h.in.Close()
	if code := <-h.exit; code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
	h.exit <- 0 // for the cleanup
}

// TestRetryPolicyHonoured: a debit refused UNAVAILABLE twice succeeds
// on its third attempt under the harness's retry config, with
// grpc-previous-rpc-attempts on the retries; under no config it ends
// UNAVAILABLE after one attempt.
func TestRetryPolicyHonoured(t *testing.T) {
	b, addr := startBank(t)
	b.failFirst["retry-1"], b.failFirst["default-1"] = 2, 2
	h := startAdapter(t)
	h.init()

	h.send(callLine(1, "retry", addr, serviceConfig(t, "retry.json"), "retry-1"))
	if r := h.recv(); r["code"] != "OK" {
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

	h.send(callLine(2, "default", addr, nil, "default-1"))
	if r := h.recv(); r["code"] != "UNAVAILABLE" || r["code_num"] != 14.0 || r["message"] != "refused before executing" {
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
	files, _ := filepath.Glob(filepath.Join(configDir, "*.json"))
	if len(files) < 2 {
		t.Fatalf("found %v in %s, want the harness's configs", files, configDir)
	}
	h := startAdapter(t)
	h.init()
	for i, f := range files {
		h.send(callLine(i+1, f, addr, serviceConfig(t, filepath.Base(f)), "cfg"))
		if r := h.recv(); r["type"] != "result" || r["code"] != "OK" {
			t.Errorf("%s: got %v, want an OK result", f, r)
		}
	}
}

// TestCallErrors: what the adapter refuses to invoke, with the kind the
// protocol gives it.
func TestCallErrors(t *testing.T) {
	_, addr := startBank(t)
	h := startAdapter(t)
	h.init()
	h.send(callLine(1, "ch1", addr, nil, "ok"))
	h.recv()
	sub := func(line, old, new string) string { return strings.Replace(line, old, new, 1) }
	base := callLine(2, "bad", addr, json.RawMessage(`{"methodConfig":[{"name":[{"service":"rpcbench.bank.v1.Bank"}],"retryPolicy":{"maxAttempts":4,"initialBackoff":"100ms","maxBackoff":"0.2s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]}`), "x")
	tests := []struct {
		name, line, kind, text string
	}{
		{"bad service config", base, kindConfig, `malformed duration "100ms"`},
		{"duplicate id", callLine(1, "ch1", addr, nil, "again"), kindDuplicateID, "id 1 was used before"},
		{"unknown method", sub(callLine(3, "ch1", addr, nil, "m"), "Bank/Debit", "Bank/Transfer"), kindUnsupported, `no method "rpcbench.bank.v1.Bank/Transfer"`},
		{"bad request", sub(callLine(4, "ch1", addr, nil, "r"), `"amount":"10"`, `"amount":"ten"`), kindBadRequest, "amount"},
		{"unknown field", sub(callLine(5, "ch1", addr, nil, "f"), `"wait_for_ready"`, `"retries":3,"wait_for_ready"`), kindProtocol, `unknown field "retries"`},
		{"missing field", sub(callLine(6, "ch1", addr, nil, "f"), `"deadline_ms":2000,`, ``), kindProtocol, `no "deadline_ms"`},
		{"reconfigured channel", callLine(7, "ch1", addr, serviceConfig(t, "retry.json"), "rc"), kindProtocol, "channel ch1 was first configured otherwise"},
	}
	for _, tt := range tests {
		h.send(tt.line)
		r := h.recv()
		if r["type"] != "call_error" || r["kind"] != tt.kind || !strings.Contains(fmt.Sprint(r["text"]), tt.text) {
			t.Errorf("%s: got %v, want call_error %s containing %q", tt.name, r, tt.kind, tt.text)
		}
	}
}

// TestDeadline: the call's deadline is grpc-go's, so a slow get ends
// DEADLINE_EXCEEDED at about deadline_ms.
func TestDeadline(t *testing.T) {
	_, addr := startBank(t)
	h := startAdapter(t)
	h.init()
	h.send(`{"type":"call","id":1,"channel":{"id":"c","target":"` + addr + `"},"method":"rpcbench.bank.v1.Bank/Get","request":{"account":"a","sleepMs":"2000"},"deadline_ms":100,"metadata":{},"wait_for_ready":false}`)
	r := h.recv()
	if r["code"] != "DEADLINE_EXCEEDED" || r["code_num"] != 4.0 || r["response"] != nil {
		t.Errorf("got %v, want DEADLINE_EXCEEDED", r)
	}
	if ms := r["elapsed_ms"].(float64); ms < 100 || ms > 1000 {
		t.Errorf("elapsed_ms %v, want about 100", ms)
	}
}

// TestFatal: a line that is not JSON gets fatal and exit status 2.
func TestFatal(t *testing.T) {
	h := startAdapter(t)
	h.init()
	h.send(`not json`)
	if r := h.recv(); r["type"] != "fatal" || !strings.HasPrefix(fmt.Sprint(r["text"]), "line 2: not a JSON object") {
		t.Errorf("got %v, want fatal for line 2", r)
	}
	if code := <-h.exit; code != 2 {
		t.Errorf("exit status %d, want 2", code)
	}
	h.exit <- 2
}
