// Package client is the multiplexed RPC client: connections, attempts,
// their classification and the retry rules that keep an unknown outcome
// from executing a write twice.
package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rpcbench/rpcbench/internal/proto"
)

// Call describes one logical operation.
type Call struct {
	Method string
	// Idempotent declares that executing the call twice has the same effect
	// as once, so an attempt with an unknown outcome may be re-sent.
	Idempotent bool
	// Key is an optional idempotency key (at most 64 bytes). The server
	// executes the first request with a key and replays its result to later
	// ones, so a keyed call may be re-sent even when not idempotent.
	Key     string
	Payload []byte
	// Timeout bounds the whole call, every attempt and pause included.
	// Zero means Config.Deadline.
	Timeout time.Duration
	// AttemptTimeout overrides Config.AttemptTimeout when positive.
	AttemptTimeout time.Duration
}

// Span is when an attempt started and ended.
type Span struct{ Start, End time.Time }

// Attempt records one try of a call, for logs and evidence.
type Attempt struct {
	// ID is the request ID this attempt sent; 0 if it never got one.
	ID uint64
	// BudgetMs is the budget sent with the request.
	BudgetMs uint32
	Class    Class
	Outcome  Outcome
	// Status is the status the server answered, valid when Outcome is
	// OutcomeResponse.
	Status proto.Status
	// Err describes what went wrong; empty for a response. It is Cause's
	// text.
	Err string
	// Cause is the error that ended the attempt; nil for a response. Ask
	// it with errors.Is and errors.As, not through Err's text: errors.Is
	// finds ErrClosed, ErrCut, ErrKeepaliveTimeout or a context's error,
	// and errors.As a *ConnLostError when the connection died of a
	// failure (its Partial bytes included) and a *proto.ProtocolError
	// when the peer sent a bad frame.
	Cause error
	// Backoff is how long the client paused after this attempt before the
	// next one; zero for the last attempt.
	Backoff time.Duration
	// Addr is the server address the attempt was sent to, or tried to
	// connect to, as the client lists it; empty when the client was
	// closed before the attempt chose one.
	Addr string
	// Hedge marks an attempt sent as a hedge (Config.Hedge) while an
	// earlier attempt of the same call was still waiting.
	Hedge bool
	// RetryAfter is the server's retry-after hint in an UNAVAILABLE
	// answer (retry_after_ms=N): zero for none, RetryNever for "do not
	// retry" (a negative or malformed N), otherwise the least pause
	// before the next attempt.
	RetryAfter time.Duration
	// showAddr is set by a client with more than one address: String
	// prints Addr only then, so that a single-address client's log reads
	// as it always did.
	showAddr bool
}

func (a Attempt) String() string {
	var b strings.Builder
	b.WriteString(a.Outcome.String())
	if a.Outcome == OutcomeResponse {
		fmt.Fprintf(&b, " status=%v", a.Status)
	}
	if a.Err != "" {
		fmt.Fprintf(&b, " err=%q", a.Err)
	}
	fmt.Fprintf(&b, " id=%d budget=%d class=%v", a.ID, a.BudgetMs, a.Class)
	if a.Backoff > 0 {
		fmt.Fprintf(&b, " backoff=%dms", a.Backoff.Milliseconds())
	}
	switch {
	case a.RetryAfter < 0:
		b.WriteString(" retry_after=never")
	case a.RetryAfter > 0:
		fmt.Fprintf(&b, " retry_after=%v", a.RetryAfter)
	}
	if a.showAddr {
		fmt.Fprintf(&b, " addr=%s", a.Addr)
	}
	if a.Hedge {
		b.WriteString(" hedge")
	}
	return b.String()
}

// Result is what a call returned.
type Result struct {
	Status  proto.Status
	Payload []byte
	// Attempts is len(Log).
	Attempts int
	Log      []Attempt
	// Stop says why no further attempt was made.
	Stop Stop
	// Elapsed is measured on the monotonic clock from the start of Do.
	Elapsed time.Duration
	// Err is the last attempt's error when the call did not end with a
	// server answer; nil otherwise. A call the client refused itself has
	// ErrClientBusy, ErrRateLimited or ErrCircuitOpen.
	Err error
}

