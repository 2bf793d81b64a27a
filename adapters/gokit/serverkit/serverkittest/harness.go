// Package serverkittest drives a server adapter as the harness does,
// through its protocol lines, and holds the tests every Go server
// adapter must pass, for the adapters' own go test.
package serverkittest

import (
	"bufio"
	"encoding/json"
	"io"
	"os/exec"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/adapters/gokit/serverkit"
)

// lineTimeout bounds every wait for one of the adapter's lines.
const lineTimeout = 5 * time.Second

// Line is one of the adapter's lines, decoded.
type Line map[string]any

// Harness is one adapter session, in-process or a child process.
type Harness struct {
	t     *testing.T
	in    io.WriteCloser
	lines chan Line     // the adapter's stdout, line by line; closed at its end
	read  chan struct{} // closed once stdout has ended and every line is in lines
	exit  chan int      // holds the exit status once the adapter has exited
	addr  string        // from serving
	held  []Line        // lines read past while waiting for another call's
}

// start reads out into h.lines until it ends, failing the test on a
// line that is not a JSON object.
func start(t *testing.T, in io.WriteCloser, out io.Reader, exit chan int) *Harness {
	h := &Harness{t: t, in: in, lines: make(chan Line, 256), read: make(chan struct{}), exit: exit}
	go func() {
		defer close(h.lines)
		defer close(h.read)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20+1)
		for sc.Scan() {
			var l Line
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l == nil {
				t.Errorf("adapter wrote %q, not a JSON object: %v", sc.Bytes(), err)
				continue
			}
			h.lines <- l
		}
	}()
	return h
}

// Start runs serverkit.Run with stack in-process until the test ends.
func Start(t *testing.T, stack serverkit.Stack) *Harness {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	exit := make(chan int, 1)
	go func() {
		exit <- serverkit.Run(inR, outW, io.Discard, stack)
		outW.Close()
	}()
	h := start(t, inW, outR, exit)
	t.Cleanup(func() {
		inW.Close()
		go func() {
			for range h.lines {
			}
		}()
		h.Exit()
	})
	return h
}

// StartProcess starts cmd, a server adapter in serve mode, until the
// test ends; cmd should have been made with exec.CommandContext under
// t.Context(). Its stderr goes to the test's log.
func StartProcess(t *testing.T, cmd *exec.Cmd) *Harness {
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = testWriter{t}
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := start(t, in, out, make(chan int, 1))
	go func() {
		// Wait closes out, so it waits for the reader to reach its end.
		<-h.read
		cmd.Wait()
		h.exit <- cmd.ProcessState.ExitCode()
	}()
	t.Cleanup(func() {
		in.Close()
		h.Exit()
	})
	return h
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Logf("adapter stderr: %s", b)
	return len(b), nil
}

// Send writes line to the adapter's stdin.
func (h *Harness) Send(line string) {
	h.t.Helper()
	if _, err := io.WriteString(h.in, line+"\n"); err != nil {
		h.t.Fatalf("writing to the adapter: %v", err)
	}
}

// CloseStdin ends the adapter's stdin.
func (h *Harness) CloseStdin() { h.in.Close() }

// Next returns the adapter's next line not yet returned.
func (h *Harness) Next() Line {
	h.t.Helper()
	if len(h.held) > 0 {
		l := h.held[0]
		h.held = h.held[1:]
		return l
	}
	select {
	case l, ok := <-h.lines:
		if !ok {
			h.t.Fatal("adapter's stdout ended")
		}
		return l
	case <-time.After(lineTimeout):
		h.t.Fatalf("no line from the adapter in %v", lineTimeout)
	}
	return nil
}

// Exit waits for the adapter to exit and returns its status; it can be
// called more than once.
func (h *Harness) Exit() int {
	h.t.Helper()
	select {
	case code := <-h.exit:
		h.exit <- code
		return code
	case <-time.After(lineTimeout):
		h.t.Fatalf("adapter did not exit in %v", lineTimeout)
	}
	return -1
}

// Init sends init and returns the serving line.
func (h *Harness) Init() Line {
	h.t.Helper()
	h.Send(`{"type":"init","protocol":"` + serverkit.Protocol + `","scenario":"test"}`)
	l := h.Next()
	if l["type"] != "serving" {
		h.t.Fatalf("got %v, want serving", l)
	}
	h.addr, _ = l["addr"].(string)
	return l
}

// Addr is the address the serving line named.
func (h *Harness) Addr() string { return h.addr }

// Events returns the lines of call, up to and including its end; lines
// of other calls read meanwhile are kept for Next.
func (h *Harness) Events(call string) []Line {
	h.t.Helper()
	var got, other []Line
	defer func() { h.held = append(h.held, other...) }()
	for {
		l := h.Next()
		if l["call"] != call {
			other = append(other, l)
			continue
		}
		got = append(got, l)
		if l["type"] == "end" {
			return got
		}
	}
}
