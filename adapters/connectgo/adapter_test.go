package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/rpcbench/rpcbench/adapters/connectgo/bankpb"
	"github.com/rpcbench/rpcbench/adapters/connectgo/bankpb/bankpbconnect"
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
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

// call is a call message; callLine fills in what a test leaves zero.
type call struct {
	id        int
	channel   map[string]any
	method    string
	request   map[string]any
	deadline  int
	metadata  map[string]string
	readyWait bool
}

func (c call) line() string {
	if c.method == "" {
		c.method = "rpcbench.bank.v1.Bank/Debit"
	}
	if c.request == nil {
		c.request = map[string]any{"account": "acct-A", "amount": "10"}
	}
	if c.deadline == 0 {
		c.deadline = 2000
	}
	if c.metadata == nil {
		c.metadata = map[string]string{}
	}
	b, _ := json.Marshal(map[string]any{"type": "call", "id": c.id, "channel": c.channel, "method": c.method,
		"request": c.request, "deadline_ms": c.deadline, "metadata": c.metadata, "wait_for_ready": c.readyWait})
	return string(b)
}

// debitLine is a call message for a debit of acct-A on channel chID of
// addr, with service config sc (nil for none), named name.
func debitLine(id int, chID, addr string, sc json.RawMessage, name string) string {
	ch := map[string]any{"id": chID, "target": addr}
	if sc != nil {
		ch["service_config"] = sc
	}
	return call{id: id, channel: ch, metadata: map[string]string{"x-rpcbench-call": name, "idempotency-key": "k-" + name}}.line()
}