// Stats are a Client's counters.
type Stats struct {
	ConnsOpened int64
	// LateDropped counts responses whose attempt was no longer pending.
	LateDropped int64
	// ReadsMidFrame counts reads after which part of a frame was buffered.
	ReadsMidFrame int64
	// ReadsMultiFrame counts reads that completed more than one frame.
	ReadsMultiFrame int64
	// PartialBytes adds up the incomplete-frame bytes held when a
	// connection died; they were discarded, never delivered.
	PartialBytes int64
	// ProtocolErrors counts connections dropped for a bad frame.
	ProtocolErrors int64
	// Failovers counts the times the client moved on from its current
	// server address to the next; always 0 with one address.
	Failovers int64
	// RejectedBusy, RejectedRateLimited and RejectedCircuitOpen count the
	// calls the client refused itself, making no attempt, by reason: the
	// in-flight cap, the method's rate limit, the open breaker. A call
	// the breaker stopped after an attempt is not among them.
	RejectedBusy, RejectedRateLimited, RejectedCircuitOpen int64
	// RetriesThrottled counts the retries the retry budget refused.
	RetriesThrottled int64
	// Hedges counts the hedge attempts sent (Config.Hedge); HedgeWins
	// counts the calls whose FINAL answer came to a hedge.
	Hedges, HedgeWins int64
	// Pushbacks counts the server retry-after hints the client acted on:
	// a retry whose pause the hint set (the hint exceeded the backoff),
	// or a call it stopped with StopPushback.
	Pushbacks int64
	// CancelsSent counts the ctl.cancel requests sent for abandoned
	// attempts (Config.CancelAbandoned). Their answers are dropped
	// without being counted in LateDropped.
	CancelsSent int64
	// ConnsLost counts the connections that died of a failure: a read or
	// write error, the peer closing, a bad frame, keepalive, Cut. Those
	// the client closed (Close, the end of a ConnPerCall attempt) are not
	// counted. While it is 0 the client believes its connections alive.
	ConnsLost int64
	// PingsSent counts the keepalive pings written (Config.Keepalive);
	// their answers are dropped without being counted in LateDropped.
	// KeepaliveTimeouts counts the connections keepalive declared dead,
	// also counted in ConnsLost.
	PingsSent, KeepaliveTimeouts int64
	// Drains counts the drain frames that drained a connection (SPEC.md,
	// "Drain"); DrainedResent counts the DRAINED attempts that were
	// followed by another attempt of their call.
	Drains, DrainedResent int64
	// Resolutions counts the resolutions (NewDNS) that found addresses
	// and set them, the first excepted; ResolveFailures those that
	// failed and ResolveEmpty those that found none, both of which kept
	// the addresses in use.
	Resolutions, ResolveFailures, ResolveEmpty int64
}

type clientStats struct {
	connsOpened     atomic.Int64
	lateDropped     atomic.Int64
	readsMidFrame   atomic.Int64
	readsMultiFrame atomic.Int64
	partialBytes    atomic.Int64
	protocolErrors  atomic.Int64

	rejectedBusy        atomic.Int64
	rejectedRateLimited atomic.Int64
	rejectedCircuitOpen atomic.Int64
	retriesThrottled    atomic.Int64

	hedges    atomic.Int64
	hedgeWins atomic.Int64

	pushbacks atomic.Int64

	cancelsSent atomic.Int64

	connsLost         atomic.Int64
	pingsSent         atomic.Int64
	keepaliveTimeouts atomic.Int64

	drains, drainedResent atomic.Int64
}

