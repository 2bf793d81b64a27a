package server_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/server"
	"github.com/rpcbench/rpcbench/internal/servertest"
)

// TestDuplicateWaitsFromArrival: a request's budget runs from its
// arrival, wherever the budget is used, queue time included. With both
// workers busy, a keyed duplicate waits 1 s in the queue, then waits for
// its original, which is still executing: it must be answered when its
// 2 s budget, counted from its arrival, runs out, not 2 s after a worker
// took it. Counted from the take, the answer would come at about 3 s.
func TestDuplicateWaitsFromArrival(t *testing.T) {
	t.Parallel()
	const (
		queued = time.Second
		budget = 2 * time.Second
	)
	cfg := server.DefaultConfig()
	cfg.Workers = 2
	_, addr := servertest.Start(t, cfg)
	rc := servertest.Dial(t, addr)

	keyed := func(id uint64, budgetMs uint32) proto.Frame {
		f := servertest.Request(id, bank.MethodDebit, "account=a amount=10 sleep=6000")
		f.Key, f.BudgetMs = "k", budgetMs
		return f
	}
	// The original holds one worker for 6 s, a slow get the other for
	// queued; the duplicate, on the same connection after both, waits in
	// the queue until the get is done.
	rc.Send(keyed(1, 10_000))
	blocker := servertest.Request(2, bank.MethodGet, fmt.Sprintf("account=b sleep=%d", queued.Milliseconds()))
	blocker.BudgetMs = 10_000
	rc.Send(blocker)
	sent := time.Now()
	rc.Send(keyed(3, uint32(budget.Milliseconds())))
	for {
		f := rc.Recv()
		if f.ID != 3 {
			continue
		}
		took := time.Since(sent)
		if f.Status != proto.StatusDeadlineExceeded || !strings.Contains(string(f.Payload), "still executing") {
			t.Fatalf("duplicate: %v %q, want DEADLINE_EXCEEDED, original still executing", f.Status, f.Payload)
		}
		// Bounds with room for a loaded machine on either side, both
		// far from the 3 s a budget counted from the take would give.
		if took < budget-100*time.Millisecond || took > budget+queued/2 {
			t.Errorf("duplicate answered %v after it was sent, want about its budget %v (counted from its arrival), not %v", took, budget, budget+queued)
		}
		return
	}
}

// TestLateFaultFromArrival: the late fault times its answer from the
// request's arrival too. With the only worker busy for 1 s, a debit with
// a 2 s budget under "late delay=200ms" waits in the queue, executes,
// and must be answered 2.2 s after it was sent; timed from the take, the
// answer would come at about 3.2 s.
func TestLateFaultFromArrival(t *testing.T) {
	t.Parallel()
	const (
		queued = time.Second
		budget = 2 * time.Second
		delay  = 200 * time.Millisecond
	)
	cfg := server.DefaultConfig()
	cfg.Workers = 1
	_, addr := servertest.Start(t, cfg, fmt.Sprintf("kind=late method=debit count=1 delay=%v", delay))
	rc := servertest.Dial(t, addr)
	blocker := servertest.Request(1, bank.MethodGet, fmt.Sprintf("account=b sleep=%d", queued.Milliseconds()))
	blocker.BudgetMs = 10_000
	rc.Send(blocker)
	debit := servertest.Request(2, bank.MethodDebit, "account=a amount=10 sleep=0") // sleep=0: through the queue
	debit.BudgetMs = uint32(budget.Milliseconds())
	sent := time.Now()
	rc.Send(debit)
	for {
		f := rc.Recv()
		if f.ID != 2 {
			continue
		}
		took := time.Since(sent)
		if f.Status != proto.StatusOK {
			t.Fatalf("late debit: %v %q, want OK, late", f.Status, f.Payload)
		}
		if want := budget + delay; took < want-100*time.Millisecond || took > want+queued/2 {
			t.Errorf("late debit answered %v after it was sent, want about its budget plus delay, %v, counted from its arrival, not %v", took, want, want+queued)
		}
		return
	}
}
