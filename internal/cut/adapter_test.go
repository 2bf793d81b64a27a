package cut_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/rpcbench/rpcbench/internal/cut"
)

// quick are bounds short enough for tests, long enough for a loaded
// machine to start the test binary again.
var quick = cut.Config{
	InitTimeout:     5 * time.Second,
	CallGrace:       300 * time.Millisecond,
	ShutdownTimeout: 300 * time.Millisecond,
	ExitGrace:       200 * time.Millisecond,
	KillGrace:       300 * time.Millisecond,
}

// fakeSpec starts this test binary as the fake adapter of mode.
func fakeSpec(t *testing.T, mode string, cfg cut.Config) cut.Spec {
	t.Helper()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Under -race the fake would sleep a second at exit, to wait for
	// race reports, and miss ExitGrace.
	env := append(os.Environ(), envFake+"="+mode, "GORACE=atexit_sleep_ms=0")
	return cut.Spec{Bin: bin, Env: env, Scenario: t.Name(), Config: cfg}
}

// gone fails t unless pid is no longer a running process.
func gone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		err := syscall.Kill(pid, 0)
		// A zombie nobody has reaped yet is gone too.
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if errors.Is(err, syscall.ESRCH) || strings.Contains(string(stat), ") Z ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d is still running", pid)
		}
	}
}

func call(name string, req string) cut.Call {
	return cut.Call{
		Channel: cut.Channel{ID: "ch1", Target: "127.0.0.1:1"},
		Method:  "rpcbench.bank.v1.Bank/Debit", Request: json.RawMessage(req),
		Deadline: 2 * time.Second, Name: name,
	}
}

// TestWellBehaved: concurrent calls answered out of order each get their
// own answer, a non-OK status is a Result and a call_error a *CallError,
// and both leave the session going; Close is clean and leaves nothing.
func TestWellBehaved(t *testing.T) {
	ctx := context.Background()
	a, err := cut.Start(ctx, fakeSpec(t, "good", quick))
	if err != nil {
		t.Fatal(err)
	}
	want := cut.Info{Stack: "fake", Version: "0.0.1", Runtime: "go", Caps: cut.Capabilities{RetryPolicy: true, WaitForReady: true}}
	if diff := cmp.Diff(want, a.Info()); diff != "" {
		t.Errorf("Info (-want +got):\n%s", diff)
	}

	const n = 20
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			// Later calls sleep less, so the answers come back reversed.
			req := fmt.Sprintf(`{"account":"a%d","sleep_ms":%d}`, i, 10*(n-i))
			r, err := a.Do(ctx, call(fmt.Sprint(i), req))
			switch {
			case err != nil:
				errs[i] = err
			case r.Code != cut.OK:
				errs[i] = fmt.Errorf("code %v", r.Code)
			default:
				var resp struct{ Echo struct{ Account string } }
				json.Unmarshal(r.Response, &resp)
				if got := resp.Echo.Account; got != "a"+strconv.Itoa(i) {
					errs[i] = fmt.Errorf("got the answer for %s, want a%d", got, i)
				}
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}

	r, err := a.Do(ctx, call("unavail", `{"code":"UNAVAILABLE"}`))
	if err != nil {
		t.Fatal(err)
	}
	wantR := cut.Result{ID: n + 1, Code: cut.Unavailable, Message: "injected", Claimed: 500 * time.Microsecond,
		Headers: map[string][]string{}, Trailers: map[string][]string{"x-why": {"asked"}}}
	if diff := cmp.Diff(wantR, r, cmpopts.IgnoreFields(cut.Result{}, "Sent", "Elapsed")); diff != "" {
		t.Errorf("UNAVAILABLE result (-want +got):\n%s", diff)
	}

	_, err = a.Do(ctx, call("cfg", `{"call_error":"config"}`))
	var ce *cut.CallError
	if !errors.As(err, &ce) || ce.Kind != cut.CallConfig || ce.ID != n+2 {
		t.Errorf("got %v, want a call_error of kind config for call %d", err, n+2)
	}
	if _, err := a.Do(ctx, call("after", `{}`)); err != nil {
		t.Errorf("a call after a call_error: %v", err)
	}

	if err := a.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	gone(t, a.PID())
	if _, err := a.Do(ctx, call("closed", `{}`)); !errors.Is(err, cut.ErrClosed) {
		t.Errorf("Do after Close: got %v, want ErrClosed", err)
	}
}

