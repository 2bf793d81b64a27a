package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/h2c"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/rpcbench/rpcbench/internal/cut"
	"github.com/rpcbench/rpcbench/internal/rawgrpc"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/trace"
)

// The shop: a service written for these tests, not the Bank, with its
// own proto (testdata/shop/shop.proto). The test binary serves it when
// envShopAddr is set (on that address, its orders in the SQLite file
// envShopDB), and prints "placed order N" for each order it places.
const (
	envShopAddr     = "RPCBENCH_TEST_SHOP_ADDR"
	envShopDB       = "RPCBENCH_TEST_SHOP_DB"
	envShopWorkload = "RPCBENCH_TEST_SHOP_WORKLOAD"
)

// envShopNoDrain makes the shop exit at once on SIGTERM, its calls in
// flight cut off; without it, it stops taking connections, finishes
// the calls it took, then exits.
const envShopNoDrain = "RPCBENCH_TEST_SHOP_NODRAIN"

func shopService() int {
	dsn := "file:" + os.Getenv(envShopDB) + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
	if os.Getenv(envShopDB) == ":memory:" {
		dsn = "file::memory:" // its orders die with it
	}
	db, err := sql.Open("sqlite", dsn)
	if err == nil {
		_, err = db.Exec("CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, item TEXT NOT NULL)")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "shop:", err)
		return 3
	}
	ln, err := net.Listen("tcp", os.Getenv(envShopAddr))
	if err != nil {
		fmt.Fprintln(os.Stderr, "shop:", err)
		return 3
	}
	db.SetMaxOpenConns(1) // one connection: an in-memory database is one connection's
	var inflight sync.WaitGroup
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inflight.Add(1)
		defer inflight.Done()
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		w.Header().Set("Content-Type", "application/grpc")
		w.Header().Set("Trailer", "Grpc-Status")
		answer := func(msg []byte) {
			var frame [5]byte
			binary.BigEndian.PutUint32(frame[1:], uint32(len(msg)))
			w.Write(frame[:])
			w.Write(msg)
			w.Header().Set("Grpc-Status", "0")
		}
		switch r.URL.Path {
		case "/shop.v1.Orders/Place":
			item := ""
			if len(body) >= 5 {
				b := body[5:]
				for len(b) > 0 {
					num, typ, n := protowire.ConsumeTag(b)
					if n < 0 {
						break
					}
					b = b[n:]
					if num != 1 || typ != protowire.BytesType {
						break // the shop's requests have no other field
					}
					v, m := protowire.ConsumeString(b)
					if m < 0 {
						break
					}
					item, b = v, b[m:]
				}
			}
			if item == "slow" {
				// A slow order: placed 400ms after it came, unless the
				// caller gave up first.
				select {
				case <-time.After(400 * time.Millisecond):
				case <-r.Context().Done():
					return
				}
			}
			res, err := db.Exec("INSERT INTO orders (item) VALUES (?)", item)
			if err != nil {
				w.Header().Set("Grpc-Status", "13")
				return
			}
			id, _ := res.LastInsertId()
			fmt.Printf("placed order %d item=%s\n", id, item)
			answer(protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), uint64(id)))
		case "/shop.v1.Orders/Count":
			var n int64
			if err := db.QueryRow("SELECT count(*) FROM orders").Scan(&n); err != nil {
				w.Header().Set("Grpc-Status", "13")
				return
			}
			answer(protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), uint64(n)))
		default:
			w.Header().Set("Grpc-Status", "12")
		}
	})
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	go http.Serve(ln, h2c.NewHandler(h, &http2.Server{}))
	<-term
	if os.Getenv(envShopNoDrain) != "" {
		return 0
	}
	ln.Close()
	inflight.Wait()
	time.Sleep(100 * time.Millisecond) // the answers' last frames leave
	return 0
}