// Client makes calls to a server. By default all calls share one TCP
// connection, opened on first use and replaced after it dies.
//
// A Client given several addresses fails over: it dials only its current
// address, and moves on to the next in the list (wrapping around) when a
// dial to the current one fails or a connection to it dies. Slow answers
// and UNAVAILABLE answers do not move it. The retry rules do not change,
// so a retry may land on another server.
//
// A Client is safe for concurrent use.
type Client struct {
	addrs  *ring
	cfg    Config
	nextID atomic.Uint64
	stats  clientStats
	// gov is the opt-in governance; nil when Config asks for none.
	gov *governance
	// bal spreads attempts over the addresses, with Config.Balancer
	// round_robin or p2c or with a resolver; nil fails over through
	// addrs. res re-resolves its addresses; nil for a static list.
	bal *balancer
	res *resolver
	// control is the dialer's socket hook: it sets Config.UserTimeout;
	// nil when there is nothing to set.
	control func(network, address string, rc syscall.RawConn) error

	// dialSem is held (full) while a connection is being dialed, so
	// concurrent callers share one dial and can still give up waiting.
	dialSem chan struct{}

	// mu guards own and serializes changes to cur and closed; cur and
	// closed are read without it.
	mu     sync.Mutex
	cur    atomic.Pointer[conn]
	closed atomic.Bool
	// own holds the connections of ConnPerCall attempts in flight, so that
	// Close can fail them.
	own map[*conn]struct{}
}

// New validates cfg and returns a Client for addr. It does not connect:
// the first call does. It is NewMulti with one address.
func New(addr string, cfg Config) (*Client, error) {
	return NewMulti([]string{addr}, cfg)
}

// NewMulti validates cfg and addrs and returns a Client that fails over
// between addrs, starting with the first. It needs at least one address,
// none empty and no two equal as strings (a host name and its IP address
// are not recognised as one); otherwise its error wraps ErrConfig. It
// does not connect: the first call does.
func NewMulti(addrs []string, cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r, err := newRing(addrs)
	if err != nil {
		return nil, err
	}
	c := &Client{addrs: r, cfg: cfg, gov: newGovernance(&cfg), dialSem: make(chan struct{}, 1), own: make(map[*conn]struct{})}
	if h := cfg.Hedge; h != nil {
		// A copy of the caller's, with MaxHedges resolved.
		c.cfg.Hedge = &HedgeConfig{Delay: h.Delay, MaxHedges: max(h.MaxHedges, 1)}
	}
	if ka := cfg.Keepalive; ka != nil {
		c.cfg.Keepalive = &KeepaliveConfig{Time: ka.Time, Timeout: ka.Timeout}
	}
	if cfg.UserTimeout > 0 {
		c.control = userTimeoutControl(cfg.UserTimeout)
	}
	if cfg.spreads() {
		c.bal = newBalancer(c, cfg.Balancer, addrs)
	}
	return c, nil
}

// Stats returns a snapshot of the client's counters.
func (c *Client) Stats() Stats {
	return Stats{
		ConnsOpened:     c.stats.connsOpened.Load(),
		LateDropped:     c.stats.lateDropped.Load(),
		ReadsMidFrame:   c.stats.readsMidFrame.Load(),
		ReadsMultiFrame: c.stats.readsMultiFrame.Load(),
		PartialBytes:    c.stats.partialBytes.Load(),
		ProtocolErrors:  c.stats.protocolErrors.Load(),
		Failovers:       c.addrs.moves(),

		RejectedBusy:        c.stats.rejectedBusy.Load(),
		RejectedRateLimited: c.stats.rejectedRateLimited.Load(),
		RejectedCircuitOpen: c.stats.rejectedCircuitOpen.Load(),
		RetriesThrottled:    c.stats.retriesThrottled.Load(),

		Hedges:    c.stats.hedges.Load(),
		HedgeWins: c.stats.hedgeWins.Load(),

		Pushbacks: c.stats.pushbacks.Load(),

		CancelsSent: c.stats.cancelsSent.Load(),

		ConnsLost:         c.stats.connsLost.Load(),
		PingsSent:         c.stats.pingsSent.Load(),
		KeepaliveTimeouts: c.stats.keepaliveTimeouts.Load(),

		Drains:          c.stats.drains.Load(),
		DrainedResent:   c.stats.drainedResent.Load(),
		Resolutions:     c.res.count(func(r *resolver) *atomic.Int64 { return &r.resolutions }),
		ResolveFailures: c.res.count(func(r *resolver) *atomic.Int64 { return &r.failures }),
		ResolveEmpty:    c.res.count(func(r *resolver) *atomic.Int64 { return &r.empty }),
	}
}

