package cases

import (
	"fmt"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/pins"
)

// grpcDeadline is the deadline of a grpc scenario's calls: room for a
// retry policy's 4 attempts and backoffs on a loaded machine.
const grpcDeadline = 2 * time.Second

// unsupported observes every invariant in invs as unsupported: the
// column has no equivalent of the scenario's fault.
func (g *grpcT) unsupported(why string, invs ...string) {
	g.Field("unsupported", why)
	for _, inv := range invs {
		g.observe(inv, pins.Unsupported)
	}
}

// debitOnce makes one debit of 10 on a fresh account under fault and
// observes, from the server's log, how often it executed and what its
// caller was told: exec_at_most_once and ok_only_if_executed, and
// recovers when recover is set (the fault refused it unexecuted).
func (g *grpcT) debitOnce(f grpcFault, recover bool) {
	invs := []string{invExecOnce, invOKExecuted}
	if recover {
		invs = append(invs, invRecovers)
	}
	if !g.start(f) {
		g.unsupported("no such fault on rpcbench's wire", invs...)
		return
	}
	const account = "acct-G"
	a := g.do(call{method: bank.MethodDebit, account: account, amount: 10, deadline: grpcDeadline})
	n := g.executions(account)
	g.Field("code", a.code)
	g.Field("executions", n)
	g.Field("requests", a.requests)
	g.Volatile("elapsed", ms(a.elapsed))
	g.observe(invExecOnce, holds(n <= 1))
	g.observe(invOKExecuted, holds(a.code != "OK" || n >= 1))
	if recover {
		g.observe(invRecovers, holds(a.code == "OK" && n == 1))
	}
}

func grpcUnavailableBeforeExec(g *grpcT) {
	g.debitOnce(grpcFault{grpc: "kind=unavailable method=debit count=1", rb: "kind=unavailable method=debit count=1"}, true)
}

func grpcUnavailableAfterExec(g *grpcT) {
	g.debitOnce(grpcFault{grpc: "kind=unavailable_after_exec method=debit count=1", rb: "kind=unavailable_after_exec method=debit count=1"}, false)
}

func grpcCloseAfterExec(g *grpcT) {
	g.debitOnce(grpcFault{grpc: "kind=close method=debit count=1", rb: "kind=close method=debit count=1"}, false)
}

func grpcResetAfterExec(g *grpcT) {
	g.debitOnce(grpcFault{grpc: "kind=reset method=debit count=1"}, false)
}

func grpcRefusedStream(g *grpcT) {
	g.debitOnce(grpcFault{grpc: "kind=rst code=REFUSED_STREAM method=debit count=1"}, true)
}

func grpcGoAwayBelow(g *grpcT) {
	g.debitOnce(grpcFault{grpc: "kind=goaway_below method=debit count=1"}, true)
}

func grpcGoAwayCover(g *grpcT) {
	g.debitOnce(grpcFault{grpc: "kind=goaway_cover method=debit count=1"}, false)
}

// grpcNoReplySlack is how far past its deadline a call may return on a
// loaded 2-core machine and still be within it.
const grpcNoReplySlack = 500 * time.Millisecond

func grpcNoReplyWithinDeadline(g *grpcT) {
	const deadline = time.Second
	if !g.start(grpcFault{grpc: "kind=noreply method=debit count=1", rb: "kind=noreply method=debit count=1"}) {
		g.unsupported("no such fault on rpcbench's wire", invExecOnce, invWithinDeadline)
		return
	}
	const account = "acct-N"
	a := g.do(call{method: bank.MethodDebit, account: account, amount: 10, deadline: deadline})
	n := g.executions(account)
	g.Field("code", a.code)
	g.Field("executions", n)
	g.observe(invExecOnce, holds(n <= 1))
	g.Volatile("elapsed", ms(a.elapsed))
	g.Field("elapsedBound", ms(deadline+grpcNoReplySlack))
	g.observe(invWithinDeadline, holds(a.elapsed <= deadline+grpcNoReplySlack))
}

// grpcConcurrentCalls is how many calls grpc_concurrent_own_answers
// makes at once.
const grpcConcurrentCalls = 32

func grpcConcurrentOwnAnswers(g *grpcT) {
	g.start(grpcFault{})
	cs := make([]call, grpcConcurrentCalls)
	for i := range cs {
		cs[i] = call{method: bank.MethodGet, account: fmt.Sprintf("acct-C%02d", i), deadline: grpcDeadline}
	}
	answers := g.doAll(cs)
	wrong, failed := 0, 0
	for i, a := range answers {
		switch {
		case a.code != "OK":
			failed++
		case a.account != fmt.Sprintf("acct-C%02d", i):
			wrong++
		}
	}
	g.Field("calls", grpcConcurrentCalls)
	g.Field("failed", failed)
	g.Field("wrongAnswers", wrong)
	g.observe(invOwnAnswer, holds(wrong == 0 && failed == 0))
}