// shopWorkload places two orders through $RPCBENCH_PROXY_ADDR, sending
// a call told UNAVAILABLE again as gRPC's retry policy does (with
// grpc-previous-rpc-attempts and the time left as its grpc-timeout), and
// exits 0 when both are placed.
func shopWorkload() int {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := rawgrpc.Dial(ctx, os.Getenv(EnvProxyAddr))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	defer c.Close()
	msg := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "book")
	for call := range 2 {
		start := time.Now()
		for attempt := 0; ; attempt++ {
			req := rawgrpc.Request{Path: "/shop.v1.Orders/Place", Message: msg,
				Timeout: fmt.Sprintf("%dm", (5*time.Second - time.Since(start)).Milliseconds())}
			if attempt > 0 {
				req.Metadata = []hpack.HeaderField{{Name: "grpc-previous-rpc-attempts", Value: fmt.Sprint(attempt)}}
			}
			st, err := c.Open(req)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 3
			}
			r, err := st.Wait(ctx)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 3
			}
			if r.Outcome() == "OK" {
				break
			}
			if r.Outcome() != "UNAVAILABLE" || attempt == 3 {
				fmt.Fprintf(os.Stderr, "workload: call %d ended %s\n", call+1, r.Outcome())
				return 4
			}
		}
	}
	return 0
}

// freeAddr returns a loopback address nothing listens on now, for a
// service started by --serve, which must be told its address.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// The shop, a service of its own proto, judged end to end through the
// proxy: a fault loses the answer of the first order after it was
// placed, the workload's retry places it again, and each oracle kind
// finds the double execution by exec_at_most_once, a FAIL naming the
// call; with no oracle the executions are unknown and the invariants
// that need them n/a, while the deadline ones are still judged.
func TestProxyJudgesShop(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Parallel()
	dir := t.TempDir()
	proto := []string{"--proto", "shop.proto", "-I", filepath.Join("testdata", "shop")}
	for _, c := range []struct {
		name   string
		oracle []string
		code   int
		want   []string
	}{
		{"observe", append([]string{"--observe", "shop.v1.Orders/Count", "--observe-field", "placed"}, proto...), exitFailed,
			[]string{"CASE proxy_exec_at_most_once FAIL", "first=[call 1 (shop.v1.Orders/Place): executed 2 times in 2 attempts]",
				"CASE proxy_ok_only_if_executed PASS", "CASE proxy_within_deadline PASS", "CASE proxy_timeout_is_time_left PASS"}},
		{"sql", []string{"--count-sql", "SELECT count(*) FROM orders", "--db", "sqlite:" + filepath.Join(dir, "sql.db")}, exitFailed,
			[]string{"CASE proxy_exec_at_most_once FAIL", "broke=1"}},
		{"log", []string{"--exec-log", "^placed order "}, exitFailed,
			[]string{"CASE proxy_exec_at_most_once FAIL", "broke=1"}},
		{"none", nil, exitOK,
			[]string{"CASE proxy_exec_at_most_once N/A", "CASE proxy_ok_only_if_executed N/A", "CASE proxy_within_deadline PASS",
				"CASE proxy_timeout_is_time_left PASS", "CASE proxy_pushback_honoured N/A", "executions=unknown"}},
		{"idempotent", []string{"--exec-log", "^placed order ", "--idempotent", "Place"}, exitOK,
			[]string{"CASE proxy_exec_at_most_once N/A", "the method is idempotent", "CASE proxy_ok_only_if_executed PASS"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr := freeAddr(t)
			// The shop and its workload are this test binary: under -race,
			// each would otherwise sleep a second as it exits.
			serve := fmt.Sprintf("%s=%s %s=%s GORACE=atexit_sleep_ms=0 exec %s -test.run=^$", envShopAddr, addr, envShopDB, filepath.Join(dir, c.name+".db"), self)
			args := append([]string{"proxy", "--upstream", addr, "--serve", serve, "--fault", "kind=unavailable_after method=Place count=1",
				"--late-window", "50ms", "--evidence", filepath.Join(dir, c.name+"-ev"), "--name", "shop"}, c.oracle...)
			if c.oracle != nil {
				args = append(args, "--method", "shop.v1.Orders/Place")
			}
			args = append(args, "--", "env", envShopWorkload+"=1", "GORACE=atexit_sleep_ms=0", self, "-test.run=^$")
			var stdout, stderr bytes.Buffer
			code := execute(context.Background(), args, &stdout, &stderr)
			out := stdout.String()
			if code != c.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, c.code, out, stderr.String())
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			ev := readFile(t, filepath.Join(dir, c.name+"-ev", "output.txt"))
			if !strings.Contains(ev, "CASE proxy_within_deadline") || !strings.Contains(ev, "stack=shop config=proxy") {
				t.Errorf("evidence output.txt:\n%s", ev)
			}
			// Each case's logs: the calls judged, and the attempts as a
			// trace the report page draws.
			logs, err := report.ReadLogs(filepath.Join(dir, c.name+"-ev", "logs"))
			if err != nil {
				t.Fatal(err)
			}
			recs, err := trace.Read(bytes.NewReader(logs[report.TraceLog("proxy_exec_at_most_once")]))
			if err != nil || len(recs) != 3 || recs[0].Call != 1 || recs[1].Call != 1 || recs[2].Call != 2 {
				t.Errorf("the trace of the attempts: %v, %+v", err, recs)
			}
			if calls := string(logs[report.ProxyLog("proxy_exec_at_most_once")]); !strings.Contains(calls, "TIED BY") {
				t.Errorf("the calls' log:\n%s", calls)
			}
		})
	}
}

