package grpc

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/cases/judge"
	"github.com/rpcbench/rpcbench/internal/outcome"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/scenario/scenariotest"
)

// The fake server adapters that show the grpcserver judge failing a
// server with one bug each: the test binary, started with envFakeServer
// set, speaks the server-under-test protocol itself and serves the Bank
// on net/http's HTTP/2, a gRPC server of a few dozen lines.
const (
	envFakeServer = "RPCBENCH_FAKE_SERVER"
	// fakeSrvGood has no bug: the control, which passes every row.
	fakeSrvGood = "good"
	// fakeSrvExpired ignores grpc-timeout: it runs work whose deadline
	// has passed.
	fakeSrvExpired = "expired"
	// fakeSrvNoCancel keeps a handler's wait going when the client
	// resets the stream, and executes after it.
	fakeSrvNoCancel = "nocancel"
	// fakeSrvPhantom reports an exec for every debit and applies none.
	fakeSrvPhantom = "phantom"
	// fakeSrvOtherStack names another stack than its column's.
	fakeSrvOtherStack = "otherstack"
	// fakeSrvCrash exits on its first request, before answering it.
	fakeSrvCrash = "crash"
	// fakeSrvLate answers every debit DEADLINE_EXCEEDED at once and runs
	// its handler 300ms later, executing it: as a library that answers
	// before its handler runs may.
	fakeSrvLate = "late"
	// fakeSrvExecTwice applies every debit twice in one handler,
	// writing an exec for each, its bank agreeing with its log: only
	// the protocol's one exec per handler catches it.
	fakeSrvExecTwice = "exectwice"
)

// fakeServer is one fake server adapter's state.
type fakeServer struct {
	mode     string
	outMu    sync.Mutex // guards out
	out      *json.Encoder
	bankMu   sync.Mutex // guards balances
	balances map[string]int64
	late     sync.WaitGroup // the late handlers, waited for by shutdown
}

func (f *fakeServer) send(v any) {
	f.outMu.Lock()
	defer f.outMu.Unlock()
	f.out.Encode(v)
}

// fakeServerMain is a fake server adapter's main.
func fakeServerMain(mode string) int {
	f := &fakeServer{mode: mode, out: json.NewEncoder(os.Stdout), balances: map[string]int64{}}
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() || !strings.Contains(in.Text(), `"init"`) {
		f.send(map[string]string{"type": "fatal", "text": "no init"})
		return 2
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: f, Protocols: &p}
	go srv.Serve(ln)
	// It is run in grpc-go's column, whose stack it must name.
	stack := judge.StackGRPCGo
	if mode == fakeSrvOtherStack {
		stack = "grpc-js"
	}
	f.send(map[string]string{"type": "serving", "protocol": "rpcbench-server/1", "stack": stack, "version": "0-fake-" + mode,
		"runtime": runtime.Version(), "addr": ln.Addr().String()})
	for in.Scan() {
		if strings.Contains(in.Text(), `"shutdown"`) {
			srv.Close()
			f.late.Wait()
			f.send(map[string]string{"type": "shutdown_ok"})
		}
	}
	return 0
}

