package cases

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
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// host makes a test host that is removed when the scenario ends.
func (t *T) host() *nethost.Host {
	h, err := nethost.New()
	if err != nil {
		t.Fatalf("test host: %v", err)
	}
	t.cleanup(func() {
		if err := h.Close(); err != nil {
			t.failures = append(t.failures, "removing test host: "+err.Error())
		}
	})
	return h
}

// startServerIn starts an rpcserver inside h, bound to h's address (on a
// port the kernel picks unless o.Addr says which).
func (t *T) startServerIn(h *nethost.Host, o serverOpts) *server {
	if o.Addr == "" {
		o.Addr = h.Addr.String() + ":0"
	}
	o.Exec = h.Exec
	return t.startServer(o)
}

// setLink sets h's link up or down, failing the scenario if it cannot.
func (t *T) setLink(h *nethost.Host, up bool) {
	if err := h.SetLink(up); err != nil {
		t.Fatalf("link: %v", err)
	}
}

// openConn makes a get of account on c, so that c's connection is open
// before the scenario changes the link; anything but OK fails it.
func (t *T) openConn(c *client.Client, account string) {
	if r := c.Do(t.ctx, getCall(account)); r.Status != proto.StatusOK {
		t.Fatalf("opening get: %v %v", r.Status, r.Err)
	}
}

// hold lets d pass, a span the scenario measures or keeps a fault for,
// not a wait for an event; it stops the scenario if ctx ends first.
func (t *T) hold(d time.Duration) {
	if d <= 0 {
		return
	}
	select {
	case <-time.After(d):
	case <-t.ctx.Done():
		t.Fatalf("interrupted")
	}
}

