package fakestack

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"

	"github.com/rpcbench/rpcbench/internal/cut"
)

// The fake client adapters, which show the judge failing a stack that
// misbehaves where a real one cannot be made to: a binary started with
// EnvAdapter set to one of the modes below speaks the client-under-test
// protocol itself.
const (
	// EnvAdapter names the fake client adapter to be.
	EnvAdapter = "RPCBENCH_FAKE_ADAPTER"
	// EnvReal is the real grpc-go adapter the "twice" fake forwards
	// its calls to.
	EnvReal = "RPCBENCH_FAKE_REAL"
	// Twice makes every call twice through the real adapter and
	// answers the second result: an adapter that retries by itself.
	Twice = "twice"
	// Liar answers every call OK with a made-up reply, calling
	// nothing.
	Liar = "liar"
	// NoRetry is Liar declaring no retry policy: a harness that
	// ran a retry configuration on it anyway would be told OK for a
	// debit the server never saw.
	NoRetry = "noretry"
	// Cancelled makes every call once through the real adapter and
	// answers it CANCELLED, whatever the library returned: an adapter
	// that reports a code of its own choosing.
	Cancelled = "cancelled"
	// FastClock makes every call once through the real adapter and
	// claims it took a millisecond: an adapter whose timing cannot be
	// trusted, which the harness's own clock must see through.
	FastClock = "fastclock"
)

// adapterMain is the fake adapter's main: it reads the harness's
// lines on stdin and writes its own on stdout, until shutdown.
func adapterMain(mode string) int {
	out := json.NewEncoder(os.Stdout)
	var mu sync.Mutex // guards out
	send := func(v any) {
		mu.Lock()
		defer mu.Unlock()
		out.Encode(v)
	}
	var real *exec.Cmd
	var realIn io.WriteCloser
	pending := map[int64]chan json.RawMessage{}
	var pmu sync.Mutex
	wraps := mode == Twice || mode == Cancelled || mode == FastClock
	if wraps {
		real = exec.Command(os.Getenv(EnvReal))
		real.Stderr = os.Stderr
		realIn, _ = real.StdinPipe()
		realOut, _ := real.StdoutPipe()
		if err := real.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		// However this ends, the real adapter's stdin closes first, so
		// that it exits and Wait returns.
		defer real.Wait()
		defer realIn.Close()
		go func() {
			sc := bufio.NewScanner(realOut)
			sc.Buffer(nil, cut.MaxLine)
			for sc.Scan() {
				var m struct {
					Type string
					ID   int64
				}
				json.Unmarshal(sc.Bytes(), &m)
				pmu.Lock()
				id := m.ID
				if m.Type == "init_ok" || m.Type == "shutdown_ok" {
					id = 0
				}
				// Each awaited line is delivered once; any other (a
				// second answer, a fatal) is dropped, never blocking.
				ch := pending[id]
				delete(pending, id)
				pmu.Unlock()
				if ch != nil {
					ch <- append(json.RawMessage(nil), sc.Bytes()...)
				}
			}
		}()
	}
	// forward sends line to the real adapter as id and waits for its
	// answer (id 0 waits for init_ok or shutdown_ok).
	forward := func(line map[string]any, id int64) json.RawMessage {
		ch := make(chan json.RawMessage, 1)
		pmu.Lock()
		pending[id] = ch
		pmu.Unlock()
		if id != 0 {
			line["id"] = id
		}
		b, _ := json.Marshal(line)
		realIn.Write(append(b, '\n'))
		return <-ch
	}
	var wg sync.WaitGroup
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(nil, cut.MaxLine)
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			send(map[string]any{"type": "fatal", "text": err.Error()})
			return 2
		}
		switch line["type"] {
		case "init":
			if wraps {
				os.Stdout.Write(append(forward(line, 0), '\n'))
				continue
			}
			send(map[string]any{"type": "init_ok", "protocol": cut.Protocol, "stack": cut.StackGRPCGo, "version": "fake-" + mode,
				"runtime": "go", "capabilities": map[string]bool{"retry_policy": mode != NoRetry, "hedging": false, "throttling": true,
					"transparent_retry": true, "keepalive": true, "pushback": true, "wait_for_ready": true, "per_attempt_timeout": false}})
		case "call":
			id := int64(line["id"].(float64))
			if mode == Liar || mode == NoRetry {
				req, _ := line["request"].(map[string]any)
				send(map[string]any{"type": "result", "id": id, "code": "OK", "code_num": 0, "message": "",
					"response": map[string]any{"account": req["account"], "balance": "990"}, "elapsed_ms": 1, "headers": map[string]any{}, "trailers": map[string]any{}})
				continue
			}
			wg.Go(func() {
				if mode == Twice {
					forward(line, 2*id)
				}
				var r map[string]any
				json.Unmarshal(forward(line, 2*id+1), &r)
				r["id"] = id
				switch mode {
				case Cancelled:
					r["code"], r["code_num"], r["response"] = "CANCELLED", 1, nil
				case FastClock:
					r["elapsed_ms"] = 1
				}
				send(r)
			})
		case "shutdown":
			wg.Wait()
			if wraps {
				forward(line, 0)
				realIn.Close()
			}
			send(map[string]any{"type": "shutdown_ok"})
			return 0
		}
	}
	return 0
}
