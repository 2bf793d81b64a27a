// Package clientkittest drives a client adapter in-process as the
// harness drives its binary, through its protocol lines, and writes the
// call lines a test sends, for the adapters' own go test.
package clientkittest

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/adapters/gokit/clientkit"
)

// Harness is one adapter session run by clientkit.Run in-process.
type Harness struct {
	t      *testing.T
	in     *io.PipeWriter
	out    *bufio.Scanner
	exit   chan int // receives Run's exit status
	code   int      // Run's exit status, once exited
	exited bool
}

// Start runs clientkit.Run with stack in-process until the test ends.
func Start(t *testing.T, stack clientkit.Stack) *Harness {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := &Harness{t: t, in: inW, out: bufio.NewScanner(outR), exit: make(chan int, 1)}
	h.out.Buffer(nil, clientkit.MaxLine+1)
	go func() {
		h.exit <- clientkit.Run(inR, outW, io.Discard, stack)
		outW.Close()
	}()
	t.Cleanup(func() {
		inW.Close()
		go io.Copy(io.Discard, outR)
		h.Exit()
	})
	return h
}

// Send writes line, and its newline, to the adapter's stdin.
func (h *Harness) Send(line string) {
	h.t.Helper()
	if _, err := io.WriteString(h.in, line+"\n"); err != nil {
		h.t.Fatal(err)
	}
}

// Recv returns the adapter's next line, decoded.
func (h *Harness) Recv() map[string]any {
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

// Init sends init and returns the adapter's answer.
func (h *Harness) Init() map[string]any {
	h.t.Helper()
	h.Send(`{"type":"init","protocol":"` + clientkit.Protocol + `","scenario":"test"}`)
	return h.Recv()
}

// InitOK sends init and fails the test unless the adapter answers
// init_ok under the protocol's version, naming stack at version on this
// Go runtime, with exactly the capabilities caps.
func (h *Harness) InitOK(stack, version string, caps clientkit.Capabilities) {
	h.t.Helper()
	got := h.Init()
	var wantCaps map[string]any
	b, _ := json.Marshal(caps)
	json.Unmarshal(b, &wantCaps)
	want := map[string]any{"type": "init_ok", "protocol": clientkit.Protocol, "stack": stack, "version": version,
		"runtime": runtime.Version(), "capabilities": wantCaps}
	if d := cmp.Diff(want, got); d != "" {
		h.t.Errorf("init_ok (-want +got):\n%s", d)
	}
}

// Shutdown ends the session as the harness does, shutdown then the end
// of stdin, and fails the test unless the adapter answers shutdown_ok
// and exits 0.
func (h *Harness) Shutdown() {
	h.t.Helper()
	h.Send(`{"type":"shutdown"}`)
	if got := h.Recv(); got["type"] != "shutdown_ok" {
		h.t.Errorf("got %v, want shutdown_ok", got)
	}
	h.CloseInput()
	if code := h.Exit(); code != clientkit.ExitOK {
		h.t.Errorf("exit status %d, want %d", code, clientkit.ExitOK)
	}
}

// CloseInput ends the adapter's stdin.
func (h *Harness) CloseInput() { h.in.Close() }

// Exit waits for the adapter to exit and returns its exit status.
func (h *Harness) Exit() int {
	if !h.exited {
		h.code, h.exited = <-h.exit, true
	}
	return h.code
}

// Listen is a listener on a loopback port of its own, for a test's
// server, closed when the test ends if not before.
func Listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// ConfigDir holds the service configs the harness sends
// (package configs embeds them), from an adapter's directory.
const ConfigDir = "../../configs/serviceconfig"

// ServiceConfig is the harness's service config in file, in ConfigDir.
func ServiceConfig(t *testing.T, file string) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ConfigDir, file))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Call is a call line; Line fills in what a test leaves zero.
type Call struct {
	ID           int
	Channel      map[string]any
	Method       string         // default rpcbench.bank.v1.Bank/Debit
	Request      map[string]any // default a debit of 10 from acct-A
	DeadlineMS   int            // default 2000
	Metadata     map[string]string
	WaitForReady bool
}

// Line is c as the harness sends it.
func (c Call) Line() string {
	if c.Method == "" {
		c.Method = "rpcbench.bank.v1.Bank/Debit"
	}
	if c.Request == nil {
		c.Request = map[string]any{"account": "acct-A", "amount": "10"}
	}
	if c.DeadlineMS == 0 {
		c.DeadlineMS = 2000
	}
	if c.Metadata == nil {
		c.Metadata = map[string]string{}
	}
	b, _ := json.Marshal(map[string]any{"type": "call", "id": c.ID, "channel": c.Channel, "method": c.Method,
		"request": c.Request, "deadline_ms": c.DeadlineMS, "metadata": c.Metadata, "wait_for_ready": c.WaitForReady})
	return string(b)
}

// DebitLine is a call line for a debit of 10 from acct-A on channel chID
// of addr, with service config sc (nil for none), named name by its
// x-rpcbench-call and keyed "k-NAME".
func DebitLine(id int, chID, addr string, sc json.RawMessage, name string) string {
	ch := map[string]any{"id": chID, "target": addr}
	if sc != nil {
		ch["service_config"] = sc
	}
	return Call{ID: id, Channel: ch, Metadata: map[string]string{"x-rpcbench-call": name, "idempotency-key": "k-" + name}}.Line()
}