// killServer SIGKILLs s and waits until it is gone.
func (t *T) killServer(s *server) {
	if err := s.Kill(); err != nil {
		t.Fatalf("%v", err)
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
	c := debitCall(account, 10, key)
	c.Payload = fmt.Appendf(c.Payload, " sleep=%d", d.Milliseconds())
	return c
}

// awaitReceived waits until s has received n debits, asking over a
// control connection (the link must be up).
func (t *T) awaitReceived(s *server, n int64) {
	if !waitFor(10*time.Second, func() bool { return t.counters(s).RequestsDebit >= n }) {
		t.Fatalf("the server never received debit %d", n)
	}
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
func halfOpenPeer(t *T, h *nethost.Host, s *server, ka *client.KeepaliveConfig) (*client.Client, *connLoss, time.Time, time.Time) {
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
	c := t.client(s.Addr, cfg)
	t.openConn(c, "acct-H")
	lastRead := time.Now()
	d := sleepDebit("acct-H", debitSleep, "")
	d.Timeout, d.AttemptTimeout = debitDeadline, debitDeadline
	done := make(chan client.Result, 1)
	go func() { done <- c.Do(t.ctx, d) }()
	t.awaitReceived(s, 1)
	t.setLink(h, false)
	down := time.Now()
	rd := <-done

	expect(t, "debit", rd.Status, proto.StatusUnknown)
	t.Field("debitOutcomes", outcomes(rd))
	within(t, "debitElapsed", rd.Elapsed, debitDeadline+slack)
	return c, loss, lastRead, down
}

func halfOpenPeerDetected(t *T) {
	h := t.host()
	s := t.startServerIn(h, serverOpts{})
	ka := keepaliveNet
	c, loss, lastRead, down := halfOpenPeer(t, h, s, &ka)
	t.Field("keepalive", fmt.Sprintf("time=%v,timeout=%v", ka.Time, ka.Timeout))

	// The debit ended at its deadline, before keepalive could tell: the
	// idle connection is declared dead at most Time+Timeout after its
	// last read.
	l, ok := loss.awaitFirst(ka.Time + ka.Timeout + 5*time.Second)
	if !expectf(t, "declaredDead", ok, true, "no connection was declared dead") {
		t.Fatalf("the client never noticed the silent host")
	}
	expectf(t, "deadBecause", errors.Is(l.err, client.ErrKeepaliveTimeout), true, "the connection died of %v", l.err)
	// Time+Timeout after the last read, which came just before the link
	// went down.
	within(t, "sinceLastRead", l.at.Sub(lastRead), ka.Time+ka.Timeout+slack)
	t.Volatile("detectedAfterDown", ms(l.at.Sub(down)))
	st := c.Stats()
	expect(t, "keepaliveTimeouts", st.KeepaliveTimeouts, 1)
	atLeast(t, "pingsSent", st.PingsSent, 1, "a connection declared dead without a ping")

	// Back up: the next call dials a new connection and is served.
	t.setLink(h, true)
	r := c.Do(t.ctx, getCall("acct-H"))
	t.Field("after", brief(r, "account", "balance"))
	expect(t, "afterStatus", r.Status, proto.StatusOK)
	expect(t, "clientConns", c.Stats().ConnsOpened, 2)
	// The debit did execute: UNKNOWN was the truth, which is why it was
	// not re-sent.
	ctr := t.counters(s)
	expectf(t, "serverDebitExec", ctr.ExecDebit, 1, "the debit in flight should have executed, unanswered")
	expect(t, "balance", t.balance(s, "acct-H"), bank.DefaultBalance-10)
}

func negativeControlNoKeepalive(t *T) {
	t.Field("expectStillBelieved", true)
	h := t.host()
	s := t.startServerIn(h, serverOpts{})
	c, loss, _, down := halfOpenPeer(t, h, s, nil)
	// As long as half_open_peer_detected gives keepalive, and more: a
	// timer here is the measurement, not a wait for an event.
	wait := keepaliveNet.Time + keepaliveNet.Timeout + slack
	t.hold(wait - time.Since(down))
	t.Field("waitedAfterDown", ms(wait))
	expectf(t, "connsLost", c.Stats().ConnsLost, 0, "the client noticed the silent host without keepalive")
	expect(t, "lossesSeen", loss.count(), 0)
	t.setLink(h, true)
}

func partitionThenHealKeyedDebit(t *T) {
	// Unpartitioned, the first attempt would be answered after the
	// debit's 1.5 s sleep, within its 2.5 s; the link goes down before
	// that, and stays down until 2 s after the debit executed, past the
	// first attempt's end.
	const (
		debitSleep = 1500 * time.Millisecond
		partition  = 2 * time.Second
		key        = "k-partition"
	)
	h := t.host()
	s := t.startServerIn(h, serverOpts{})
	cfg := client.DefaultConfig()
	cfg.AttemptTimeout, cfg.Deadline, cfg.MaxAttempts = 2500*time.Millisecond, 20*time.Second, 12
	c := t.client(s.Addr, cfg)
	d := sleepDebit("acct-P", debitSleep, key)
	done := make(chan client.Result, 1)
	go func() { done <- c.Do(t.ctx, d) }()
	t.awaitReceived(s, 1)
	t.setLink(h, false)
	// The server executes the debit inside the partition; its answer goes
	// into the silent link.
	if !waitFor(10*time.Second, func() bool { return t.execLogged(s, bank.MethodDebit) >= 1 }) {
		t.Fatalf("the server never executed the debit")
	}
	t.hold(partition)
	t.Field("partition", ms(partition))
	t.setLink(h, true)
	r := <-done

	fs := fields(r)
	t.Field("status", brief(r, "balance", "replayed", "exec"))
	expect(t, "callStatus", r.Status, proto.StatusOK)
	expectf(t, "replayed", fs["replayed"], "true", "the answer should be the stored one")
	atLeast(t, "attempts", r.Attempts, 2, "the first attempt's answer was lost, so there must be a retry")
	expect(t, "firstOutcome", r.Log[0].Outcome, client.OutcomeTimeout)
	t.Volatile("outcomes", outcomes(r))
	atLeast(t, "lateDropped", c.Stats().LateDropped, 1, "the first attempt's answer arrives after it timed out")
	ctr := t.counters(s)
	expect(t, "serverDebitExec", ctr.ExecDebit, 1)
	atLeast(t, "dedupHits", ctr.DedupHits, 1, "the retry must be answered from the stored record")
	expect(t, "balance", t.balance(s, "acct-P"), bank.DefaultBalance-10)
}

// execLogged counts the EXEC events s has logged for method.
func (t *T) execLogged(s *server, method string) int {
	return countEvents(t.events(s), func(e serverapi.Event) bool {
		return e.Name == serverapi.EventExec && e.Text(serverapi.KeyMethod) == method
	})
}

func serverHostRestart(t *T) {
	const debitSleep = 2 * time.Second
	h := t.host()
	s := t.startServerIn(h, serverOpts{})
	loss := newConnLoss()
	cfg := client.DefaultConfig()
	// The get's first attempt must outlast the restarted host's address
	// resolution, which can take seconds on a loaded machine, so that the
	// RST it meets, not its own timeout, ends it. With 1 s, CI once saw
	// TIMEOUT,CONN_LOST_AFTER_SEND,RESPONSE/OK.
	cfg.AttemptTimeout, cfg.Deadline = 4*time.Second, 10*time.Second
	cfg.OnConnLost = loss.hook
	c := t.client(s.Addr, cfg)
	t.openConn(c, "acct-R")
	// A keyless debit the old server holds when its host goes down.
	d := sleepDebit("acct-R", debitSleep, "")
	d.Timeout, d.AttemptTimeout = 8*time.Second, 8*time.Second
	done := make(chan client.Result, 1)
	go func() { done <- c.Do(t.ctx, d) }()
	t.awaitReceived(s, 1)

	t.setLink(h, false)
	t.killServer(s)
	if err := h.Restart(false); err != nil {
		t.Fatalf("restart host: %v", err)
	}
	s2 := t.startServerIn(h, serverOpts{Addr: s.Addr})
	t.setLink(h, true)

	// The old connection is still open at this end; the get's request
	// meets a stack that never heard of it.
	r := c.Do(t.ctx, getCall("acct-R2"))
	rd := <-done
	l, ok := loss.awaitFirst(5 * time.Second)
	expectf(t, "oldConnReset", ok && errors.Is(l.err, syscall.ECONNRESET), true, "the old connection died of %v", l.err)
	t.Field("get", brief(r, "account", "balance"))
	expect(t, "getStatus", r.Status, proto.StatusOK)
	t.Field("getOutcomes", outcomes(r))
	expectf(t, "rightCaller", fields(r)["account"], "acct-R2", "the get's answer names another account")
	expect(t, "debit", rd.Status, proto.StatusUnknown)
	t.Field("debitOutcomes", outcomes(rd))
	expect(t, "clientConns", c.Stats().ConnsOpened, 2)
	expect(t, "lateDropped", c.Stats().LateDropped, 0)
	ctr := t.counters(s2)
	// The old server died asleep; the new one never saw the debit.
	expect(t, "newServerDebitExec", ctr.ExecDebit, 0)
	expect(t, "newServerConns", ctr.ConnsScenario, 1)
	expect(t, "balance", t.balance(s2, "acct-R"), bank.DefaultBalance)
}

func unackedWriteUserTimeout(t *T) {
	const (
		userTimeout = 500 * time.Millisecond
		deadline    = 8 * time.Second
		// The kernel clamps its retransmission timer to what is left of
		// TCP_USER_TIMEOUT, so it gives up close to 500 ms after the
		// write; the bound leaves room for a loaded machine.
		giveUpBound = 2 * time.Second
	)
	h := t.host()
	s := t.startServerIn(h, serverOpts{})
	loss := newConnLoss()
	cfg := client.DefaultConfig()
	cfg.UserTimeout, cfg.OnConnLost = userTimeout, loss.hook
	c := t.client(s.Addr, cfg)
	t.openConn(c, "acct-U")
	t.Field("userTimeout", ms(userTimeout))
	t.setLink(h, false)
	d := debitCall("acct-U", 10, "")
	d.Timeout, d.AttemptTimeout = deadline, deadline
	r := c.Do(t.ctx, d)

	expect(t, "debit", r.Status, proto.StatusUnknown)
	t.Field("debitOutcomes", outcomes(r))
	within(t, "debitElapsed", r.Elapsed, giveUpBound)
	l, ok := loss.awaitFirst(5 * time.Second)
	expectf(t, "connTimedOut", ok && errors.Is(l.err, syscall.ETIMEDOUT), true, "the connection died of %v", l.err)

	// Carrier loss flushed this end's neighbour entry for the host, so
	// the request waited in the kernel's queue for address resolution,
	// not on the socket. When the link comes back the kernel resolves the
	// address and sends it, although the socket is long closed: the
	// server executes it and answers an RST to what follows. The client
	// gave up on the call; the call did not give up on the server.
	// The neighbour queue keeps it for about 3 s of failed address
	// resolution; the link is back well within that.
	t.setLink(h, true)
	waitFor(5*time.Second, func() bool { return t.counters(s).ExecDebit >= 1 })
	ctr := t.counters(s)
	expectf(t, "executedAfterGivingUp", ctr.ExecDebit, 1, "the request held while the link was silent should have arrived and executed once")
	expectf(t, "balance", t.balance(s, "acct-U"), bank.DefaultBalance-10*ctr.ExecDebit, "the balance does not match the executions")
}

func slowLinkHeadOfLine(t *T) {
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
	h := t.host()
	s := t.startServerIn(h, serverOpts{})
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
	shared := t.client(s.Addr, cfg)
	second := t.client(s.Addr, cfg)
	t.openConn(shared, "acct-W")
	t.openConn(second, "acct-W")
	if err := h.Shape(nethost.ToHost, rate, burst, queue); err != nil {
		t.Fatalf("shape: %v", err)
	}
	t.Field("link", fmt.Sprintf("tbf rate=%dbit burst=%dB queue=%dms", rate, burst, queue))

	base, err := h.Sent()
	if err != nil {
		t.Fatalf("%v", err)
	}
	big := getCall("acct-L")
	big.Payload = fmt.Appendf(big.Payload, " pad=%s", strings.Repeat("x", padding))
	t.Field("bigRequest", fmt.Sprintf("%dB", len(big.Payload)))
	type timed struct {
		r   client.Result
		end time.Time
	}
	do := func(c *client.Client, call client.Call, out chan<- timed) {
		r := c.Do(t.ctx, call)
		out <- timed{r, time.Now()}
	}
	bigDone, sameDone, otherDone := make(chan timed, 1), make(chan timed, 1), make(chan timed, 1)
	go do(shared, big, bigDone)
	// Start the small calls once the big request is on the wire, past
	// the shaper's burst: the rest of it is still to cross.
	if !waitFor(10*time.Second, func() bool { n, err := h.Sent(); return err == nil && n-base >= inFlight }) {
		t.Fatalf("the big request never got onto the link")
	}
	start := time.Now()
	go do(shared, getCall("acct-S"), sameDone)
	go do(second, getCall("acct-O"), otherDone)
	b, same, other := <-bigDone, <-sameDone, <-otherDone

	for _, x := range []struct {
		key     string
		r       client.Result
		account string
	}{{"big", b.r, "acct-L"}, {"sameConn", same.r, "acct-S"}, {"otherConn", other.r, "acct-O"}} {
		expect(t, x.key+"Status", x.r.Status, proto.StatusOK)
		expectf(t, x.key+"Account", fields(x.r)["account"], x.account, "an answer reached the wrong caller")
	}
	t.Volatile("bigLatency", ms(b.r.Elapsed))
	t.Volatile("sameConnLatency", ms(same.end.Sub(start)))
	t.Volatile("otherConnLatency", ms(other.end.Sub(start)))
	// When the server had all of the big request: it executes a get as
	// soon as its frame is complete. One clock: the server runs on this
	// machine.
	var arrived time.Time
	for _, e := range t.events(s) {
		if e.Name == serverapi.EventExec && e.Text(serverapi.KeyAccount) == "acct-L" {
			arrived = e.Time
		}
	}
	if arrived.IsZero() {
		t.Fatalf("the server logged no EXEC for the big request")
	}
	t.Volatile("bigCrossed", ms(arrived.Sub(start)))
	// TCP's order makes the first hold whenever the second connection
	// exists: recorded, to show the head of the line; the second is the
	// check.
	t.Field("sameConnAfterBigCrossed", same.end.After(arrived))
	expectf(t, "otherConnBeforeBigCrossed", other.end.Before(arrived), true, "the small call on its own connection finished %v after the big request had crossed", other.end.Sub(arrived))
	t.Field("keepalive", fmt.Sprintf("time=%v,timeout=%v", ka.Time, ka.Timeout))
	expectf(t, "keepaliveTimeouts", shared.Stats().KeepaliveTimeouts+second.Stats().KeepaliveTimeouts, 0, "keepalive took a live peer, busy taking in the big request, for dead")
	expect(t, "clientConns", shared.Stats().ConnsOpened+second.Stats().ConnsOpened, 2)
}
