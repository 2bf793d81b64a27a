package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/proxy"
	"github.com/rpcbench/rpcbench/internal/rawgrpc"
)

// envProxyWorkload makes the test binary proxy's workload: it debits
// acct-W twice through $RPCBENCH_PROXY_ADDR and exits 0 when the first
// was reset CANCEL and the second answered OK.
const envProxyWorkload = "RPCBENCH_TEST_PROXY_WORKLOAD"

func proxyWorkload() int {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := rawgrpc.Dial(ctx, os.Getenv(EnvProxyAddr))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	defer c.Close()
	var got []string
	for range 2 {
		st, err := c.Open(rawgrpc.Request{Method: "Debit", Timeout: "10S", Message: rawgrpc.DebitRequest("acct-W", 10, 0, 0)})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		r, err := st.Wait(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		got = append(got, r.Outcome())
	}
	if got[0] != "RST_CANCEL" || got[1] != "OK" {
		fmt.Fprintf(os.Stderr, "workload: got %v, want [RST_CANCEL OK]\n", got)
		return 4
	}
	return 0
}

// TestProxyUsage: mistakes in proxy's command line exit 2 before it
// listens, naming the flag, the file and line, or the rule's error.
func TestProxyUsage(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "faults.txt")
	os.WriteFile(bad, []byte("# faults\nkind=drop method=Debit\n\nkind=explode\n"), 0o644)
	checkUsage(t, "PROXY LISTEN", []usageCase{
		{"no upstream", []string{"proxy"}, "proxy needs --upstream"},
		{"bad upstream", []string{"proxy", "--upstream", "nowhere"}, `--upstream "nowhere"`},
		{"bad listen", []string{"proxy", "--upstream", "127.0.0.1:1", "--listen", "x"}, `--listen "x"`},
		{"bad rule", []string{"proxy", "--upstream", "127.0.0.1:1", "--fault", "kind=drop code=NOPE"}, `--fault: proxy: fault "kind=drop code=NOPE": code "NOPE"`},
		{"bad rules file", []string{"proxy", "--upstream", "127.0.0.1:1", "--faults", bad}, bad + `:4: proxy: fault "kind=explode": unknown kind "explode"`},
		{"no rules file", []string{"proxy", "--upstream", "127.0.0.1:1", "--faults", "/nonexistent/f.txt"}, "--faults: open /nonexistent/f.txt"},
		{"command without --", []string{"proxy", "--upstream", "127.0.0.1:1", "./client"}, "proxy takes a command only after --"},
		{"two oracles", []string{"proxy", "--upstream", "127.0.0.1:1", "--method", "Place", "--observe", "s.S/Count", "--observe-field", "n", "--count-sql", "SELECT 1", "--db", "sqlite:x"}, "three oracles: give one"},
		{"oracle without method", []string{"proxy", "--upstream", "127.0.0.1:1", "--exec-log", "placed", "--serve", "true"}, "give the method(s) it counts"},
		{"observe without field", []string{"proxy", "--upstream", "127.0.0.1:1", "--method", "Place", "--observe", "s.S/Count"}, "--observe needs --observe-field"},
		{"sql without db", []string{"proxy", "--upstream", "127.0.0.1:1", "--method", "Place", "--count-sql", "SELECT 1"}, "--count-sql and --db go together"},
		{"log without serve", []string{"proxy", "--upstream", "127.0.0.1:1", "--method", "Place", "--exec-log", "placed"}, "give --serve CMD too"},
		{"bad log pattern", []string{"proxy", "--upstream", "127.0.0.1:1", "--method", "Place", "--exec-log", "(", "--serve", "true"}, "--exec-log: log pattern"},
		{"bad method pattern", []string{"proxy", "--upstream", "127.0.0.1:1", "--method", "[", "--exec-log", "x", "--serve", "true"}, `method "[" is no pattern`},
		{"bad name", []string{"proxy", "--upstream", "127.0.0.1:1", "--name", "My Shop"}, `--name "My Shop"`},
		{"method without oracle", []string{"proxy", "--upstream", "127.0.0.1:1", "--method", "Place"}, "--method names what an oracle counts"},
		{"json to a missing dir", []string{"proxy", "--upstream", "127.0.0.1:1", "--json", "/nonexistent/dir/x.json"}, "--json:"},
		{"two outputs on stdout", []string{"proxy", "--upstream", "127.0.0.1:1", "--record", "-", "--json", "-"}, "both want stdout"},
	})
}