// TestHarnessElapsed: a result's Elapsed is the harness's own measure,
// from sending the call to reading its answer, whatever the adapter
// claims: the fake sleeps 150ms and claims 0.5ms.
func TestHarnessElapsed(t *testing.T) {
	const sleep = 150 * time.Millisecond
	ctx := context.Background()
	a, err := cut.Start(ctx, fakeSpec(t, "good", quick))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	before := time.Now()
	r, err := a.Do(ctx, call("slow", fmt.Sprintf(`{"sleep_ms":%d}`, sleep.Milliseconds())))
	wall := time.Since(before)
	if err != nil {
		t.Fatal(err)
	}
	if r.Claimed != 500*time.Microsecond {
		t.Errorf("got Claimed %v, want the fake's 500µs", r.Claimed)
	}
	if r.Sent.Before(before) || r.Sent.After(before.Add(wall)) {
		t.Errorf("got Sent %v, want within the Do that began at %v and took %v", r.Sent, before, wall)
	}
	if r.Elapsed < sleep || r.Elapsed > wall {
		t.Errorf("got Elapsed %v, want within [%v, %v]: the fake's sleep, and Do's own time", r.Elapsed, sleep, wall)
	}
	if err := a.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// TestMisbehaviour: each way a fake adapter breaks the protocol is an
// *Error of its own Kind, naming the adapter and quoting its stderr, and
// leaves no process behind.
func TestMisbehaviour(t *testing.T) {
	tests := []struct {
		mode string
		// call says whether to make a call after init; the error is
		// then Do's, and Close's must be the same.
		call   bool
		kind   cut.Kind
		detail string
		stderr string
	}{
		{"silent", false, cut.NoInit, "no init_ok within 500ms", "fake: mode silent"},
		{"earlyexit", false, cut.NoInit, "exited with status 0 before answering init", "fake: no thanks"},
		{"wrongproto", false, cut.WrongProtocol, `speaks "rpcbench-adapter/0", want "rpcbench-adapter/1"`, "fake: mode wrongproto"},
		{"extrafield", false, cut.WrongProtocol, `init_ok has unknown field "colour"`, ""},
		{"fatal", false, cut.Fatal, "wrote fatal: cannot read your init", ""},
		{"garbage", true, cut.BadOutput, `wrote "this is not json": not a JSON object`, ""},
		{"longline", true, cut.LineTooLong, "wrote a line longer than 1048576 bytes", ""},
		{"badcode", true, cut.BadOutput, `result 1: code "OK" with code_num 14 is not a status code`, ""},
		{"unknownid", true, cut.UnknownID, "answered call 1001, which was never sent", ""},
		{"dupid", true, cut.DuplicateID, "answered call 1 a second time", ""},
		{"bothanswers", true, cut.DuplicateID, "answered call 1 a second time", ""},
		{"overclaims", true, cut.ImpossibleElapsed, "claimed elapsed_ms 5000.000 for call 1, longer than the ", ""},
		{"unasked", true, cut.BadOutput, "wrote shutdown_ok unasked", ""},
		{"dies", true, cut.Exited, "exited with status 3 with 1 calls unanswered", "fake: giving up on call 1"},
		{"hangs", true, cut.Hung, "no answer to call 1 within 400ms (its deadline, 100ms, and 300ms)", ""},
		{"noread", true, cut.Hung, "", ""},
		{"noshutdown", false, cut.IgnoredShutdown, "no shutdown_ok within 300ms", ""},
		{"exitafter", false, cut.Exited, "exited with status 3 after shutdown_ok", ""},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			cfg := quick
			if tt.mode == "silent" {
				cfg.InitTimeout = 500 * time.Millisecond
			}
			ctx := context.Background()
			start := time.Now()
			a, err := cut.Start(ctx, fakeSpec(t, tt.mode, cfg))
			var pid int
			if err == nil {
				pid = a.PID()
				if tt.call {
					c := call("c1", `{}`)
					c.Deadline = 100 * time.Millisecond
					if tt.mode == "noread" {
						// Enough to fill the pipe the fake no longer reads.
						c.Request = json.RawMessage(`{"pad":"` + strings.Repeat("x", 512<<10) + `"}`)
					}
					_, err = a.Do(ctx, c)
				}
				// An error Do saw ends the session, so Close reports it
				// too, with all of the adapter's stderr; one that came
				// after Do's answer (a duplicate) is Close's alone.
				cerr := a.Close()
				var de, ce *cut.Error
				if errors.As(err, &de) && (!errors.As(cerr, &ce) || ce.Kind != de.Kind || ce.Detail != de.Detail) {
					t.Errorf("Close: got %v, want Do's error %v", cerr, err)
				}
				err = cerr
			}
			var e *cut.Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v, want a *cut.Error", err)
			}
			if e.Kind != tt.kind || !errors.Is(err, tt.kind) {
				t.Errorf("got kind %v, want %v (%v)", e.Kind, tt.kind, err)
			}
			if !strings.Contains(e.Detail, tt.detail) {
				t.Errorf("got detail %q, want it to contain %q", e.Detail, tt.detail)
			}
			if bin, _ := os.Executable(); !strings.HasPrefix(e.Adapter, bin) {
				t.Errorf("got adapter %q, want it named by its path", e.Adapter)
			}
			if tt.stderr != "" && !strings.Contains(e.Stderr, tt.stderr) {
				t.Errorf("got stderr %q, want it to contain %q", e.Stderr, tt.stderr)
			}
			if tt.stderr != "" && !strings.Contains(err.Error(), tt.stderr) {
				t.Errorf("the message %q does not quote stderr", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
			if pid != 0 {
				gone(t, pid)
			}
		})
	}
}