// TestRoundTrip: init_ok names connect-go as linked, with its
// capabilities; a debit reaches connect-go's server with its metadata,
// and its response, headers and trailers come back; a get carries its
// deadline as grpc-timeout; shutdown is answered and the adapter exits 0
// at the end of stdin.
func TestRoundTrip(t *testing.T) {
	b, addr := startBank(t)
	h := startAdapter(t)
	got := h.init()
	if got["type"] != "init_ok" || got["stack"] != "connect-go" || got["version"] != connect.Version || got["protocol"] != protocol {
		t.Errorf("init_ok: got %v, want connect-go %s", got, connect.Version)
	}
	wantCaps := map[string]any{"retry_policy": false, "hedging": false, "throttling": false, "transparent_retry": true,
		"keepalive": true, "pushback": false, "wait_for_ready": false, "per_attempt_timeout": false}
	if g, w := fmt.Sprint(got["capabilities"]), fmt.Sprint(wantCaps); g != w {
		t.Errorf("capabilities:\ngot  %s\nwant %s", g, w)
	}

	h.send(debitLine(1, "ch1", addr, nil, "rt-1"))
	r := h.recv()
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

	h.send(call{id: 2, channel: map[string]any{"id": "ch1", "target": addr}, method: "rpcbench.bank.v1.Bank/Get",
		request: map[string]any{"account": "acct-B"}, deadline: 3000}.line())
	r = h.recv()
	resp, _ := r["response"].(map[string]any)
	budget, _ := strconv.Atoi(fmt.Sprint(resp["budgetMs"]))
	if r["code"] != "OK" || resp["account"] != "acct-B" || budget < 1 || budget > 3000 {
		t.Errorf("get: got %v, want OK for acct-B with budgetMs in [1,3000]", r)
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

// TestCodes: each code the server answers is reported by its canonical
// name and number, with the message and the error's metadata as
// connect-go surfaced them.
func TestCodes(t *testing.T) {
	_, addr := startBank(t)
	h := startAdapter(t)
	h.init()
	names := []string{"CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
		"PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
		"INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}
	for i, name := range names {
		num := i + 1
		h.send(call{id: num, channel: map[string]any{"id": "c", "target": addr},
			request: map[string]any{"account": fmt.Sprint("code-", num), "amount": "1"}}.line())
		r := h.recv()
		tr, _ := r["trailers"].(map[string]any)
		if r["type"] != "result" || r["code"] != name || r["code_num"] != float64(num) ||
			r["message"] != fmt.Sprint("failed with code ", num) || r["response"] != nil || fmt.Sprint(tr["x-in-error"]) != "[yes]" {
			t.Errorf("code %d: got %v, want %s, its message, x-in-error in trailers", num, r, name)
		}
	}
}

// TestCallErrors: what the adapter refuses to invoke, with the kind the
// protocol gives it; none of them reaches the server.
func TestCallErrors(t *testing.T) {
	b, addr := startBank(t)
	h := startAdapter(t)
	h.init()
	h.send(debitLine(1, "ch1", addr, nil, "ok"))
	h.recv()
	sub := func(line, old, new string) string { return strings.Replace(line, old, new, 1) }
	ka := func(id string, timeMS, timeoutMS int, permit bool) map[string]any {
		return map[string]any{"id": id, "target": addr,
			"keepalive": map[string]any{"time_ms": timeMS, "timeout_ms": timeoutMS, "permit_without_stream": permit}}
	}
	tests := []struct {
		name, line, kind, text string
	}{
		{"retry config", debitLine(2, "retry", addr, serviceConfig(t, "retry.json"), "x"), kindUnsupported, "no service config"},
		{"throttled config", debitLine(3, "thr", addr, serviceConfig(t, "throttled.json"), "x"), kindUnsupported, "no service config"},
		{"empty config", debitLine(4, "empty", addr, json.RawMessage(`{}`), "x"), kindUnsupported, "no service config"},
		{"wait for ready", call{id: 5, channel: map[string]any{"id": "ch1", "target": addr}, readyWait: true}.line(), kindUnsupported, "no wait-for-ready"},
		{"keepalive without streams", call{id: 6, channel: ka("ka", 1000, 1000, false)}.line(), kindUnsupported, "permit_without_stream false"},
		{"keepalive of zero", call{id: 7, channel: ka("ka0", 0, 1000, true)}.line(), kindConfig, "time_ms 0"},
		{"target not host:port", call{id: 8, channel: map[string]any{"id": "bad", "target": addr + "/x"}}.line(), kindConfig, "is not host:port"},
		{"duplicate id", debitLine(1, "ch1", addr, nil, "again"), kindDuplicateID, "id 1 was used before"},
		{"unknown method", sub(debitLine(9, "ch1", addr, nil, "m"), "Bank/Debit", "Bank/Transfer"), kindUnsupported, `no method "rpcbench.bank.v1.Bank/Transfer"`},
		{"bad request", sub(debitLine(10, "ch1", addr, nil, "r"), `"amount":"10"`, `"amount":"ten"`), kindBadRequest, "amount"},
		{"unknown field", sub(debitLine(11, "ch1", addr, nil, "f"), `"wait_for_ready"`, `"retries":3,"wait_for_ready"`), kindProtocol, `unknown field "retries"`},
		{"missing field", sub(debitLine(12, "ch1", addr, nil, "f"), `"deadline_ms":2000,`, ``), kindProtocol, `no "deadline_ms"`},
		{"unknown channel field", sub(debitLine(13, "ch1", addr, nil, "f"), `"id":"ch1"`, `"id":"ch1","tls":true`), kindProtocol, `unknown field "tls"`},
		{"reconfigured channel", call{id: 14, channel: ka("ch1", 1000, 1000, true)}.line(), kindProtocol, "channel ch1 was first configured otherwise"},
	}
	for _, tt := range tests {
		h.send(tt.line)
		r := h.recv()
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
	h := startAdapter(t)
	h.init()
	h.send(call{id: 1, channel: map[string]any{"id": "c", "target": addr}, method: "rpcbench.bank.v1.Bank/Get",
		request: map[string]any{"account": "a", "sleepMs": "2000"}, deadline: 100}.line())
	r := h.recv()
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
	h := startAdapter(t)
	h.init()
	h.send(call{id: 1, channel: map[string]any{"id": "ka", "target": addr,
		"keepalive": map[string]any{"time_ms": 10000, "timeout_ms": 1000, "permit_without_stream": true}}}.line())
	if r := h.recv(); r["type"] != "result" || r["code"] != "OK" {
		t.Errorf("got %v, want an OK result", r)
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
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
	h := startAdapter(t)
	h.init()
	h.send(call{id: 1, channel: map[string]any{"id": "ka", "target": s.addr(),
		"keepalive": map[string]any{"time_ms": 100, "timeout_ms": 100, "permit_without_stream": true}},
		method: "rpcbench.bank.v1.Bank/Get", request: map[string]any{"account": "a", "sleepMs": "60000"}, deadline: 5000}.line())
	<-b.started
	s.silence()
	if r := h.recv(); r["code"] != "UNAVAILABLE" || r["message"] != "http2: client connection lost" {
		t.Errorf("got %v, want UNAVAILABLE, the connection lost", r)
	}
}

// TestShutdownCancelsStragglers: a call still in flight when shutdown
// has waited its 2 s is cancelled and answered before shutdown_ok, so
// that no answer comes out of turn.
func TestShutdownCancelsStragglers(t *testing.T) {
	b, addr := startBank(t)
	h := startAdapter(t)
	h.init()
	h.send(call{id: 1, channel: map[string]any{"id": "c", "target": addr}, method: "rpcbench.bank.v1.Bank/Get",
		request: map[string]any{"account": "a", "sleepMs": "60000"}, deadline: 30000}.line())
	<-b.started
	h.send(`{"type":"shutdown"}`)
	if r := h.recv(); r["type"] != "result" || r["id"] != 1.0 || r["code"] != "CANCELLED" {
		t.Errorf("got %v, want call 1 CANCELLED", r)
	}
	if r := h.recv(); r["type"] != "shutdown_ok" {
		t.Errorf("got %v, want shutdown_ok", r)
	}
}
