package grpc

import (
	"fmt"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/cases/judge"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// grpcAlwaysDeadline is the deadline of a debit the server refuses every
// time: long enough for a retry policy's attempts and backoffs, short
// enough that a stack re-sending in a loop shows it without filling the
// evidence.
const grpcAlwaysDeadline = time.Second

// grpcRefusedAlways is a keyless debit the server refuses unexecuted on
// every request (its fault has no count): how many requests one call
// sends before it ends, by the server's log, on how many connections,
// and what its caller is told.
func grpcRefusedAlways(g *judge.T) {
	invs := []string{judge.InvExecOnce, judge.InvAttemptsBounded, judge.InvRefusalReported, judge.InvNotCancelled}
	if !g.Start() {
		g.Unsupported("no such fault on rpcbench's wire", invs...)
		return
	}
	const account = "acct-A"
	a := g.Do(judge.Call{Method: bank.MethodDebit, Account: account, Amount: 10, Deadline: grpcAlwaysDeadline})
	n := g.Executions(account)
	evs := g.Events(g.S)
	faults := scenario.CountEvents(evs, func(e serverapi.Event) bool { return e.Name == serverapi.EventFault })
	conns := scenario.CountEvents(evs, func(e serverapi.Event) bool {
		return e.Name == serverapi.EventConnOpen && e.Text(serverapi.KeyWire) == serverapi.WireGRPC
	})
	g.Check(faults >= 1, "the server's log shows no refusal: the fault did not take effect")
	g.Check(a.Code != "OK", "the server refuses every request, yet the call ended OK")
	g.Field("executions", n)
	g.Field("requestsBound", judge.MaxRequestsPerCall)
	// A stack that re-sends in a loop makes as many requests and
	// connections as the machine lets it before the deadline: the counts
	// are recorded, and compared only as within the bound or not.
	g.Volatile("requests", a.Requests)
	g.Volatile("refusals", faults)
	g.Volatile("conns", conns)
	g.Volatile("elapsed", scenario.Millis(a.Elapsed))
	g.Field("code", a.Code)
	g.Observe(judge.InvExecOnce, judge.Holds(n <= 1))
	g.Observe(judge.InvAttemptsBounded, judge.Holds(faults <= judge.MaxRequestsPerCall))
	g.Observe(judge.InvRefusalReported, judge.Holds(n == 0 && a.Code == "UNAVAILABLE"))
	observeNotCancelled(g, a)
}

// grpcPushbackMalformedDeadline is the deadline of a malformed hint's
// debit: room for a stack that reads "1500x" as 1500ms to retry well
// within it on a loaded machine, so that what it did shows.
const grpcPushbackMalformedDeadline = 5 * time.Second

// grpcPushbackMalformed refuses a keyless debit UNAVAILABLE, unexecuted,
// once, with a grpc-retry-pushback-ms that is not a whole non-negative
// number of milliseconds: gRFC A6 reads it as "do not retry", so the
// server must see one request and the caller the refusal. It runs in the
// columns with a retry policy alone (judge.KindRetry): without one
// nothing is retried whatever the hint says.
func grpcPushbackMalformed(g *judge.T) {
	if !g.Start() {
		g.Unsupported("rpcbench's wire carries its hint in the status text: the evidence group's malformed-hint scenarios", judge.InvExecOnce, judge.InvPushback, judge.InvNotCancelled)
		return
	}
	const account = "acct-PM"
	a := g.Do(judge.Call{Method: bank.MethodDebit, Account: account, Amount: 10, Deadline: grpcPushbackMalformedDeadline})
	n := g.Executions(account)
	faultFired(g)
	g.Field("code", a.Code)
	g.Field("executions", n)
	g.Field("requests", a.Requests)
	g.Volatile("elapsed", scenario.Millis(a.Elapsed))
	g.Observe(judge.InvExecOnce, judge.Holds(n <= 1))
	g.Observe(judge.InvPushback, judge.Holds(a.Requests == 1 && n == 0))
	observeNotCancelled(g, a)
}

// grpcResetCalls are the gets of grpc_reset_code, one at a time.
const grpcResetCalls = 10

// grpcResetCode makes gets one at a time, each of whose requests the
// server answers by resetting the connection (TCP RST): what each
// caller is told, across ten calls, since a stack may tell one code or
// another from call to call.
func grpcResetCode(g *judge.T) {
	if !g.Start() {
		g.Unsupported("no such fault on rpcbench's wire", judge.InvNotCancelled)
		return
	}
	answers := make([]judge.Answer, grpcResetCalls)
	codes := map[string]int{}
	for i := range answers {
		answers[i] = g.Do(judge.Call{Method: bank.MethodGet, Account: fmt.Sprintf("acct-RC%02d", i), Deadline: grpcDeadline})
		codes[answers[i].Code]++
		if answers[i].Code == "OK" {
			g.Fatalf("get %d ended OK, though the server resets every request", i)
		}
	}
	// A channel whose connection was reset may fail a call made while
	// it backs off without sending it (grpcio without a retry policy):
	// such a call never met the fault, and the resets are counted.
	resets := scenario.CountEvents(g.Events(g.S), func(e serverapi.Event) bool { return e.Name == serverapi.EventFault })
	g.Check(resets >= 1, "the server's log shows no reset: the fault did not take effect")
	g.Field("calls", grpcResetCalls)
	g.Volatile("resets", resets)
	g.Volatile("codes", countsText(codes))
	observeNotCancelled(g, answers...)
}