// ServeHTTP serves one unary Bank call.
func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.mode == fakeSrvCrash {
		os.Exit(3)
	}
	if f.mode == fakeSrvLate && strings.HasSuffix(r.URL.Path, "/Debit") {
		body, _ := io.ReadAll(r.Body)
		call := r.Header.Get("x-rpcbench-call")
		f.late.Go(func() {
			time.Sleep(300 * time.Millisecond)
			account, amount, _ := fakeDecode("Debit", body[min(5, len(body)):])
			f.send(map[string]any{"type": "start", "call": call, "method": "Debit", "deadline_ms": nil})
			f.bankMu.Lock()
			bal, ok := f.balances[account]
			if !ok {
				bal = bank.DefaultBalance
			}
			f.balances[account] = bal - amount
			f.send(map[string]any{"type": "exec", "call": call, "method": "Debit", "account": account, "amount": amount, "balance": bal - amount})
			f.bankMu.Unlock()
			f.send(map[string]any{"type": "end", "call": call, "method": "Debit", "executed": true, "ctx": "active", "code": "OK"})
		})
		w.Header().Set("Content-Type", "application/grpc")
		w.Header().Set("Trailer", "Grpc-Status")
		w.WriteHeader(http.StatusOK)
		w.Header().Set("Grpc-Status", "4")
		return
	}
	arrival := time.Now()
	method := strings.TrimPrefix(r.URL.Path, "/rpcbench.bank.v1.Bank/")
	call := r.Header.Get("x-rpcbench-call")
	w.Header().Set("Content-Type", "application/grpc")
	w.Header().Set("Trailer", "Grpc-Status")
	finish := func(code int, reply []byte) {
		w.WriteHeader(http.StatusOK)
		if reply != nil {
			b := make([]byte, 5, 5+len(reply))
			binary.BigEndian.PutUint32(b[1:], uint32(len(reply)))
			w.Write(append(b, reply...))
		}
		w.Header().Set("Grpc-Status", strconv.Itoa(code))
	}
	ctx := r.Context()
	if f.mode == fakeSrvNoCancel {
		ctx = context.WithoutCancel(ctx)
	}
	if t, ok := fakeTimeout(r.Header.Get("grpc-timeout")); ok && f.mode != fakeSrvExpired {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, arrival.Add(t))
		defer cancel()
	}
	var prefix [5]byte
	if _, err := io.ReadFull(r.Body, prefix[:]); err != nil {
		finish(13, nil)
		return
	}
	n := binary.BigEndian.Uint32(prefix[1:])
	switch {
	case n > 4<<20:
		finish(8, nil) // RESOURCE_EXHAUSTED
		return
	case prefix[0] != 0:
		finish(13, nil) // INTERNAL: compressed, with no grpc-encoding
		return
	}
	msg := make([]byte, n)
	if _, err := io.ReadFull(r.Body, msg); err != nil {
		finish(13, nil)
		return
	}
	if ctx.Err() != nil {
		finish(4, nil) // DEADLINE_EXCEEDED before the handler
		return
	}
	account, amount, sleepMs := fakeDecode(method, msg)
	var deadline any
	if d, ok := ctx.Deadline(); ok {
		deadline = float64(time.Until(d)) / float64(time.Millisecond)
	}
	f.send(map[string]any{"type": "start", "call": call, "method": method, "deadline_ms": deadline})
	end := func(executed bool, code string) {
		state := "active"
		switch {
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			state = "deadline_exceeded"
		case ctx.Err() != nil:
			state = "cancelled"
		}
		f.send(map[string]any{"type": "end", "call": call, "method": method, "executed": executed, "ctx": state, "code": code})
	}
	if method == "Echo" {
		end(false, "OK")
		finish(0, nil)
		return
	}
	if sleepMs > 0 {
		select {
		case <-time.After(time.Duration(sleepMs) * time.Millisecond):
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				end(false, "DEADLINE_EXCEEDED")
				finish(4, nil)
			} else {
				end(false, "CANCELLED")
				finish(1, nil)
			}
			return
		}
	}
	f.bankMu.Lock()
	bal, ok := f.balances[account]
	if !ok {
		bal = bank.DefaultBalance
	}
	reported := bal
	if method == "Debit" {
		reported = bal - amount
		if f.mode != fakeSrvPhantom {
			bal = reported
		}
	}
	f.balances[account] = bal
	// Under the bank's lock, as the protocol says.
	f.send(map[string]any{"type": "exec", "call": call, "method": method, "account": account, "amount": amount, "balance": reported})
	if f.mode == fakeSrvExecTwice && method == "Debit" {
		reported -= amount
		f.balances[account] = reported
		f.send(map[string]any{"type": "exec", "call": call, "method": method, "account": account, "amount": amount, "balance": reported})
	}
	f.bankMu.Unlock()
	end(true, "OK")
	reply := protowire.AppendTag(nil, 1, protowire.BytesType)
	reply = protowire.AppendString(reply, account)
	reply = protowire.AppendTag(reply, 2, protowire.VarintType)
	finish(0, protowire.AppendVarint(reply, uint64(reported)))
}

// fakeTimeout parses a grpc-timeout value, as far as the fake needs.
func fakeTimeout(v string) (time.Duration, bool) {
	if len(v) < 2 {
		return 0, false
	}
	n, err := strconv.ParseInt(v[:len(v)-1], 10, 64)
	if err != nil {
		return 0, false
	}
	unit := map[byte]time.Duration{'H': time.Hour, 'M': time.Minute, 'S': time.Second, 'm': time.Millisecond,
		'u': time.Microsecond, 'n': time.Nanosecond}[v[len(v)-1]]
	return time.Duration(n) * unit, unit != 0
}

