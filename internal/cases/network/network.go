package network

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/nethost"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// startServerIn starts an rpcserver inside h, bound to h's address (on a
// port the kernel picks unless o.Addr says which).
func startServerIn(t *scenario.T, h *nethost.Host, o scenario.ServerOpts) *scenario.Server {
	if o.Addr == "" {
		o.Addr = h.Addr.String() + ":0"
	}
	o.Exec = h.Exec
	return t.StartServer(o)
}

// openConn makes a get of account on c, so that c's connection is open
// before the scenario changes the link; anything but OK fails it.
func openConn(t *scenario.T, c *client.Client, account string) {
	if r := c.Do(t.Ctx, scenario.GetCall(account)); r.Status != proto.StatusOK {
		t.Fatalf("opening get: %v %v", r.Status, r.Err)
	}
}

// hold lets d pass, a span the scenario measures or keeps a fault for,
// not a wait for an event; it stops the scenario if ctx ends first.
func hold(t *scenario.T, d time.Duration) {
	if d <= 0 {
		return
	}
	select {
	case <-time.After(d):
	case <-t.Ctx.Done():
		t.Fatalf("interrupted")
	}
}

// lost is one connection the client lost: when, and of what.
type lost struct {
	at  time.Time
	err error
}

// connLoss records the client's lost connections, through
// client.Config.OnConnLost.
type connLoss struct {
	mu    sync.Mutex // guards all
	seen  []lost
	first chan struct{} // closed at the first loss
}

func newConnLoss() *connLoss { return &connLoss{first: make(chan struct{})} }

func (l *connLoss) hook(_ string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, lost{time.Now(), err})
	if len(l.seen) == 1 {
		close(l.first)
	}
}

// awaitFirst returns the first loss, waiting up to timeout for it. The
// hook runs on the connection's reader after the attempts on it were
// failed, so a call can return before its connection's loss is recorded:
// a scenario waits for it rather than looking once.
func (l *connLoss) awaitFirst(timeout time.Duration) (lost, bool) {
	select {
	case <-l.first:
	case <-time.After(timeout):
		return lost{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seen[0], true
}

// count returns how many losses were seen.
func (l *connLoss) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.seen)
}

// sleepDebit returns a debit of 10, with key unless it is empty, that
// the server holds for d before executing, so that it is in flight while
// the scenario changes the link.
func sleepDebit(account string, d time.Duration, key string) client.Call {
	c := scenario.DebitCall(account, 10, key)
	c.Payload = fmt.Appendf(c.Payload, " sleep=%d", d.Milliseconds())
	return c
}

// keepaliveNet is the keepalive both network scenarios that compare with
// and without it use.
// Time must outlast halfOpenPeer's debit, so that the debit ends at its
// own deadline before keepalive can tell.
var keepaliveNet = client.KeepaliveConfig{Time: 3 * time.Second, Timeout: 500 * time.Millisecond}

// halfOpenPeer is the common part of half_open_peer_detected and its
// negative control: a get opens the connection, a keyless debit is in
// flight when the server host's link goes silent, and the debit's
// deadline passes. It returns the client, the loss recorder, when the
// get's answer was read and when the link went down.
func halfOpenPeer(t *scenario.T, h *nethost.Host, s *scenario.Server, ka *client.KeepaliveConfig) (*client.Client, *connLoss, time.Time, time.Time) {
	// The link must go down before the server answers, after the
	// debit's sleep: 1.5 s leaves room for the control call that sees the
	// debit arrive and for ip on a loaded machine.
	const (
		debitSleep    = 1500 * time.Millisecond
		debitDeadline = 2 * time.Second
	)
	loss := newConnLoss()
	cfg := client.DefaultConfig()
	cfg.Keepalive, cfg.OnConnLost = ka, loss.hook
	c := t.Client(s.Addr, cfg)
	openConn(t, c, "acct-H")
	lastRead := time.Now()
	d := sleepDebit("acct-H", debitSleep, "")
	d.Timeout, d.AttemptTimeout = debitDeadline, debitDeadline
	done := make(chan client.Result, 1)
	go func() { done <- c.Do(t.Ctx, d) }()
	t.AwaitReceived(s, 1)
	t.SetLink(h, false)
	down := time.Now()
	rd := <-done

	scenario.Expect(t, "debit", rd.Status, proto.StatusUnknown)
	t.Field("debitOutcomes", scenario.Outcomes(rd))
	scenario.Within(t, "debitElapsed", rd.Elapsed, debitDeadline+scenario.Slack)
	return c, loss, lastRead, down
}