// TestNoGrandchildLeft: an adapter that exits leaving a child holding
// its stdout takes the child with it, and the session still ends.
func TestNoGrandchildLeft(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	t.Setenv(envPIDFile, pidFile)
	ctx := context.Background()
	a, err := cut.Start(ctx, fakeSpec(t, "grandchild", quick))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	child, _ := strconv.Atoi(string(b))
	_, err = a.Do(ctx, call("c1", `{}`))
	if !errors.Is(err, cut.Exited) {
		t.Errorf("got %v, want an Exited error", err)
	}
	a.Close()
	gone(t, a.PID())
	gone(t, child)
}

// TestStartFailures: a binary that cannot start is an error of Start's
// own, not an *Error, and so is a negative bound.
func TestStartFailures(t *testing.T) {
	_, err := cut.Start(context.Background(), cut.Spec{Bin: filepath.Join(t.TempDir(), "missing")})
	var e *cut.Error
	if err == nil || errors.As(err, &e) || !strings.Contains(err.Error(), "cut: start") {
		t.Errorf("missing binary: got %v", err)
	}
	_, err = cut.Start(context.Background(), cut.Spec{Bin: "/bin/true", Config: cut.Config{CallGrace: -1}})
	if err == nil || !strings.Contains(err.Error(), "Config.CallGrace -1ns < 0") {
		t.Errorf("negative bound: got %v", err)
	}
}

// TestCallRefused: calls the harness cannot send fail before anything
// is written, and leave the session going.
func TestCallRefused(t *testing.T) {
	ctx := context.Background()
	a, err := cut.Start(ctx, fakeSpec(t, "good", quick))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.Do(ctx, call("c1", `{}`)); err != nil {
		t.Fatal(err)
	}
	other := call("c2", `{}`)
	other.Channel.ServiceConfig = json.RawMessage(`{"methodConfig":[]}`)
	noDeadline := call("c3", `{}`)
	noDeadline.Deadline = 0
	notObject := call("c4", `[1]`)
	keyTwice := call("c5", `{}`)
	keyTwice.Metadata = map[string]string{cut.MetaKey: "k"}
	for _, tt := range []struct {
		name string
		c    cut.Call
		want string
	}{
		{"reconfigured channel", other, `cut: channel "ch1" was first configured otherwise`},
		{"no deadline", noDeadline, "cut: call deadline 0s, want > 0"},
		{"request not an object", notObject, `cut: call request "[1]" is not a JSON object`},
		{"key in metadata", keyTwice, `cut: metadata "idempotency-key" is set by Call.Name or Call.Key`},
	} {
		if _, err := a.Do(ctx, tt.c); err == nil || err.Error() != tt.want {
			t.Errorf("%s: got %v, want %s", tt.name, err, tt.want)
		}
	}
	r, err := a.Do(ctx, call("c6", `{}`))
	if err != nil || r.ID != 2 {
		t.Errorf("after the refusals: got %+v, %v, want call 2 answered", r, err)
	}
}