// fakeDecode reads a Get's or Debit's account, amount and sleep_ms.
func fakeDecode(method string, b []byte) (account string, amount, sleepMs int64) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return
		}
		b = b[n:]
		if typ == protowire.BytesType {
			s, m := protowire.ConsumeString(b)
			if m < 0 {
				return
			}
			account, b = s, b[m:]
			continue
		}
		v, m := protowire.ConsumeVarint(b)
		if m < 0 {
			return
		}
		b = b[m:]
		switch {
		case method == "Debit" && num == 2:
			amount = int64(v)
		case method == "Debit" && num == 3, method == "Get" && num == 2:
			sleepMs = int64(v)
		}
	}
	return
}

// TestServerAdapterErrors: a server adapter that names another stack
// than its column's, dies mid-scenario, or reports two execs in one
// handler, is an ERROR naming it, never a pass or a finding.
func TestServerAdapterErrors(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	e := scenariotest.Env
	e.Adapters = map[string]string{judge.StackGRPCGo: self}
	for _, tt := range []struct{ mode, scenario, want string }{
		{fakeSrvOtherStack, "grpcserver_timeout_0n", "serves grpc-js, not grpc-go"},
		{fakeSrvCrash, "grpcserver_timeout_0n", "exited before shutdown_ok"},
		{fakeSrvExecTwice, "grpcserver_timeout_597h", "a second exec of call"},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			t.Setenv(envFakeServer, tt.mode)
			c, ok := scenario.Registry(Cases()).Lookup(tt.scenario + "_grpcgo")
			if !ok {
				t.Fatalf("no scenario %s_grpcgo", tt.scenario)
			}
			e.LogDir = t.TempDir()
			line := c.Run(context.Background(), e)
			s := report.Format(line)
			if line.Verdict != report.Error || !strings.Contains(s, tt.want) || !strings.Contains(s, self) {
				t.Errorf("got %s, want an ERROR naming %s and saying %q", s, self, tt.want)
			}
		})
	}
}

// TestLateHandlerNotPassed: a server that answers a debit before its
// handler runs, and runs it after the judgement read the record, is not
// passed unjudged: the case fails, naming the handler that came late.
func TestLateHandlerNotPassed(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	t.Setenv(envFakeServer, fakeSrvLate)
	e := scenariotest.Env
	e.Adapters = map[string]string{judge.StackGRPCGo: self}
	e.LogDir = t.TempDir()
	c, _ := scenario.Registry(Cases()).Lookup("grpcserver_timeout_0n_grpcgo")
	line := c.Run(context.Background(), e)
	s := report.Format(line)
	if line.Verdict != report.Fail || !strings.Contains(s, "after the judgement read the record") {
		t.Errorf("got %s, want a FAIL saying a handler came after the judgement", s)
	}
}

// TestServerJudgeCatches: each fake server's one bug is caught by the
// row made for it, and the fake without a bug passes the same
// scenarios, so that what catches a bug is the bug.
func TestServerJudgeCatches(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	e := scenariotest.Env
	e.Adapters = map[string]string{judge.StackGRPCGo: self}
	for _, tt := range []struct {
		mode, scenario, row string
	}{
		{fakeSrvExpired, "grpcserver_timeout_0n", judge.InvSrvExpired},
		{fakeSrvNoCancel, "grpcserver_cancel_stops_handler", judge.InvSrvCancel},
		{fakeSrvPhantom, "grpcserver_timeout_597h", judge.InvSrvLogBank},
	} {
		for _, mode := range []string{tt.mode, fakeSrvGood} {
			t.Run(mode+"/"+tt.scenario, func(t *testing.T) {
				t.Setenv(envFakeServer, mode)
				c, ok := scenario.Registry(Cases()).Lookup(tt.scenario + "_grpcgo")
				if !ok {
					t.Fatalf("no scenario %s_grpcgo", tt.scenario)
				}
				e.LogDir = t.TempDir()
				line := c.Run(context.Background(), e)
				s := report.Format(line)
				t.Log(s)
				o, verdict := outcome.Violated, report.Fail
				if mode == fakeSrvGood {
					o, verdict = outcome.Holds, report.Pass
				}
				want := report.FormatField(report.Field{Key: tt.row, Value: o.String(), Kind: report.Outcome})
				if !strings.Contains(s, " "+want) || line.Verdict != verdict {
					t.Errorf("got %s, want %s and %s", s, want, verdict)
				}
			})
		}
	}
}