func halfOpenPeerDetected(t *scenario.T) {
	h := t.Host()
	s := startServerIn(t, h, scenario.ServerOpts{})
	ka := keepaliveNet
	c, loss, lastRead, down := halfOpenPeer(t, h, s, &ka)
	t.Field("keepalive", fmt.Sprintf("time=%v,timeout=%v", ka.Time, ka.Timeout))

	// The debit ended at its deadline, before keepalive could tell: the
	// idle connection is declared dead at most Time+Timeout after its
	// last read.
	l, ok := loss.awaitFirst(ka.Time + ka.Timeout + 5*time.Second)
	if !scenario.Expectf(t, "declaredDead", ok, true, "no connection was declared dead") {
		t.Fatalf("the client never noticed the silent host")
	}
	scenario.Expectf(t, "deadBecause", errors.Is(l.err, client.ErrKeepaliveTimeout), true, "the connection died of %v", l.err)
	// Time+Timeout after the last read, which came just before the link
	// went down.
	scenario.Within(t, "sinceLastRead", l.at.Sub(lastRead), ka.Time+ka.Timeout+scenario.Slack)
	t.Volatile("detectedAfterDown", scenario.Millis(l.at.Sub(down)))
	st := c.Stats()
	scenario.Expect(t, "keepaliveTimeouts", st.KeepaliveTimeouts, 1)
	scenario.AtLeast(t, "pingsSent", st.PingsSent, 1, "a connection declared dead without a ping")

	// Back up: the next call dials a new connection and is served.
	t.SetLink(h, true)
	r := c.Do(t.Ctx, scenario.GetCall("acct-H"))
	t.Field("after", scenario.Brief(r, "account", "balance"))
	scenario.Expect(t, "afterStatus", r.Status, proto.StatusOK)
	scenario.Expect(t, "clientConns", c.Stats().ConnsOpened, 2)
	// The debit did execute: UNKNOWN was the truth, which is why it was
	// not re-sent.
	ctr := t.Counters(s)
	scenario.Expectf(t, "serverDebitExec", ctr.ExecDebit, 1, "the debit in flight should have executed, unanswered")
	scenario.Expect(t, "balance", t.Balance(s, "acct-H"), bank.DefaultBalance-10)
}

func negativeControlNoKeepalive(t *scenario.T) {
	t.Field("expectStillBelieved", true)
	h := t.Host()
	s := startServerIn(t, h, scenario.ServerOpts{})
	c, loss, _, down := halfOpenPeer(t, h, s, nil)
	// As long as half_open_peer_detected gives keepalive, and more: a
	// timer here is the measurement, not a wait for an event.
	wait := keepaliveNet.Time + keepaliveNet.Timeout + scenario.Slack
	hold(t, wait-time.Since(down))
	t.Field("waitedAfterDown", scenario.Millis(wait))
	scenario.Expectf(t, "connsLost", c.Stats().ConnsLost, 0, "the client noticed the silent host without keepalive")
	scenario.Expect(t, "lossesSeen", loss.count(), 0)
	t.SetLink(h, true)
}