// TestProxyWalkthrough runs docs/judge-your-service.md's ten minutes:
// examples/debit.py, grpcio with a retry policy, through the proxy to
// rpcserver's gRPC side with the answer of the first debit lost after it
// executed. The page says the client is told OK three times, one call
// ran twice (a FAIL naming it), and with --retry --key every call ran
// once (exit 0).
func TestProxyWalkthrough(t *testing.T) {
	t.Parallel()
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import grpc").Run(); err != nil {
		if cut.Required() {
			t.Fatalf("%s cannot import grpc (%v); %s=1 demands it: apt-get install python3-grpcio", python, err, cut.EnvRequire)
		}
		t.Skipf("%s cannot import grpc (%v): apt-get install python3-grpcio", python, err)
	}
	up := startGRPCServer(t)
	run := func(account string, client ...string) (int, string) {
		args := []string{"proxy", "--upstream", up.Addr, "--fault", "kind=unavailable_after method=Debit count=1",
			"-I", "../../proto", "--proto", "rpcbench/bank/v1/bank.proto", "--method", "rpcbench.bank.v1.Bank/Debit",
			"--observe", "rpcbench.bank.v1.Bank/Get", "--observe-data", `{"account":"` + account + `"}`,
			"--observe-field", "balance", "--per-exec", "-10", "--name", "bank", "--evidence", "",
			"--", python, "../../examples/debit.py", "--account", account}
		var stdout, stderr bytes.Buffer
		code := execute(context.Background(), append(args, client...), &stdout, &stderr)
		return code, stdout.String() + stderr.String()
	}
	code, out := run("acct-W1", "--retry")
	for _, want := range []string{"debit 1: OK\ndebit 2: OK\ndebit 3: OK\n", "CASE proxy_exec_at_most_once FAIL",
		"first=[call 1 (rpcbench.bank.v1.Bank/Debit): executed 2 times in 2 attempts]", "3 passed, 1 failed, 1 n/a"} {
		if !strings.Contains(out, want) {
			t.Errorf("the walkthrough's run lacks %q:\n%s", want, out)
		}
	}
	if code != exitFailed {
		t.Errorf("exit %d, want %d", code, exitFailed)
	}
	if code, out := run("acct-W2", "--retry", "--key"); code != exitOK || !strings.Contains(out, "CASE proxy_exec_at_most_once PASS") || !strings.Contains(out, "executions=3") {
		t.Errorf("with --retry --key: exit %d\n%s", code, out)
	}
}

