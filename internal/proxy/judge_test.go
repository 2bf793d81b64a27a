package proxy

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2/hpack"

	"github.com/rpcbench/rpcbench/internal/outcome"
	"github.com/rpcbench/rpcbench/internal/rawgrpc"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/scenario"
)

// balanceOracle counts debits of 10 on one account of the fake Bank by
// its balance, read on a connection of its own.
type balanceOracle struct {
	t       *testing.T
	up, acc string
	mu      sync.Mutex
	reads   int
	// extra, when set, is debited once by the next read, as if a
	// handler had executed after its answer.
	extra bool
}

func (o *balanceOracle) Read(ctx context.Context) (int64, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.reads++
	if o.extra {
		o.extra = false
		call(o.t, dial(o.t, o.up), "Debit", rawgrpc.DebitRequest(o.acc, 10, 0, 0), "10S")
	}
	return balance(o.t, o.up, o.acc), nil
}

func (o *balanceOracle) Executions(moved int64) (int, error) {
	if moved > 0 || moved%10 != 0 {
		return 0, fmt.Errorf("balance moved by %d", moved)
	}
	return int(-moved / 10), nil
}

// retried makes a debit and, while it is told UNAVAILABLE, sends it
// again as gRPC's retry does (grpc-previous-rpc-attempts), up to tries.
func retried(t *testing.T, c *rawgrpc.Conn, acc string, tries int) string {
	var out string
	for i := 0; i < tries; i++ {
		req := rawgrpc.Request{Method: "Debit", Timeout: "5S", Message: rawgrpc.DebitRequest(acc, 10, 0, 0)}
		if i > 0 {
			req.Metadata = []hpack.HeaderField{{Name: "grpc-previous-rpc-attempts", Value: fmt.Sprint(i)}}
		}
		st, err := c.Open(req)
		if err != nil {
			t.Fatal(err)
		}
		r, err := st.Wait(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if out = r.Outcome(); out != "UNAVAILABLE" {
			break
		}
	}
	return out
}

// The oracle counts each forwarded attempt's executions, one attempt at
// a time, and Judge finds the call that a retry ran twice; the call the
// proxy refused before forwarding ran once. A move of the oracle between
// two attempts (a handler that executed after its answer) is counted as
// the earlier attempt's, late.
func TestJudgeByOracle(t *testing.T) {
	up := upstream(t)
	o := &balanceOracle{t: t, up: up, acc: "acct-J"}
	var rules []*Rule
	for _, s := range []string{"kind=unavailable_after method=Debit count=1", "kind=unavailable method=Debit count=1"} {
		r, err := ParseRule(s)
		if err != nil {
			t.Fatal(err)
		}
		rules = append(rules, r)
	}
	p, err := Listen("127.0.0.1:0", Config{Upstream: up, Rules: rules, Oracle: o,
		Judged: func(m string) bool { return strings.HasSuffix(m, "/Debit") }, Settle: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve()
	defer p.Close()
	c := dial(t, p.Addr())
	if got := retried(t, c, "acct-J", 3); got != "OK" {
		t.Fatalf("call 1 ended %s, want OK after a retry", got)
	}
	if got := retried(t, c, "acct-J", 3); got != "OK" {
		t.Fatalf("call 2 ended %s, want OK after a retry", got)
	}
	// Call 3's handler sleeps 100ms before it executes, longer than
	// Settle: the oracle reads after its answer, not after Settle alone.
	if r := call(t, c, "Debit", rawgrpc.DebitRequest("acct-J", 10, 100, 0), "5S"); r.Outcome() != "OK" {
		t.Fatalf("call 3 ended %s", r.Outcome())
	}
	// Call 4 executes once more after its answer's read.
	if got := retried(t, c, "acct-J", 1); got != "OK" {
		t.Fatalf("call 4 ended %s", got)
	}
	// The first settling read waits for call 4's judging to end; the
	// second sees the late execution.
	for _, late := range []bool{false, true} {
		o.mu.Lock()
		o.extra = late
		o.mu.Unlock()
		if err := p.SettleOracle(context.Background(), 0); err != nil {
			t.Fatal(err)
		}
	}
	// A read of the Bank, not judged, goes through ungated.
	call(t, c, "Get", rawgrpc.GetRequest("acct-J", 0, 0), "5S")

	calls, _ := Group(p.Attempts())
	var debits []Call
	for _, c := range calls {
		if strings.HasSuffix(c.Method, "/Debit") {
			debits = append(debits, c)
		}
	}
	vs := Judge(debits, JudgeOptions{Slack: 500 * time.Millisecond})
	type want struct {
		attempts, execs, late int
		once                  outcome.Outcome
	}
	// Call 1 meets both rules: executed, answer lost; refused unforwarded;
	// executed and answered.
	for i, w := range []want{{3, 2, 0, outcome.Violated}, {1, 1, 0, outcome.Holds}, {1, 1, 0, outcome.Holds}, {1, 2, 1, outcome.Violated}} {
		if i >= len(vs) {
			t.Fatalf("%d debit calls judged, want 4", len(vs))
		}
		v := vs[i]
		late := 0
		for _, a := range v.Call.Attempts {
			late += a.Late
		}
		if len(v.Call.Attempts) != w.attempts || v.Executions != w.execs || late != w.late || v.Of(InvExecOnce).Outcome != w.once {
			t.Errorf("call %d: %d attempts, %d executions (%d late), exec_at_most_once %s; want %d, %d (%d), %s",
				i+1, len(v.Call.Attempts), v.Executions, late, v.Of(InvExecOnce).Outcome, w.attempts, w.execs, w.late, w.once)
		}
		if v.Told != "OK" || v.Of(InvOKExecuted).Outcome != outcome.Holds || v.Of(InvWithinDeadline).Outcome != outcome.Holds {
			t.Errorf("call %d: told %s, %+v", i+1, v.Told, v.Judged)
		}
	}
	if got := balance(t, up, "acct-J"); got != 1000-60 {
		t.Errorf("the Bank's balance is %d: the oracle's count (6 executions) does not match it", got)
	}
}

// Without an oracle, executions are unknown and exec_at_most_once is
// not judged; the invariants the attempts alone decide still are.
func TestJudgeWithoutOracle(t *testing.T) {
	t0 := time.Now()
	ok := func(start, end int, timeout, prev, pushback, client string) Attempt {
		return Attempt{Method: "s.v1.S/Place", Forwarded: true, Client: client, Timeout: timeout, Previous: prev, Pushback: pushback,
			Start: t0.Add(time.Duration(start) * time.Millisecond), Ended: t0.Add(time.Duration(end) * time.Millisecond)}
	}
	calls := []Call{
		{ID: 1, Method: "s.v1.S/Place", Attempts: []Attempt{ok(0, 10, "1S", "", "", "UNAVAILABLE"), ok(50, 60, "950m", "1", "", "OK")}},
		{ID: 2, Method: "s.v1.S/Place", Attempts: []Attempt{ok(0, 10, "1S", "", "", "UNAVAILABLE"), ok(50, 60, "1S", "1", "", "OK")}},
		{ID: 3, Method: "s.v1.S/Place", Attempts: []Attempt{ok(0, 10, "100m", "", "", "UNAVAILABLE"), ok(800, 810, "", "1", "", "OK")}},
		{ID: 4, Method: "s.v1.S/Place", Attempts: []Attempt{ok(0, 10, "5S", "", "300", "UNAVAILABLE"), ok(100, 110, "4S", "1", "", "OK")}},
		{ID: 5, Method: "s.v1.S/Place", Attempts: []Attempt{ok(0, 10, "5S", "", "-1", "UNAVAILABLE"), ok(400, 410, "4S", "1", "", "OK")}},
		// The client's own retry, tied by its key, 2s later under a
		// deadline of its own: not past the first's.
		{ID: 6, Method: "s.v1.S/Place", Key: "k", Attempts: []Attempt{ok(0, 10, "1S", "", "", "UNAVAILABLE"), ok(2000, 2010, "1S", "", "", "OK")}},
	}
	vs := Judge(calls, JudgeOptions{Slack: 20 * time.Millisecond})
	want := []map[string]outcome.Outcome{
		{InvExecOnce: outcome.Unsupported, InvOKExecuted: outcome.Unsupported, InvWithinDeadline: outcome.Holds, InvTimeoutLeft: outcome.Holds, InvPushback: outcome.Unsupported},
		{InvTimeoutLeft: outcome.Violated},
		{InvWithinDeadline: outcome.Violated, InvTimeoutLeft: outcome.Violated},
		{InvPushback: outcome.Violated},
		{InvPushback: outcome.Violated},
		{InvWithinDeadline: outcome.Holds, InvTimeoutLeft: outcome.Unsupported},
	}
	for i, w := range want {
		for inv, o := range w {
			if got := vs[i].Of(inv); got.Outcome != o {
				t.Errorf("call %d: %s %s (%s), want %s", i+1, inv, got.Outcome, got.Why, o)
			}
		}
		if vs[i].Executions != -1 {
			t.Errorf("call %d: executions %d, want unknown (-1)", i+1, vs[i].Executions)
		}
	}
}

// fixedOracle reads whatever v holds.
type fixedOracle struct{ v int64 }

func (o *fixedOracle) Read(context.Context) (int64, error) { return o.v, nil }
func (o *fixedOracle) Executions(moved int64) (int, error) {
	if moved < 0 {
		return 0, fmt.Errorf("moved by %d", moved)
	}
	return int(moved), nil
}

// A move of the oracle with no attempt before it to charge is never
// dropped: it is unattributed, and a judged run reports it. (It once
// went uncounted after an attempt refused at the gate.)
func TestUnattributedMove(t *testing.T) {
	o := &fixedOracle{v: 5}
	p := &Proxy{cfg: Config{Oracle: o}, gate: make(chan struct{}, 1)}
	p.ctx = context.Background()
	if _, err := p.readOracle(true); err != nil { // the baseline
		t.Fatal(err)
	}
	o.v = 7
	if _, err := p.readOracle(true); err != nil {
		t.Fatal(err)
	}
	if n, unreadable := p.Unattributed(); n != 2 || unreadable {
		t.Errorf("unattributed %d (unreadable %v), want 2", n, unreadable)
	}
	line := Cases("shop", "test", nil, "the oracle moved")[0].Run(context.Background(), scenario.Env{LogDir: t.TempDir()})
	if line.Verdict != report.Error {
		t.Errorf("with the counts suspect: %s, want an ERROR", report.Format(line))
	}
}