// Close closes every connection, fails the calls in flight with ErrClosed
// and waits for the connections' goroutines to exit. Calls made after
// Close fail with ErrClosed without dialing. A second Close returns
// ErrClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed.Swap(true) {
		c.mu.Unlock()
		return ErrClosed
	}
	conns := make([]*conn, 0, len(c.own)+1)
	if cur := c.cur.Swap(nil); cur != nil {
		conns = append(conns, cur)
	}
	for cn := range c.own {
		conns = append(conns, cn)
	}
	c.mu.Unlock()
	if c.res != nil {
		c.res.stop()
	}
	if c.bal != nil {
		c.bal.close()
	}
	for _, cn := range conns {
		cn.close()
	}
	return nil
}

// shared returns the shared live connection, dialing one if needed, and
// the address it goes to, or the address it failed to reach; a dial gives
// up at deadline.
func (c *Client) shared(ctx context.Context, deadline time.Time) (*conn, string, error) {
	if cn, err := c.liveConn(); err != nil {
		return nil, "", err
	} else if cn != nil {
		return cn, cn.addr, nil
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	select {
	case c.dialSem <- struct{}{}:
	case <-ctx.Done():
		// It was waiting for another caller's dial, most likely to the
		// current address.
		addr, _ := c.addrs.current()
		return nil, addr, ctx.Err()
	}
	defer func() { <-c.dialSem }()
	if cn, err := c.liveConn(); err != nil {
		return nil, "", err
	} else if cn != nil {
		return cn, cn.addr, nil
	}
	// Every caller that met the old connection's death may get here, one
	// at a time; the first to find it still current moves the client on.
	if old := c.cur.Load(); old != nil && old.lost() {
		c.addrs.moveOn(old.gen)
	}
	cn, addr, err := c.dial(ctx)
	if err != nil {
		return nil, addr, err
	}
	cn, err = c.keep(cn, true)
	return cn, addr, err
}

// keep records a freshly dialed connection, as the shared one or as one
// of the ConnPerCall connections, so that Close finds it; if the client
// was closed meanwhile it closes cn and returns ErrClosed.
func (c *Client) keep(cn *conn, shared bool) (*conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.Load() {
		// Closed here, not in the background, so that when the call
		// that dialed returns nothing of cn is left running.
		cn.close()
		return nil, ErrClosed
	}
	if !shared {
		c.own[cn] = struct{}{}
	} else if old := c.cur.Swap(cn); old != nil {
		if old.drained.Load() {
			// Kept until the server closes it, its answers still to
			// come; among own, so that Close and Cut find it.
			c.own[old] = struct{}{}
			go c.reapDrained(old)
		} else {
			go old.close() // already dead; reap its goroutines
		}
	}
	return cn, nil
}

// reapDrained waits for a drained connection, no longer the shared one,
// to be closed by its server (or by Close), and reaps it.
func (c *Client) reapDrained(cn *conn) {
	<-cn.done
	c.mu.Lock()
	delete(c.own, cn)
	c.mu.Unlock()
	cn.close()
}

// ownConn dials a connection for one ConnPerCall attempt and returns it
// with its address, or the address it failed to reach. The caller must
// pass the connection to disown when the attempt ends.
func (c *Client) ownConn(ctx context.Context, deadline time.Time) (*conn, string, error) {
	if c.closed.Load() {
		return nil, "", ErrClosed
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	cn, addr, err := c.dial(ctx)
	if err != nil {
		return nil, addr, err
	}
	cn, err = c.keep(cn, false)
	return cn, addr, err
}

// disown closes a ConnPerCall connection. If it had died of a failure
// first, the client moves on from its address; the other attempts that
// were on the same server, each on its own connection, move it no
// further.
func (c *Client) disown(cn *conn) {
	c.mu.Lock()
	delete(c.own, cn)
	c.mu.Unlock()
	cn.close()
	if cn.lost() {
		c.addrs.moveOn(cn.gen)
	}
}

func (c *Client) liveConn() (*conn, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if cn := c.cur.Load(); cn != nil && !cn.dead.Load() && !cn.drained.Load() {
		return cn, nil
	}
	return nil, nil
}

// dial connects to the current address and returns the connection with
// that address, or the address it failed to reach. A failed dial moves
// the client on, unless the caller canceled it: a refusal, an
// unreachable host and a server too slow to accept within the attempt's
// budget all count against the address.
func (c *Client) dial(ctx context.Context) (*conn, string, error) {
	addr, gen := c.addrs.current()
	d := net.Dialer{Control: c.control}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		if !errors.Is(ctx.Err(), context.Canceled) {
			c.addrs.moveOn(gen)
		}
		return nil, addr, err
	}
	c.stats.connsOpened.Add(1)
	cn := newConn(nc, &c.stats, &c.cfg, addr, gen, c.drained)
	return cn, addr, nil
}

// drained moves the client on from a drained connection's address: its
// DRAINED attempts are re-sent to the next one.
func (c *Client) drained(cn *conn) { c.addrs.moveOn(cn.gen) }

// Do runs call under ctx and the call's total timeout, retrying as the
// client's policy allows. It always returns a Result; it returns no later
// than the total timeout (plus scheduling delay).
//
// With governance configured, a call first meets its method's rate limit
// and then the in-flight cap; refused by either, it returns at once,
// having made no attempt. The breaker is asked before each attempt and
// the retry budget before each retry. A call's in-flight permit is given
// back when Do returns, however it ends, a panic in Config.Trace
// included.
//
// With Config.Hedge, an Idempotent call's attempt that has not answered
// after Hedge.Delay is joined by a hedge (see HedgeConfig); the call
// holds one permit however many attempts it has in flight.
func (c *Client) Do(ctx context.Context, call Call) Result {
	s := c.newCall(ctx, call)
	probe := proto.Frame{Type: proto.TypeRequest, ID: 1, Method: call.Method, Key: call.Key, Payload: call.Payload}
	if err := probe.Check(); err != nil {
		return Result{Status: proto.StatusInvalidArgument, Stop: StopFinal, Err: err, Elapsed: time.Since(s.start)}
	}
	if g := c.gov; g != nil {
		if stop := g.admit(call.Method); stop != 0 {
			return c.refuse(stop, s.start)
		}
		if g.permits != nil {
			// Deferred, so that every way out of Do gives it back: a
			// limiter that releases on the success path only leaks the
			// permit of every call that times out.
			defer g.permits.release()
		}
	}
	for now := s.start; ; now = time.Now() {
		tk, stop := s.admit(now)
		if stop == StopCircuitOpen && len(s.res.Log) == 0 {
			return c.refuse(stop, s.start)
		}
		if stop != 0 {
			return s.finish(stop, time.Now())
		}
		a, r := s.try(tk, now)
		s.last = r
		// One clock read serves the decision and, if it ends the call,
		// the call's Elapsed.
		end := time.Now()
		pause, stop := s.decide(situation{now: end, last: a, err: r.err})
		if stop != 0 {
			return s.finish(stop, end)
		}
		if a.Outcome == OutcomeDrained {
			c.stats.drainedResent.Add(1)
		}
		s.res.Log[len(s.res.Log)-1].Backoff = pause
		// A pause the caller's context cuts short is seen by admit.
		sleep(ctx, pause)
	}
}

// giveUpStatus is the status of a call that ended without a final answer.
// A non-idempotent call any of whose attempts may have executed is UNKNOWN,
// whatever happened after; a call whose deadline ran out is
// DEADLINE_EXCEEDED; otherwise the last attempt decides.
func giveUpStatus(call *Call, log []Attempt, stop Stop) proto.Status {
	if len(log) == 0 {
		return proto.StatusDeadlineExceeded
	}
	if !call.Idempotent {
		for _, a := range log {
			if a.Class == ClassUnknown {
				return proto.StatusUnknown
			}
		}
	}
	if stop == StopDeadline {
		return proto.StatusDeadlineExceeded
	}
	switch last := log[len(log)-1]; last.Class {
	case ClassNotExecuted:
		if last.Outcome == OutcomeDrained {
			// No answer came: Status is its zero value, OK.
			return proto.StatusUnavailable
		}
		return last.Status
	case ClassUnknown:
		if last.Outcome == OutcomeTimeout {
			return proto.StatusDeadlineExceeded
		}
	}
	return proto.StatusUnavailable
}

// backoff returns the jittered pause after attempt n (1-based).
func (c *Client) backoff(n int) time.Duration {
	d := c.cfg.BackoffInitial
	for i := 1; i < n && d < c.cfg.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, c.cfg.BackoffMax)
	if j := c.cfg.Jitter; j > 0 {
		d = time.Duration(float64(d) * (1 + j*(2*rand.Float64()-1)))
	}
	return d
}

