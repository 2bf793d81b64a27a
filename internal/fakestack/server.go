package fakestack

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
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/cut"
	"github.com/rpcbench/rpcbench/internal/grpcwire"
)

// The fake server adapters that show the grpcserver judge failing a
// server with one bug each: the test binary, started with EnvServer
// set, speaks the server-under-test protocol itself and serves the Bank
// on net/http's HTTP/2, a gRPC server of a few dozen lines.
const (
	// EnvServer names the fake server adapter to be.
	EnvServer = "RPCBENCH_FAKE_SERVER"
	// SrvGood has no bug: the control, which passes every row.
	SrvGood = "good"
	// SrvExpired ignores grpc-timeout: it runs work whose deadline
	// has passed.
	SrvExpired = "expired"
	// SrvNoCancel keeps a handler's wait going when the client
	// resets the stream, and executes after it.
	SrvNoCancel = "nocancel"
	// SrvPhantom reports an exec for every debit and applies none.
	SrvPhantom = "phantom"
	// SrvOtherStack names another stack than its column's.
	SrvOtherStack = "otherstack"
	// SrvCrash exits on its first request, before answering it.
	SrvCrash = "crash"
	// SrvLate answers every debit DEADLINE_EXCEEDED at once and runs
	// its handler 300ms later, executing it: as a library that answers
	// before its handler runs may.
	SrvLate = "late"
	// SrvExecTwice applies every debit twice in one handler,
	// writing an exec for each, its bank agreeing with its log: only
	// the protocol's one exec per handler catches it.
	SrvExecTwice = "exectwice"
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

// serverMain is a fake server adapter's main.
func serverMain(mode string) int {
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
	stack := cut.StackGRPCGo
	if mode == SrvOtherStack {
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
	if f.mode == SrvCrash {
		os.Exit(3)
	}
	if f.mode == SrvLate && strings.HasSuffix(r.URL.Path, "/Debit") {
		body, _ := io.ReadAll(r.Body)
		call := r.Header.Get("x-rpcbench-call")
		f.late.Go(func() {
			time.Sleep(300 * time.Millisecond)
			account, amount, _ := decode("Debit", body[min(5, len(body)):])
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
	if f.mode == SrvNoCancel {
		ctx = context.WithoutCancel(ctx)
	}
	if t, err := grpcwire.ParseTimeout(r.Header.Get("grpc-timeout")); err == nil && f.mode != SrvExpired {
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
	account, amount, sleepMs := decode(method, msg)
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
		if f.mode != SrvPhantom {
			bal = reported
		}
	}
	f.balances[account] = bal
	// Under the bank's lock, as the protocol says.
	f.send(map[string]any{"type": "exec", "call": call, "method": method, "account": account, "amount": amount, "balance": reported})
	if f.mode == SrvExecTwice && method == "Debit" {
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

// decode reads a Get's or Debit's account, amount and sleep_ms.
func decode(method string, b []byte) (account string, amount, sleepMs int64) {
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

// Bank is a fake server's Bank alone, without the server-under-test
// protocol: target's tests serve it in process and judge it from
// outside, as a running service of a user's. Mode is one of EnvServer's.
type Bank struct{ f *fakeServer }

// NewBank returns the Bank of the fake server mode, every account at
// bank.DefaultBalance.
func NewBank(mode string) *Bank {
	return &Bank{&fakeServer{mode: mode, out: json.NewEncoder(io.Discard), balances: map[string]int64{}}}
}

// ServeHTTP serves one unary Bank call over HTTP/2.
func (b *Bank) ServeHTTP(w http.ResponseWriter, r *http.Request) { b.f.ServeHTTP(w, r) }

// Wait waits for the handlers SrvLate runs after answering.
func (b *Bank) Wait() { b.f.late.Wait() }

// ServeBank serves the Bank of mode on h2c on a free loopback port and
// returns its address and a stop that closes it and waits for its late
// handlers.
func ServeBank(mode string) (addr string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	b := NewBank(mode)
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: b, Protocols: &p}
	go srv.Serve(ln)
	return ln.Addr().String(), func() {
		srv.Close()
		b.Wait()
	}, nil
}