func partitionThenHealKeyedDebit(t *scenario.T) {
	// Unpartitioned, the first attempt would be answered after the
	// debit's 1.5 s sleep, within its 2.5 s; the link goes down before
	// that, and stays down until 2 s after the debit executed, past the
	// first attempt's end.
	const (
		debitSleep = 1500 * time.Millisecond
		partition  = 2 * time.Second
		key        = "k-partition"
	)
	h := t.Host()
	s := startServerIn(t, h, scenario.ServerOpts{})
	cfg := client.DefaultConfig()
	cfg.AttemptTimeout, cfg.Deadline, cfg.MaxAttempts = 2500*time.Millisecond, 20*time.Second, 12
	c := t.Client(s.Addr, cfg)
	d := sleepDebit("acct-P", debitSleep, key)
	done := make(chan client.Result, 1)
	go func() { done <- c.Do(t.Ctx, d) }()
	t.AwaitReceived(s, 1)
	t.SetLink(h, false)
	// The server executes the debit inside the partition; its answer goes
	// into the silent link.
	if !scenario.WaitFor(10*time.Second, func() bool { return t.ExecLogged(s, bank.MethodDebit) >= 1 }) {
		t.Fatalf("the server never executed the debit")
	}
	hold(t, partition)
	t.Field("partition", scenario.Millis(partition))
	t.SetLink(h, true)
	r := <-done

	fs := scenario.PayloadFields(r)
	t.Field("status", scenario.Brief(r, "balance", "replayed", "exec"))
	scenario.Expect(t, "callStatus", r.Status, proto.StatusOK)
	scenario.Expectf(t, "replayed", fs["replayed"], "true", "the answer should be the stored one")
	scenario.AtLeast(t, "attempts", r.Attempts, 2, "the first attempt's answer was lost, so there must be a retry")
	scenario.Expect(t, "firstOutcome", r.Log[0].Outcome, client.OutcomeTimeout)
	t.Volatile("outcomes", scenario.Outcomes(r))
	scenario.AtLeast(t, "lateDropped", c.Stats().LateDropped, 1, "the first attempt's answer arrives after it timed out")
	ctr := t.Counters(s)
	scenario.Expect(t, "serverDebitExec", ctr.ExecDebit, 1)
	scenario.AtLeast(t, "dedupHits", ctr.DedupHits, 1, "the retry must be answered from the stored record")
	scenario.Expect(t, "balance", t.Balance(s, "acct-P"), bank.DefaultBalance-10)
}

func serverHostRestart(t *scenario.T) {
	const debitSleep = 2 * time.Second
	h := t.Host()
	s := startServerIn(t, h, scenario.ServerOpts{})
	loss := newConnLoss()
	cfg := client.DefaultConfig()
	// The get's first attempt must outlast the restarted host's address
	// resolution, which can take seconds on a loaded machine, so that the
	// RST it meets, not its own timeout, ends it. With 1 s, CI once saw
	// TIMEOUT,CONN_LOST_AFTER_SEND,RESPONSE/OK.
	cfg.AttemptTimeout, cfg.Deadline = 4*time.Second, 10*time.Second
	cfg.OnConnLost = loss.hook
	c := t.Client(s.Addr, cfg)
	openConn(t, c, "acct-R")
	// A keyless debit the old server holds when its host goes down.
	d := sleepDebit("acct-R", debitSleep, "")
	d.Timeout, d.AttemptTimeout = 8*time.Second, 8*time.Second
	done := make(chan client.Result, 1)
	go func() { done <- c.Do(t.Ctx, d) }()
	t.AwaitReceived(s, 1)

	t.SetLink(h, false)
	t.KillServer(s)
	if err := h.Restart(false); err != nil {
		t.Fatalf("restart host: %v", err)
	}
	s2 := startServerIn(t, h, scenario.ServerOpts{Addr: s.Addr})
	t.SetLink(h, true)

	// The old connection is still open at this end; the get's request
	// meets a stack that never heard of it.
	r := c.Do(t.Ctx, scenario.GetCall("acct-R2"))
	rd := <-done
	l, ok := loss.awaitFirst(5 * time.Second)
	scenario.Expectf(t, "oldConnReset", ok && errors.Is(l.err, syscall.ECONNRESET), true, "the old connection died of %v", l.err)
	t.Field("get", scenario.Brief(r, "account", "balance"))
	scenario.Expect(t, "getStatus", r.Status, proto.StatusOK)
	t.Field("getOutcomes", scenario.Outcomes(r))
	scenario.Expectf(t, "rightCaller", scenario.PayloadFields(r)["account"], "acct-R2", "the get's answer names another account")
	scenario.Expect(t, "debit", rd.Status, proto.StatusUnknown)
	t.Field("debitOutcomes", scenario.Outcomes(rd))
	scenario.Expect(t, "clientConns", c.Stats().ConnsOpened, 2)
	scenario.Expect(t, "lateDropped", c.Stats().LateDropped, 0)
	ctr := t.Counters(s2)
	// The old server died asleep; the new one never saw the debit.
	scenario.Expect(t, "newServerDebitExec", ctr.ExecDebit, 0)
	scenario.Expect(t, "newServerConns", ctr.ConnsScenario, 1)
	scenario.Expect(t, "balance", t.Balance(s2, "acct-R"), bank.DefaultBalance)
}

