package cut_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/rpcbench/rpcbench/internal/testexit"
)

// envFake makes the test binary a fake adapter: its value is the mode,
// one of the fakeModes, and TestMain runs fakeMain instead of the tests.
const envFake = "RPCBENCH_CUT_FAKE"

// envPIDFile is where the grandchild mode writes the pid of the process
// it leaves behind.
const envPIDFile = "RPCBENCH_CUT_PIDFILE"

func TestMain(m *testing.M) {
	if mode, ok := os.LookupEnv(envFake); ok {
		os.Exit(fakeMain(mode))
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(testexit.Exit))
}

// fakeModes says what each fake adapter does; "good" follows the
// protocol, and each other mode breaks it one way.
var fakeModes = map[string]string{
	"good":        "answers init, each call from its request's fields, and shutdown",
	"silent":      "never answers init",
	"earlyexit":   "complains on stderr and exits 0 before answering init",
	"wrongproto":  "answers init with rpcbench-adapter/0",
	"extrafield":  "answers init with a field the protocol does not have",
	"fatal":       "answers init with fatal",
	"garbage":     "answers a call with a line that is not JSON",
	"longline":    "answers a call with a line over MaxLine",
	"badcode":     "answers a call with code OK and code_num 14",
	"unknownid":   "answers a call with another id",
	"dupid":       "answers a call twice",
	"dies":        "says why on stderr and exits 3 on a call",
	"hangs":       "never answers a call",
	"noread":      "stops reading stdin after init",
	"noshutdown":  "ignores shutdown, the end of stdin, and SIGTERM",
	"exitafter":   "answers shutdown, then exits 3",
	"grandchild":  "starts a child that holds its stdout, then exits on a call",
	"sleeper":     "sleeps (the grandchild mode's child)",
	"unasked":     "writes shutdown_ok on a call",
	"bothanswers": "answers a call with a result and a call_error",
	"overclaims":  "answers a call after 20ms, claiming it took 5s",
}

// fakeRequest are the request fields the good fake obeys.
type fakeRequest struct {
	SleepMS   int    `json:"sleep_ms"`
	Code      string `json:"code"`
	CallError string `json:"call_error"`
}

func fakeMain(mode string) int {
	if _, ok := fakeModes[mode]; !ok {
		fmt.Fprintf(os.Stderr, "fake: unknown mode %q\n", mode)
		return 2
	}
	var outMu sync.Mutex
	out := func(v any) {
		outMu.Lock()
		defer outMu.Unlock()
		b, _ := json.Marshal(v)
		os.Stdout.Write(append(b, '\n'))
	}
	raw := func(s string) {
		outMu.Lock()
		defer outMu.Unlock()
		os.Stdout.WriteString(s + "\n")
	}
	switch mode {
	case "sleeper":
		time.Sleep(time.Minute)
		return 0
	case "earlyexit":
		fmt.Fprintln(os.Stderr, "fake: no thanks")
		return 0
	case "noshutdown":
		signal.Ignore(syscall.SIGTERM)
	}
	fmt.Fprintf(os.Stderr, "fake: mode %s\n", mode)
	var calls sync.WaitGroup
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 2<<20)
	for in.Scan() {
		var m struct {
			Type    string          `json:"type"`
			ID      int64           `json:"id"`
			Request json.RawMessage `json:"request"`
		}
		if err := json.Unmarshal(in.Bytes(), &m); err != nil {
			out(map[string]any{"type": "fatal", "text": err.Error()})
			return 2
		}
		switch m.Type {
		case "init":
			initOK := map[string]any{"type": "init_ok", "protocol": "rpcbench-adapter/1", "stack": "fake", "version": "0.0.1", "runtime": "go",
				"capabilities": map[string]bool{"retry_policy": true, "hedging": false, "throttling": false, "transparent_retry": false, "keepalive": false, "pushback": false, "wait_for_ready": true, "per_attempt_timeout": false}}
			switch mode {
			case "silent":
				continue
			case "wrongproto":
				initOK["protocol"] = "rpcbench-adapter/0"
			case "extrafield":
				initOK["colour"] = "blue"
			case "fatal":
				out(map[string]any{"type": "fatal", "text": "cannot read your init"})
				continue
			case "grandchild":
				child := exec.Command(os.Args[0])
				child.Env = append(os.Environ(), envFake+"=sleeper")
				child.Stdout = os.Stdout
				if err := child.Start(); err != nil {
					fmt.Fprintln(os.Stderr, "fake:", err)
					return 2
				}
				os.WriteFile(os.Getenv(envPIDFile), []byte(fmt.Sprint(child.Process.Pid)), 0o644)
			}
			out(initOK)
			if mode == "noread" {
				time.Sleep(time.Minute)
			}
		case "call":
			ok := map[string]any{"type": "result", "id": m.ID, "code": "OK", "code_num": 0, "message": "",
				"response": map[string]any{"echo": m.Request}, "elapsed_ms": 0.5, "headers": map[string][]string{}, "trailers": map[string][]string{}}
			switch mode {
			case "garbage":
				raw("this is not json")
			case "longline":
				raw(`{"type":"result","pad":"` + strings.Repeat("x", 1<<20) + `"}`)
			case "badcode":
				ok["code_num"] = 14
				out(ok)
			case "unknownid":
				ok["id"] = m.ID + 1000
				out(ok)
			case "dupid":
				out(ok)
				out(ok)
			case "bothanswers":
				out(ok)
				out(map[string]any{"type": "call_error", "id": m.ID, "kind": "config", "text": "late"})
			case "overclaims":
				time.Sleep(20 * time.Millisecond)
				ok["elapsed_ms"] = 5000.0
				out(ok)
			case "unasked":
				out(map[string]any{"type": "shutdown_ok"})
			case "dies", "grandchild":
				fmt.Fprintf(os.Stderr, "fake: giving up on call %d\n", m.ID)
				return 3
			case "hangs":
			default:
				var req fakeRequest
				json.Unmarshal(m.Request, &req)
				calls.Add(1)
				go func() {
					defer calls.Done()
					time.Sleep(time.Duration(req.SleepMS) * time.Millisecond)
					switch {
					case req.CallError != "":
						out(map[string]any{"type": "call_error", "id": m.ID, "kind": req.CallError, "text": "asked to"})
					case req.Code != "":
						ok["code"], ok["code_num"], ok["message"], ok["response"] = req.Code, 14, "injected", nil
						ok["trailers"] = map[string][]string{"x-why": {"asked"}}
						out(ok)
					default:
						out(ok)
					}
				}()
			}
		case "shutdown":
			if mode == "noshutdown" {
				continue
			}
			calls.Wait()
			out(map[string]any{"type": "shutdown_ok"})
			if mode == "exitafter" {
				return 3
			}
		}
	}
	if mode == "noshutdown" {
		time.Sleep(time.Minute)
	}
	calls.Wait()
	return 0
}