// TestTargetLifecycle: target -- COMMAND starts the shop itself, and its
// two rows that stop it judge what they exist for: a shop that drains
// answers its call in flight at SIGTERM, and one whose orders are in a
// file still counts an order it answered OK for after SIGKILL; a shop
// that exits at once on SIGTERM fails the drain row, and one that keeps
// its orders in memory fails the SIGKILL row. Without a command both
// rows are n/a.
func TestTargetLifecycle(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	_, rpcserver := buildBinaries(t)
	dir := t.TempDir()
	shop := func(name string, env ...string) []string {
		addr := freeAddr(t)
		cmd := append([]string{"env", envShopAddr + "=" + addr, envShopDB + "=" + filepath.Join(dir, name+".db"), "GORACE=atexit_sleep_ms=0"}, env...)
		args := []string{"target", addr, "--proto", "shop.proto", "-I", filepath.Join("testdata", "shop"),
			"--method", "shop.v1.Orders/Place", "--data", `{"item":"book"}`, "--observe", "shop.v1.Orders/Count", "--observe-field", "placed",
			"--slow-data", `{"item":"slow"}`, "--slow-for", "400ms", "--run", "sigterm|sigkill", "--evidence", "", "--"}
		return append(append(args, cmd...), self, "-test.run=^$")
	}
	// rpcserver's gRPC side, on SQLite: its SIGTERM drains the calls in
	// flight on both wires (it once drained rpcbench's own wire alone,
	// and cut the gRPC call: srv_drain_answers violated).
	addr := freeAddr(t)
	rpcserverArgs := append([]string{"target", addr, "--method", "rpcbench.bank.v1.Bank/Debit", "--data", `{"account":"acct-L","amount":1}`,
		"--observe", "rpcbench.bank.v1.Bank/Get", "--observe-data", `{"account":"acct-L"}`, "--observe-field", "balance",
		"--slow-data", `{"account":"acct-L","amount":1,"sleepMs":400}`, "--slow-for", "400ms", "--run", "sigterm|sigkill", "--evidence", ""}, bankProtoArgs(t)...)
	rpcserverArgs = append(rpcserverArgs, "--", rpcserver, "-grpc", "-addr", addr, "-store", "sqlite:"+filepath.Join(dir, "rpcserver.db"))
	// The cases run at once, in goroutines: each waits on its service,
	// and go test would run parallel subtests two at a time.
	var wg sync.WaitGroup
	for _, c := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"drains", shop("drains"), exitOK, []string{"CASE target_sigterm_drain PASS", "code=OK", "executions=1", "CASE target_sigkill_after_ok PASS"}},
		{"cuts", shop("cuts", envShopNoDrain+"=1"), exitFailed, []string{"CASE target_sigterm_drain FAIL", "srv_drain_answers:=violated", "CASE target_sigkill_after_ok PASS"}},
		{"memory", shop("memory", envShopDB+"=:memory:"), exitFailed, []string{"CASE target_sigkill_after_ok FAIL", "srv_ok_durable:=violated", "counts no execution after the restart"}},
		{"rpcserver", rpcserverArgs, exitOK, []string{"CASE target_sigterm_drain PASS", "CASE target_sigkill_after_ok PASS"}},
	} {
		wg.Go(func() {
			var stdout, stderr bytes.Buffer
			code := execute(context.Background(), c.args, &stdout, &stderr)
			out := stdout.String()
			bad := code != c.code
			for _, w := range c.want {
				bad = bad || !strings.Contains(out, w)
			}
			if bad {
				t.Errorf("%s: exit %d (want %d), stdout lacks one of %q:\n%s", c.name, code, c.code, c.want, out)
			}
		})
	}
	wg.Wait()
	var stdout, stderr bytes.Buffer
	execute(context.Background(), []string{"target", freeAddr(t), "--proto", "shop.proto", "-I", filepath.Join("testdata", "shop"),
		"--method", "shop.v1.Orders/Place", "--run", "sigterm|sigkill", "--evidence", ""}, &stdout, &stderr)
	if out := stdout.String(); strings.Count(out, " N/A ") != 2 || !strings.Contains(out, "give -- COMMAND") {
		t.Errorf("without a command, want both rows n/a:\n%s\n%s", out, stderr.String())
	}
}