func unackedWriteUserTimeout(t *scenario.T) {
	const (
		userTimeout = 500 * time.Millisecond
		deadline    = 8 * time.Second
		// The kernel clamps its retransmission timer to what is left of
		// TCP_USER_TIMEOUT, so it gives up close to 500 ms after the
		// write; the bound leaves room for a loaded machine.
		giveUpBound = 2 * time.Second
	)
	h := t.Host()
	s := startServerIn(t, h, scenario.ServerOpts{})
	loss := newConnLoss()
	cfg := client.DefaultConfig()
	cfg.UserTimeout, cfg.OnConnLost = userTimeout, loss.hook
	c := t.Client(s.Addr, cfg)
	openConn(t, c, "acct-U")
	t.Field("userTimeout", scenario.Millis(userTimeout))
	t.SetLink(h, false)
	d := scenario.DebitCall("acct-U", 10, "")
	d.Timeout, d.AttemptTimeout = deadline, deadline
	r := c.Do(t.Ctx, d)

	scenario.Expect(t, "debit", r.Status, proto.StatusUnknown)
	t.Field("debitOutcomes", scenario.Outcomes(r))
	scenario.Within(t, "debitElapsed", r.Elapsed, giveUpBound)
	l, ok := loss.awaitFirst(5 * time.Second)
	scenario.Expectf(t, "connTimedOut", ok && errors.Is(l.err, syscall.ETIMEDOUT), true, "the connection died of %v", l.err)

	// Carrier loss flushed this end's neighbour entry for the host, so
	// the request waited in the kernel's queue for address resolution,
	// not on the socket. When the link comes back the kernel resolves the
	// address and sends it, although the socket is long closed: the
	// server executes it and answers an RST to what follows. The client
	// gave up on the call; the call did not give up on the server.
	// The neighbour queue keeps it for about 3 s of failed address
	// resolution; the link is back well within that.
	t.SetLink(h, true)
	scenario.WaitFor(5*time.Second, func() bool { return t.Counters(s).ExecDebit >= 1 })
	ctr := t.Counters(s)
	scenario.Expectf(t, "executedAfterGivingUp", ctr.ExecDebit, 1, "the request held while the link was silent should have arrived and executed once")
	scenario.Expectf(t, "balance", t.Balance(s, "acct-U"), bank.DefaultBalance-10*ctr.ExecDebit, "the balance does not match the executions")
}

