package evidence

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/scenario"
)

// The A/B/C timeline: A's response is held until its budget plus
// lateDelay has passed, so it arrives while B (which sleeps bSleep on the
// server) is still waiting. B is sent once A has returned: A's late
// answer must come after that, and before B's own. The margins on both
// sides (lateDelay for A's return and B's send, bSleep-lateDelay for
// the late answer's trip) hold on a 2-core machine under stress-ng with
// a load average over 10, where 150ms and 250ms did not always.
const (
	aTimeout  = 200 * time.Millisecond
	lateDelay = 500 * time.Millisecond
	bSleep    = 1500 * time.Millisecond
	bTimeout  = 3 * time.Second
)

var lateGetFault = fmt.Sprintf("kind=late method=get count=1 delay=%v", lateDelay)

func lateResponseDroppedByID(t *scenario.T) {
	s := t.StartServer(scenario.ServerOpts{Faults: []string{lateGetFault}})
	c := t.Client(s.Addr, client.DefaultConfig())

	a := scenario.GetCall("acct-A")
	a.Timeout, a.AttemptTimeout = aTimeout, aTimeout
	ra := c.Do(t.Ctx, a)

	b := scenario.GetCall("acct-B")
	b.Payload = fmt.Appendf(b.Payload, " sleep=%d", bSleep.Milliseconds())
	b.Timeout, b.AttemptTimeout = bTimeout, bTimeout
	rb := c.Do(t.Ctx, b)
	droppedDuringB := c.Stats().LateDropped

	rc := c.Do(t.Ctx, scenario.GetCall("acct-C"))
	st := c.Stats()

	scenario.Expect(t, "A", ra.Status, proto.StatusDeadlineExceeded)
	t.Volatile("aElapsed", scenario.Millis(ra.Elapsed))
	t.Field("B", scenario.Brief(rb, "account", "balance"))
	if n, err := strconv.ParseUint(scenario.PayloadFields(rb)["budget"], 10, 32); t.Check(err == nil, "B's answer %q has no budget", rb.Payload) {
		scenario.Within(t, "bBudget", scenario.Budget(uint32(n)), bTimeout)
	}
	t.Field("C", scenario.Brief(rc, "account", "balance"))
	scenario.Expect(t, "lateDropped", st.LateDropped, 1)
	scenario.Expect(t, "clientConns", st.ConnsOpened, 1)
	t.Check(ra.Elapsed <= aTimeout+scenario.Slack, "A returned after %v, deadline %v", ra.Elapsed, aTimeout)
	t.Check(rb.Status == proto.StatusOK && scenario.PayloadFields(rb)["account"] == "acct-B", "B got %q (%v), want acct-B", rb.Payload, rb.Status)
	t.Check(rc.Status == proto.StatusOK && scenario.PayloadFields(rc)["account"] == "acct-C", "C got %q (%v), want acct-C", rc.Payload, rc.Status)
	t.Check(droppedDuringB == 1, "late responses dropped while B waited: %d, want 1", droppedDuringB)
}

// negativeControlFIFOCrosstalk runs the same timeline through the FIFO
// client. It passes only if B really received A's answer with no error.
func negativeControlFIFOCrosstalk(t *scenario.T) {
	s := t.StartServer(scenario.ServerOpts{Faults: []string{lateGetFault}})
	c, err := dialFIFO(t.Ctx, s.Addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })

	_, errA := c.Do(t.Ctx, bank.MethodGet, []byte("account=acct-A"), aTimeout)
	fb, errB := c.Do(t.Ctx, bank.MethodGet, fmt.Appendf(nil, "account=acct-B sleep=%d", bSleep.Milliseconds()), bTimeout)
	fc, errC := c.Do(t.Ctx, bank.MethodGet, []byte("account=acct-C"), bTimeout)

	crosstalk := 0
	for _, x := range []struct {
		want string
		f    proto.Frame
		err  error
	}{{"acct-B", fb, errB}, {"acct-C", fc, errC}} {
		if x.err == nil && scenario.FieldOf(x.f.Payload, "account") != x.want {
			crosstalk++
		}
	}
	t.Field("expectCrosstalk", true)
	t.Field("A", errText(errA))
	scenario.Expectf(t, "B", fmt.Sprintf("%v account=%s", fb.Status, scenario.FieldOf(fb.Payload, "account")), fmt.Sprintf("%v account=acct-A", proto.StatusOK),
		"expected B to receive acct-A's answer; got %q", fb.Payload)
	scenario.Expectf(t, "bError", errText(errB), errText(nil), "expected B's wrong answer to come with no error signal")
	t.Field("C", fmt.Sprintf("%v account=%s", fc.Status, scenario.FieldOf(fc.Payload, "account")))
	t.Field("crosstalk", crosstalk)
	t.Check(errA != nil, "A did not time out")
	t.Check(crosstalk >= 1, "no crosstalk observed: the negative control did not reproduce the defect")
}

func errText(err error) string {
	if err == nil {
		return "none"
	}
	return err.Error()
}

func lateThenRetryNewRequestID(t *scenario.T) {
	s := t.StartServer(scenario.ServerOpts{Faults: []string{lateGetFault}})
	c := t.Client(s.Addr, client.DefaultConfig())
	r := c.Do(t.Ctx, scenario.GetCall("acct-L"))
	// The first attempt's answer is due at its budget plus lateDelay; wait
	// for the reader to see and drop it.
	scenario.WaitFor(client.DefaultConfig().AttemptTimeout+lateDelay+2*time.Second, func() bool { return c.Stats().LateDropped >= 1 })
	ids := make([]uint64, len(r.Log))
	idText := make([]string, len(r.Log))
	for i, a := range r.Log {
		ids[i] = a.ID
		idText[i] = strconv.FormatUint(a.ID, 10)
	}
	scenario.Expectf(t, "status", scenario.Brief(r, "account"), "OK account=acct-L", "payload %q", r.Payload)
	scenario.Expect(t, "attempts", r.Attempts, 2)
	t.Field("ids", strings.Join(idText, ","))
	t.Field("outcomes", scenario.Outcomes(r))
	t.Volatile("log", scenario.AttemptLog(r))
	scenario.Expect(t, "lateDropped", c.Stats().LateDropped, 1)
	t.Check(len(ids) == 2 && ids[0] != ids[1], "attempt IDs %v, want two distinct", ids)
	t.Check(len(r.Log) > 0 && r.Log[0].Outcome == client.OutcomeTimeout, "first attempt %v, want TIMEOUT", scenario.Outcomes(r))
}