// sleep pauses for d unless ctx ends first.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// attempt makes one try with the given budget. The returned reply holds the
// server's frame for a response, or the error that ended the attempt.
//
// With a balancer, previous is the address of the call's attempt before,
// which this one avoids; "" for none.
func (c *Client) attempt(ctx context.Context, call *Call, now time.Time, budget time.Duration, previous string) (Attempt, reply) {
	a := Attempt{BudgetMs: budgetMs(budget), showAddr: len(c.addrs.addrs) > 1 || c.bal != nil}
	deadline := now.Add(budget)
	live, _ := c.liveConn()

	var cn *conn
	var err error
	if c.cfg.ConnPerCall {
		cn, a.Addr, err = c.ownConn(ctx, deadline)
		if err == nil {
			defer c.disown(cn)
		}
	} else if c.bal != nil {
		var ep *endpoint
		var dialed bool
		ep, cn, dialed, err = c.bal.acquire(ctx, deadline, previous)
		if ep != nil {
			a.Addr = ep.addr
			defer c.bal.release(ep)
		}
		if !dialed {
			live = cn
		}
	} else {
		cn, a.Addr, err = c.shared(ctx, deadline)
	}
	if err != nil {
		a.Class, a.Outcome, a.Err, a.Cause = ClassNotSent, OutcomeConnectFailed, err.Error(), err
		return a, reply{err: err}
	}

	// A dial took part of the budget: the server is told what is left.
	if cn != live {
		budget = time.Until(deadline)
		a.BudgetMs = budgetMs(budget)
	}
	f := proto.Frame{Type: proto.TypeRequest, BudgetMs: a.BudgetMs, Method: call.Method, Key: call.Key, Payload: call.Payload}
	w := waiters.Get().(*waiter)
	// Every path below leaves w.ch empty with no sender holding it, so w
	// can be reused.
	defer waiters.Put(w)
	// The ID is taken under the lock that queues the request, so that a
	// connection's requests go out in the order of their IDs.
	err = cn.submit(&f, w, monoOf(deadline), &c.nextID)
	a.ID = f.ID
	if err != nil {
		a.Class, a.Outcome, a.Err, a.Cause = ClassNotSent, OutcomeNotSent, err.Error(), err
		return a, reply{err: err}
	}

	var r reply
	if done := ctx.Done(); done == nil {
		// Nothing but the connection can end the wait: its reader with
		// the answer, its death, or its deadline timer.
		r = <-w.ch
	} else {
		select {
		case r = <-w.ch:
		case <-done:
			cause := ctx.Err()
			if c.cfg.Hedge != nil && errors.Is(context.Cause(ctx), errAbandoned) {
				cause = errAbandoned
			}
			if r, ok := c.abandon(cn, a.ID, &a, cause); !ok {
				c.cancelRemote(cn, a.ID)
				return a, r
			}
			r = <-w.ch
		}
	}
	if r.timedOut {
		// The connection's timer took the attempt out of pending: any
		// answer from now on is late.
		a.Class, a.Outcome, a.Err, a.Cause = ClassUnknown, OutcomeTimeout, context.DeadlineExceeded.Error(), context.DeadlineExceeded
		c.cancelRemote(cn, a.ID)
		return a, reply{err: context.DeadlineExceeded}
	}
	switch {
	case r.drained:
		a.Class, a.Outcome, a.Err, a.Cause = ClassNotExecuted, OutcomeDrained, r.err.Error(), r.err
	case r.err != nil && r.notSent:
		a.Class, a.Outcome, a.Err, a.Cause = ClassNotSent, OutcomeNotSent, r.err.Error(), r.err
	case r.err != nil:
		a.Class, a.Outcome, a.Err, a.Cause = ClassUnknown, OutcomeConnLost, r.err.Error(), r.err
		// Declared here, not above: errors.As makes pe escape, and the
		// answered path must not pay an allocation for it.
		var pe *proto.ProtocolError
		if errors.As(r.err, &pe) {
			a.Outcome = OutcomeProtocolError
		}
	default:
		a.Outcome, a.Status, a.Class = OutcomeResponse, r.f.Status, classify(r.f.Status)
		if r.f.Status == proto.StatusUnavailable {
			a.RetryAfter = pushback(r.f.Payload)
		}
	}
	return a, r
}

