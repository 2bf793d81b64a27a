package clientkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	"github.com/rpcbench/rpcbench/adapters/gokit/bankpb"
	"github.com/rpcbench/rpcbench/adapters/gokit/clientkit"
	"github.com/rpcbench/rpcbench/adapters/gokit/clientkit/clientkittest"
)

// fake is a library whose channels answer from a table instead of a
// server: a debit of account "code-N" ends with code N, a get sleeps
// until its context ends, or its channel closes.
type fake struct {
	mu     sync.Mutex // guards dialed
	dialed []clientkit.Channel
}

func (f *fake) stack(cancelOnShutdown bool) clientkit.Stack {
	return clientkit.Stack{Name: "fake-go", Version: "1.2.3",
		Capabilities:   clientkit.Capabilities{RetryPolicy: true, Keepalive: true},
		NoWaitForReady: "fake-go cannot wait", Dial: f.dial, CancelOnShutdown: cancelOnShutdown}
}

func (f *fake) dial(w clientkit.Channel, _ *log.Logger) (clientkit.Conn, error) {
	switch w.Target {
	case "refused":
		return nil, &clientkit.CallError{Kind: clientkit.KindUnsupported, Text: "not here"}
	case "broken":
		return nil, errors.New("cannot parse")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dialed = append(f.dialed, w)
	return &fakeConn{closed: make(chan struct{})}, nil
}

func (f *fake) dials() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.dialed)
}

type fakeConn struct {
	closed chan struct{}
	once   sync.Once
}

func (c *fakeConn) Close() { c.once.Do(func() { close(c.closed) }) }

func (c *fakeConn) Invoke(ctx context.Context, call clientkit.Call, req proto.Message) clientkit.Outcome {
	switch req := req.(type) {
	case *bankpb.DebitRequest:
		var code uint32
		fmt.Sscanf(req.Account, "code-%d", &code)
		if code != 0 {
			return clientkit.Outcome{Code: code, Message: "failed", Trailers: map[string][]string{"x-code": {req.Account}}}
		}
		return clientkit.Outcome{Response: &bankpb.AccountReply{Account: req.Account, Balance: 1000 - req.Amount},
			Headers: map[string][]string{"x-call": {call.Metadata["x-rpcbench-call"]}}, Elapsed: 1500 * time.Microsecond}
	case *bankpb.GetRequest:
		select {
		case <-ctx.Done():
			return clientkit.Outcome{Code: 1, Message: "cancelled by the context"}
		case <-c.closed:
			return clientkit.Outcome{Code: 1, Message: "cancelled by the channel's close"}
		}
	}
	return clientkit.Outcome{Code: 12, Message: "not faked"}
}

func start(t *testing.T, f *fake, cancelOnShutdown bool) *clientkittest.Harness {
	h := clientkittest.Start(t, f.stack(cancelOnShutdown))
	h.Init()
	return h
}

// TestInitOK: init_ok carries the stack's name, version and
// capabilities, under the protocol's version.
func TestInitOK(t *testing.T) {
	h := clientkittest.Start(t, (&fake{}).stack(false))
	got := h.Init()
	delete(got, "runtime")
	want := map[string]any{"type": "init_ok", "protocol": "rpcbench-adapter/1", "stack": "fake-go", "version": "1.2.3",
		"capabilities": map[string]any{"retry_policy": true, "hedging": false, "throttling": false, "transparent_retry": false,
			"keepalive": true, "pushback": false, "wait_for_ready": false, "per_attempt_timeout": false}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("init_ok (-want +got):\n%s", d)
	}
}