// TestProxyWorkload runs a workload through the proxy to rpcserver's
// gRPC side, with the first debit's answer dropped after the upstream
// executed it: the workload sees the reset, the record shows both
// debits forwarded and answered OK upstream, and the upstream's balance
// shows both executed.
func TestProxyWorkload(t *testing.T) {
	t.Parallel()
	up := startGRPCServer(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	record := filepath.Join(t.TempDir(), "attempts.jsonl")
	var stdout, stderr bytes.Buffer
	// The workload is this test binary, with no second's sleep as it
	// exits under -race.
	code := execute(context.Background(), []string{"proxy", "--upstream", up.Addr, "--fault", "kind=drop method=Debit count=1",
		"--record", record, "--evidence", "", "--", "env", envProxyWorkload + "=1", "GORACE=atexit_sleep_ms=0", self, "-test.run=^$"}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	if out, _, _ := strings.Cut(stdout.String(), "judged"); !strings.Contains(out, "RST_CANCEL") || strings.Count(out, "rpcbench.bank.v1.Bank/Debit") != 2 {
		t.Errorf("the attempts table:\n%s", out)
	}
	var as []proxy.Attempt
	for i, line := range strings.Split(strings.TrimSpace(readFile(t, record)), "\n") {
		var a struct {
			Call int `json:"call"`
			proxy.Attempt
		}
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatalf("record line %q: %v", line, err)
		}
		// Two debits, the second no retry of the first (no
		// grpc-previous-rpc-attempts): two logical calls.
		if a.Call != i+1 {
			t.Errorf("record line %d is of call %d, want %d", i+1, a.Call, i+1)
		}
		as = append(as, a.Attempt)
	}
	if len(as) != 2 || !as[0].Forwarded || as[0].Upstream != "OK" || as[0].Client != "RST_CANCEL" || as[1].Client != "OK" || as[1].Rule != "" {
		t.Errorf("record %+v", as)
	}
	c, err := rawgrpc.Dial(context.Background(), up.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, err := c.Open(rawgrpc.Request{Method: "Get", Timeout: "10S", Message: rawgrpc.GetRequest("acct-W", 0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.Wait(context.Background())
	if err != nil || r.Outcome() != "OK" || len(r.Messages) != 1 || !bytes.Contains(r.Messages[0], []byte{0x10, 0xd4, 0x07}) { // balance=980
		t.Errorf("the upstream's acct-W: %s %x, want balance 980: both debits executed", r.Outcome(), r.Messages)
	}

	// A workload that fails fails the run.
	stdout.Reset()
	stderr.Reset()
	code = execute(context.Background(), []string{"proxy", "--upstream", up.Addr, "--evidence", "", "--", "sh", "-c", "exit 7"}, &stdout, &stderr)
	if code != exitFailed || !strings.Contains(stderr.String(), "exited with status 7") || !strings.Contains(stdout.String(), "no calls came through the proxy") {
		t.Errorf("a workload exiting 7: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
}

// syncBuffer is a bytes.Buffer safe to write and read at once; listen
// is closed once it holds a whole PROXY LISTEN line.
type syncBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	listen chan struct{}
	closed bool
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.b.Write(p)
	if _, rest, ok := strings.Cut(s.b.String(), "PROXY LISTEN "); ok && strings.Contains(rest, "\n") && !s.closed && s.listen != nil {
		close(s.listen)
		s.closed = true
	}
	return n, err
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Without a workload the proxy says where it listens, serves until its
// context ends (SIGINT, SIGTERM), then prints the attempts and exits 0.
func TestProxyUntilStopped(t *testing.T) {
	t.Parallel()
	up := startGRPCServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout, stderr := syncBuffer{listen: make(chan struct{})}, syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- execute(ctx, []string{"proxy", "--upstream", up.Addr, "--fault", "kind=unavailable method=Debit", "--evidence", ""}, &stdout, &stderr)
	}()
	select {
	case <-stdout.listen:
	case code := <-done:
		t.Fatalf("exit %d before a PROXY LISTEN line:\n%s\n%s", code, stdout.String(), stderr.String())
	}
	_, rest, _ := strings.Cut(stdout.String(), "PROXY LISTEN ")
	addr, _, _ := strings.Cut(rest, "\n")
	c, err := rawgrpc.Dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, err := c.Open(rawgrpc.Request{Method: "Debit", Timeout: "10S", Message: rawgrpc.DebitRequest("acct-S", 10, 0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := st.Wait(context.Background()); err != nil || r.Outcome() != "UNAVAILABLE" {
		t.Errorf("debit through the proxy: %s, %v; want UNAVAILABLE", r.Outcome(), err)
	}
	cancel()
	// Stopped, it judges what came: one call, within its deadline.
	if code := <-done; code != exitOK || !strings.Contains(stdout.String(), "UNAVAILABLE") || !strings.Contains(stdout.String(), "CASE proxy_within_deadline PASS") {
		t.Errorf("exit %d, stdout:\n%s", code, stdout.String())
	}
}
