package target

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/rpcbench/rpcbench/internal/cases/judge"
)

// Lifecycle is a service rpcbench started itself (target ADDR -- CMD):
// the rows that stop it send it a signal, wait for it to exit, and start
// it again.
type Lifecycle interface {
	// Signal sends the service's process sig.
	Signal(sig syscall.Signal) error
	// Wait waits at most d for the process to exit, and says whether it
	// did; one that did not is killed.
	Wait(d time.Duration) bool
	// Restart starts the service again and returns once Addr accepts
	// connections.
	Restart(ctx context.Context) error
}

// The invariants of the rows that stop the service. They have no row
// in the server section, whose servers rpcbench does not stop.
const (
	// InvDrainAnswers: a call in flight when the service was told to
	// drain (SIGTERM) is answered with a status, not cut off.
	InvDrainAnswers = "srv_drain_answers"
	// InvOKDurable: an execution the service answered OK for is still
	// counted after it crashed (SIGKILL) and came back.
	InvOKDurable = "srv_ok_durable"
)

// exitWait bounds how long a row waits for the service to exit after
// its signal, beyond the slow handler's time: a service still running
// then is killed, and the row says so.
const exitWait = 10 * time.Second

// noLifecycle is why a row that stops the service is n/a.
const noLifecycle = "rpcbench did not start the service: give -- COMMAND to let it stop and restart it"

// lifecycleRows are the rows that stop the service.
func lifecycleRows() []row {
	return []row{
		{"target_sigterm_drain", "a slow call (--slow-data) in flight when the service gets SIGTERM a quarter of --slow-for after it was sent: the drain must answer it, and the answer say whether it ran (counted after the service is started again)", "target_sigterm_drain", []string{InvDrainAnswers, judge.InvSrvOKIffExec}, sigtermDrain},
		{"target_sigkill_after_ok", "a call answered OK, then SIGKILL at once: once the service is started again, the execution it answered OK for must still be counted", "target_sigkill_after_ok", []string{InvOKDurable}, sigkillAfterOK},
	}
}

// NeedsCommand reports whether row name stops the service, and so is
// n/a unless rpcbench started it (Service.Lifecycle).
func NeedsCommand(name string) bool {
	for _, r := range lifecycleRows() {
		if r.name == name {
			return true
		}
	}
	return false
}

// lifecycle returns the service's Lifecycle, or makes the row n/a.
func (r *rowT) lifecycle() Lifecycle {
	if r.s.Lifecycle == nil {
		r.Field("executions", "unknown")
		for _, inv := range r.row.invs {
			r.unknown(inv)
		}
		r.NA = noLifecycle
		return nil
	}
	return r.s.Lifecycle
}

// readOnce reads the oracle on a connection of its own, closed after.
func (r *rowT) readOnce() int64 {
	c, err := r.s.dial(r.Ctx)
	if err != nil {
		r.Errored("%v", err)
	}
	defer c.Close()
	v, err := r.s.Oracle.Read(r.Ctx, c)
	if err != nil {
		r.oracleErr(err)
	}
	return v
}

// stopAndRestart sends sig, waits for the exit, and starts the service
// again; a service that does not exit is killed, and recorded.
func (r *rowT) stopAndRestart(lc Lifecycle, sig syscall.Signal, wait time.Duration) {
	if err := lc.Signal(sig); err != nil {
		r.Errored("signal %v: %v", sig, err)
	}
	exited := lc.Wait(wait)
	r.Field("exited", exited)
	if !exited {
		r.Check(false, "the service did not exit within %v of %v: killed", wait, sig)
	}
	if err := lc.Restart(r.Ctx); err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			r.Fatalf("%v", err)
		}
		r.Errored("restarting the service: %v", err)
	}
}