// TestResults: what a channel returned comes back as a result line: the
// code by its canonical name, the response with every field, metadata
// never null.
func TestResults(t *testing.T) {
	h := start(t, &fake{}, false)
	ch := map[string]any{"id": "c", "target": "t"}
	tests := []struct {
		name    string
		request map[string]any
		want    map[string]any
	}{
		{"ok", map[string]any{"account": "acct-A", "amount": "10"}, map[string]any{"code": "OK", "code_num": 0.0, "message": "",
			"response":   map[string]any{"account": "acct-A", "balance": "990", "exec": "0", "replayed": false, "budgetMs": "0"},
			"elapsed_ms": 1.5, "headers": map[string]any{"x-call": []any{"n"}}, "trailers": map[string]any{}}},
		{"unavailable", map[string]any{"account": "code-14", "amount": "1"}, map[string]any{"code": "UNAVAILABLE", "code_num": 14.0,
			"message": "failed", "response": nil, "elapsed_ms": 0.0, "headers": map[string]any{},
			"trailers": map[string]any{"x-code": []any{"code-14"}}}},
		{"outside the protocol", map[string]any{"account": "code-17", "amount": "1"}, map[string]any{"code": "Code(17)", "code_num": 17.0,
			"message": "failed", "response": nil, "elapsed_ms": 0.0, "headers": map[string]any{},
			"trailers": map[string]any{"x-code": []any{"code-17"}}}},
	}
	for i, tt := range tests {
		h.Send(clientkittest.Call{ID: i + 1, Channel: ch, Request: tt.request, Metadata: map[string]string{"x-rpcbench-call": "n"}}.Line())
		got := h.Recv()
		tt.want["type"], tt.want["id"] = "result", float64(i+1)
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, d)
		}
	}
}

// TestCallErrors: what the session refuses to invoke, with the kind the
// protocol gives it; a channel that could not be built is not kept.
func TestCallErrors(t *testing.T) {
	f := &fake{}
	h := start(t, f, false)
	ch := func(id, target string) map[string]any { return map[string]any{"id": id, "target": target} }
	h.Send(clientkittest.DebitLine(1, "ch1", "t", nil, "ok"))
	h.Recv()
	sub := func(line, old, new string) string { return strings.Replace(line, old, new, 1) }
	retry := json.RawMessage(`{"methodConfig": [{"name": [{}]}]}`)
	tests := []struct {
		name, line, kind, text string
	}{
		{"duplicate id", clientkittest.DebitLine(1, "ch1", "t", nil, "again"), clientkit.KindDuplicateID, "id 1 was used before"},
		{"unknown method", sub(clientkittest.DebitLine(2, "ch1", "t", nil, "m"), "Bank/Debit", "Bank/Transfer"), clientkit.KindUnsupported, `no method "rpcbench.bank.v1.Bank/Transfer"`},
		{"bad request", sub(clientkittest.DebitLine(3, "ch1", "t", nil, "r"), `"amount":"10"`, `"amount":"ten"`), clientkit.KindBadRequest, "amount"},
		{"unknown field", sub(clientkittest.DebitLine(4, "ch1", "t", nil, "f"), `"wait_for_ready"`, `"retries":3,"wait_for_ready"`), clientkit.KindProtocol, `unknown field "retries"`},
		{"missing field", sub(clientkittest.DebitLine(5, "ch1", "t", nil, "f"), `"deadline_ms":2000,`, ``), clientkit.KindProtocol, `no "deadline_ms"`},
		{"unknown channel field", sub(clientkittest.DebitLine(6, "ch1", "t", nil, "f"), `"id":"ch1"`, `"id":"ch1","tls":true`), clientkit.KindProtocol, `unknown field "tls"`},
		{"channel without target", clientkittest.Call{ID: 7, Channel: map[string]any{"id": "x"}}.Line(), clientkit.KindProtocol, `channel: no "target"`},
		{"deadline below 1 ms", sub(clientkittest.DebitLine(8, "ch1", "t", nil, "d"), `"deadline_ms":2000`, `"deadline_ms":0`), clientkit.KindProtocol, "deadline_ms 0 < 1"},
		{"wait for ready", clientkittest.Call{ID: 9, Channel: ch("ch1", "t"), WaitForReady: true}.Line(), clientkit.KindUnsupported, "fake-go cannot wait"},
		{"reconfigured channel", clientkittest.DebitLine(10, "ch1", "t", retry, "rc"), clientkit.KindProtocol, "channel ch1 was first configured otherwise"},
		{"keepalive added", clientkittest.Call{ID: 16, Channel: map[string]any{"id": "ch1", "target": "t",
			"keepalive": map[string]any{"time_ms": 1000, "timeout_ms": 1000, "permit_without_stream": true}}}.Line(),
			clientkit.KindProtocol, "channel ch1 was first configured otherwise"},
		{"refused channel", clientkittest.Call{ID: 11, Channel: ch("r", "refused")}.Line(), clientkit.KindUnsupported, "not here"},
		{"refused again", clientkittest.Call{ID: 12, Channel: ch("r", "refused")}.Line(), clientkit.KindUnsupported, "not here"},
		{"broken channel", clientkittest.Call{ID: 13, Channel: ch("b", "broken")}.Line(), clientkit.KindConfig, "cannot parse"},
	}
	for _, tt := range tests {
		h.Send(tt.line)
		r := h.Recv()
		if r["type"] != "call_error" || r["kind"] != tt.kind || !strings.Contains(fmt.Sprint(r["text"]), tt.text) {
			t.Errorf("%s: got %v, want call_error %s containing %q", tt.name, r, tt.kind, tt.text)
		}
	}
	// One spelling of ch1's config with other spaces is the same channel.
	h.Send(clientkittest.DebitLine(14, "sc", "t", retry, "a"))
	h.Send(clientkittest.DebitLine(15, "sc", "t", json.RawMessage(`{"methodConfig":[{"name":[{}]}]}`), "b"))
	for range 2 {
		if r := h.Recv(); r["type"] != "result" {
			t.Errorf("a channel configured twice alike: got %v, want a result", r)
		}
	}
	if n := f.dials(); n != 2 {
		t.Errorf("%d channels built, want 2 (ch1, sc)", n)
	}
}