func slowLinkHeadOfLine(t *scenario.T) {
	const (
		// The big request takes about 4 s to cross. The shaper's queue
		// holds about 7 KB, its burst included, so a small call on another
		// connection still waits behind the big one's queued packets,
		// about half a second, but not for the rest of it.
		rate      = 125_000 // bits a second
		burst     = 4096
		queue     = 200 // ms of packets the shaper holds before it drops
		padding   = 60_000
		inFlight  = burst + 2048 // sent toward the host before the small calls start
		callLimit = 20 * time.Second
	)
	h := t.Host()
	s := startServerIn(t, h, scenario.ServerOpts{})
	cfg := client.DefaultConfig()
	cfg.AttemptTimeout, cfg.Deadline = callLimit, callLimit
	// With keepalive on, as a careful client has it: the ping queues
	// behind the big request for longer than Time+Timeout, and only the
	// peer's acknowledgements tell keepalive it is alive. The shaper's
	// small queue drops packets, and a retransmission timeout can leave
	// a second with nothing acknowledged: Timeout is longer than that,
	// and Time+Timeout still well short of the 4 s crossing.
	ka := client.KeepaliveConfig{Time: time.Second, Timeout: 1500 * time.Millisecond}
	cfg.Keepalive = &ka
	shared := t.Client(s.Addr, cfg)
	second := t.Client(s.Addr, cfg)
	openConn(t, shared, "acct-W")
	openConn(t, second, "acct-W")
	if err := h.Shape(nethost.ToHost, rate, burst, queue); err != nil {
		t.Fatalf("shape: %v", err)
	}
	t.Field("link", fmt.Sprintf("tbf rate=%dbit burst=%dB queue=%dms", rate, burst, queue))

	base, err := h.Sent()
	if err != nil {
		t.Fatalf("%v", err)
	}
	big := scenario.GetCall("acct-L")
	big.Payload = fmt.Appendf(big.Payload, " pad=%s", strings.Repeat("x", padding))
	t.Field("bigRequest", fmt.Sprintf("%dB", len(big.Payload)))
	type timed struct {
		r   client.Result
		end time.Time
	}
	do := func(c *client.Client, call client.Call, out chan<- timed) {
		r := c.Do(t.Ctx, call)
		out <- timed{r, time.Now()}
	}
	bigDone, sameDone, otherDone := make(chan timed, 1), make(chan timed, 1), make(chan timed, 1)
	go do(shared, big, bigDone)
	// Start the small calls once the big request is on the wire, past
	// the shaper's burst: the rest of it is still to cross.
	if !scenario.WaitFor(10*time.Second, func() bool { n, err := h.Sent(); return err == nil && n-base >= inFlight }) {
		t.Fatalf("the big request never got onto the link")
	}
	start := time.Now()
	go do(shared, scenario.GetCall("acct-S"), sameDone)
	go do(second, scenario.GetCall("acct-O"), otherDone)
	b, same, other := <-bigDone, <-sameDone, <-otherDone

	for _, x := range []struct {
		key     string
		r       client.Result
		account string
	}{{"big", b.r, "acct-L"}, {"sameConn", same.r, "acct-S"}, {"otherConn", other.r, "acct-O"}} {
		scenario.Expect(t, x.key+"Status", x.r.Status, proto.StatusOK)
		scenario.Expectf(t, x.key+"Account", scenario.PayloadFields(x.r)["account"], x.account, "an answer reached the wrong caller")
	}
	t.Volatile("bigLatency", scenario.Millis(b.r.Elapsed))
	t.Volatile("sameConnLatency", scenario.Millis(same.end.Sub(start)))
	t.Volatile("otherConnLatency", scenario.Millis(other.end.Sub(start)))
	// When the server had all of the big request: it executes a get as
	// soon as its frame is complete. One clock: the server runs on this
	// machine.
	var arrived time.Time
	for _, e := range t.Events(s) {
		if e.Name == serverapi.EventExec && e.Text(serverapi.KeyAccount) == "acct-L" {
			arrived = e.Time
		}
	}
	if arrived.IsZero() {
		t.Fatalf("the server logged no EXEC for the big request")
	}
	t.Volatile("bigCrossed", scenario.Millis(arrived.Sub(start)))
	// TCP's order makes the first hold whenever the second connection
	// exists: recorded, to show the head of the line; the second is the
	// check.
	t.Field("sameConnAfterBigCrossed", same.end.After(arrived))
	scenario.Expectf(t, "otherConnBeforeBigCrossed", other.end.Before(arrived), true, "the small call on its own connection finished %v after the big request had crossed", other.end.Sub(arrived))
	t.Field("keepalive", fmt.Sprintf("time=%v,timeout=%v", ka.Time, ka.Timeout))
	scenario.Expectf(t, "keepaliveTimeouts", shared.Stats().KeepaliveTimeouts+second.Stats().KeepaliveTimeouts, 0, "keepalive took a live peer, busy taking in the big request, for dead")
	scenario.Expect(t, "clientConns", shared.Stats().ConnsOpened+second.Stats().ConnsOpened, 2)
}