// abandon gives up waiting for id because of cause. It reports false, with
// the attempt classified, when the pending entry was still there; true when
// the reader took the entry first, so its reply is on its way and must be
// used.
func (c *Client) abandon(cn *conn, id uint64, a *Attempt, cause error) (reply, bool) {
	if cn.remove(id) {
		a.Class, a.Outcome, a.Err, a.Cause = ClassUnknown, OutcomeTimeout, cause.Error(), cause
		switch {
		case errors.Is(cause, errAbandoned):
			a.Outcome = OutcomeAbandoned
		case errors.Is(cause, context.Canceled):
			a.Outcome = OutcomeCanceled
		}
		return reply{err: cause}, false
	}
	return reply{}, true
}

// cancelRemote asks the server, with Config.CancelAbandoned, to drop the
// abandoned attempt id if it is still queued there. The connection of a
// ConnPerCall attempt closes as the attempt ends, which would discard the
// cancel unwritten, so none is sent on it.
func (c *Client) cancelRemote(cn *conn, id uint64) {
	if !c.cfg.CancelAbandoned || c.cfg.ConnPerCall {
		return
	}
	if cn.cancel(id) {
		c.stats.cancelsSent.Add(1)
	}
}

// budgetMs converts a budget to whole milliseconds for the wire, rounding
// down but never to zero.
func budgetMs(d time.Duration) uint32 {
	ms := d.Milliseconds()
	if ms < 1 {
		return 1
	}
	if ms > int64(^uint32(0)) {
		return ^uint32(0)
	}
	return uint32(ms)
}

// ErrCut is the cause of the attempts whose connection Cut killed.
var ErrCut = errors.New("client: connection cut")

// Cut kills the client's open connections as a network failure would,
// without closing the client: attempts waiting on them end as after a lost
// connection (their outcome unknown if their request was written), and the
// next attempt dials again, moving on to the next address as after any
// lost connection. It is for fault injection.
func (c *Client) Cut() {
	c.mu.Lock()
	conns := make([]*conn, 0, len(c.own)+1)
	if cur := c.cur.Load(); cur != nil {
		conns = append(conns, cur)
	}
	for cn := range c.own {
		conns = append(conns, cn)
	}
	c.mu.Unlock()
	for _, cn := range conns {
		cn.fail(ErrCut)
	}
	if c.bal != nil {
		c.bal.cut()
	}
}