// TestFatal: a line the session cannot parse gets fatal and exit status 2.
func TestFatal(t *testing.T) {
	tests := []struct {
		name, line, text string
		init             bool
	}{
		{"not JSON", `not json`, "line 2: not a JSON object", true},
		{"no type", `{"id":1}`, `line 2: no string "type"`, true},
		{"before init", `{"type":"shutdown"}`, "line 1: shutdown before init", false},
		{"second init", `{"type":"init","protocol":"rpcbench-adapter/1"}`, "line 2: bad init", true},
		{"unknown type", `{"type":"cancel"}`, `line 2: unknown type "cancel"`, true},
		{"call without an id", `{"type":"call","id":0}`, "line 2: call without a usable id", true},
		{"bad shutdown", `{"type":"shutdown","now":true}`, `line 2: bad shutdown: unknown field "now"`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := clientkittest.Start(t, (&fake{}).stack(false))
			if tt.init {
				h.Init()
			}
			h.Send(tt.line)
			if r := h.Recv(); r["type"] != "fatal" || !strings.HasPrefix(fmt.Sprint(r["text"]), tt.text) {
				t.Errorf("got %v, want fatal %q", r, tt.text)
			}
			if code := h.Exit(); code != clientkit.ExitProtocol {
				t.Errorf("exit status %d, want %d", code, clientkit.ExitProtocol)
			}
		})
	}
}

// TestShutdown: shutdown is answered after the calls in flight; a call
// still in flight after 2 s ends by its channel's close, its answer
// racing shutdown_ok, or under CancelOnShutdown by its context's cancel,
// answered before shutdown_ok; the adapter exits 0 at the end of stdin.
func TestShutdown(t *testing.T) {
	tests := []struct {
		name             string
		cancelOnShutdown bool
		want             []string // the lines after shutdown: type and message
		inOrder          bool
	}{
		{"channels closed", false, []string{"result cancelled by the channel's close", "shutdown_ok <nil>"}, false},
		{"calls cancelled", true, []string{"result cancelled by the context", "shutdown_ok <nil>"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := start(t, &fake{}, tt.cancelOnShutdown)
			h.Send(clientkittest.Call{ID: 1, Channel: map[string]any{"id": "c", "target": "t"}, Method: "rpcbench.bank.v1.Bank/Get",
				Request: map[string]any{"account": "a"}, DeadlineMS: 60000}.Line())
			h.Send(`{"type":"shutdown"}`)
			var got []string
			for range 2 {
				r := h.Recv()
				got = append(got, fmt.Sprint(r["type"], " ", r["message"]))
			}
			if !tt.inOrder {
				slices.Sort(got)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("lines after shutdown (-want +got):\n%s", d)
			}
			h.CloseInput()
			if code := h.Exit(); code != clientkit.ExitOK {
				t.Errorf("exit status %d, want %d", code, clientkit.ExitOK)
			}
		})
	}
}