// moved turns the oracle's move across a restart into executions; a
// move backwards, or not a whole number of executions, is state the
// service lost, reported as why.
func (r *rowT) moved(before, after int64) (int, string) {
	n, err := r.s.Oracle.executions(after - before)
	if err != nil {
		return -1, fmt.Sprintf(".%s read %d before and %d after the restart, not a whole number of executions of %+d: the service lost state", r.s.Oracle.Field, before, after, r.s.Oracle.PerExec)
	}
	return n, ""
}

// sigtermDrain sends the slow call, then SIGTERM while its handler runs.
func sigtermDrain(r *rowT) {
	lc := r.lifecycle()
	if lc == nil {
		return
	}
	c := r.dial()
	if r.s.Slow == nil || r.s.Oracle == nil {
		r.slow("30S", c) // n/a or unknown, saying why
		return
	}
	before := r.readOnce()
	st, _, _ := r.slow("30S", c)
	select {
	case <-st.Done():
		res, _ := st.Wait(r.Ctx)
		r.Errored("the slow call ended %s before SIGTERM: --slow-for says its handler takes %v", outcomeOf(res), r.s.SlowFor)
	case <-time.After(r.quarter()):
	case <-r.Ctx.Done():
		r.Fatalf("%v", r.Ctx.Err())
	}
	if err := lc.Signal(syscall.SIGTERM); err != nil {
		r.Errored("SIGTERM: %v", err)
	}
	wctx, cancel := context.WithTimeout(r.Ctx, r.s.SlowFor+exitWait)
	res, err := st.Wait(wctx)
	cancel()
	code := outcomeOf(res)
	if err != nil {
		code = "NO_ANSWER"
		st.Reset(0x8)
	}
	r.Field("code", code)
	exited := lc.Wait(exitWait)
	r.Field("exited", exited)
	if !exited {
		r.Check(false, "the service did not exit within %v of SIGTERM: killed", exitWait)
	}
	if err := lc.Restart(r.Ctx); err != nil {
		r.Errored("restarting the service: %v", err)
	}
	r.observe(InvDrainAnswers, judge.Holds(res.HasCode), fmt.Sprintf("the call in flight at SIGTERM ended %s, with no status", code))
	n, lost := r.moved(before, r.readOnce())
	if lost != "" {
		r.Field("executions", "unknown")
		r.unknown(judge.InvSrvOKIffExec)
		r.Errored("%s: keep its state where a restart finds it (a database) to judge this row", lost)
		return
	}
	r.Field("executions", n)
	ok := res.HasCode && res.Code == 0
	r.observe(judge.InvSrvOKIffExec, judge.Holds(ok == (n == 1) && n <= 1), fmt.Sprintf("the call in flight at SIGTERM was answered %s and executed %d times", code, n))
}

// sigkillAfterOK makes a plain call and kills the service as soon as it
// answered OK.
func sigkillAfterOK(r *rowT) {
	lc := r.lifecycle()
	if lc == nil {
		return
	}
	if r.s.Oracle == nil {
		r.Field("executions", "unknown")
		r.unknown(InvOKDurable)
		return
	}
	before := r.readOnce()
	c := r.dial()
	res, err := r.s.call(r.Ctx, c, "10S")
	if err != nil {
		r.Errored("%v", err)
	}
	if !res.HasCode || res.Code != 0 {
		r.Errored("the call answered %s, not OK: the row needs a call the service serves", outcomeOf(res))
	}
	r.stopAndRestart(lc, syscall.SIGKILL, exitWait)
	n, lost := r.moved(before, r.readOnce())
	if lost != "" {
		r.Field("executions", "unknown")
		r.observe(InvOKDurable, judge.Holds(false), lost)
		return
	}
	r.Field("executions", n)
	why := fmt.Sprintf("the call answered OK before the crash counts %d executions after the restart", n)
	if n == 0 {
		why = "the call answered OK before the crash counts no execution after the restart: the service lost it"
	}
	r.observe(InvOKDurable, judge.Holds(n == 1), why)
}
