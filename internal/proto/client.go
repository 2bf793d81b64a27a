package proto

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"
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

// Outcome tags used in Attempt.Outcome.
const (
	OutcomeConnectFailed = "CONNECT_FAILED"
	OutcomeNotSent       = "CONN_DEAD_BEFORE_SEND"
	OutcomeResponse      = "RESPONSE"
	OutcomeTimeout       = "TIMEOUT"
	OutcomeCanceled      = "CANCELED"
	OutcomeWriteFailed   = "WRITE_FAILED"
	OutcomeConnLost      = "CONN_LOST_AFTER_SEND"
	OutcomeProtocolError = "PROTOCOL_ERROR_AFTER_SEND"
)

// Attempt records one try of a call, for logs and evidence.
type Attempt struct {
	// ID is the request ID this attempt sent; 0 if it never got one.
	ID uint64
	// BudgetMs is the budget sent with the request.
	BudgetMs uint32
	Class    Class
	// Outcome is a short tag such as TIMEOUT or CONN_LOST_AFTER_SEND.
	Outcome string
	// Status is the status the server answered, valid when Outcome is
	// RESPONSE.
	Status Status
	// Err describes what went wrong; empty for a response.
	Err string
	// Backoff is how long the client paused after this attempt before the
	// next one; zero for the last attempt.
	Backoff time.Duration
}

func (a Attempt) String() string {
	var b strings.Builder
	b.WriteString(a.Outcome)
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
	return b.String()
}

// Stop tags used in Result.Stop: why the client made no further attempt.
const (
	StopFinal          = "final"
	StopNotRetryable   = "outcome_unknown_not_retryable"
	StopMaxAttempts    = "max_attempts"
	StopBackoffCrosses = "backoff_would_cross_deadline"
	StopDeadline       = "deadline"
	StopCanceled       = "canceled"
	StopClosed         = "client_closed"
)

// Result is what a call returned.
type Result struct {
	Status  Status
	Payload []byte
	// Attempts is len(Log).
	Attempts int
	Log      []Attempt
	// Stop says why no further attempt was made.
	Stop string
	// Elapsed is measured on the monotonic clock from the start of Do.
	Elapsed time.Duration
	// Err is the last attempt's error when the call did not end with a
	// server answer; nil otherwise.
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
}

type clientStats struct {
	connsOpened     atomic.Int64
	lateDropped     atomic.Int64
	readsMidFrame   atomic.Int64
	readsMultiFrame atomic.Int64
	partialBytes    atomic.Int64
	protocolErrors  atomic.Int64
}

// Client makes calls to one server address. By default all calls share
// one TCP connection, opened on first use and replaced after it dies.
// A Client is safe for concurrent use.
type Client struct {
	addr   string
	cfg    Config
	nextID atomic.Uint64
	stats  clientStats

	// dialSem is held (full) while a connection is being dialed, so
	// concurrent callers share one dial and can still give up waiting.
	dialSem chan struct{}

	// mu serializes changes to cur and closed; reads need no lock.
	mu     sync.Mutex
	cur    atomic.Pointer[clientConn]
	closed atomic.Bool
}

// NewClient validates cfg and returns a Client for addr. It does not
// connect: the first call does.
func NewClient(addr string, cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Client{addr: addr, cfg: cfg, dialSem: make(chan struct{}, 1)}, nil
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
	}
}

// Close closes the connection and fails calls in flight with ErrClosed.
// It waits for the reader goroutine to exit.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed.Store(true)
	cur := c.cur.Swap(nil)
	c.mu.Unlock()
	if cur != nil {
		cur.close()
	}
	return nil
}

// conn returns the shared live connection, dialing one if needed; a dial
// gives up at deadline.
func (c *Client) conn(ctx context.Context, deadline time.Time) (*clientConn, error) {
	if cn, err := c.liveConn(); cn != nil || err != nil {
		return cn, err
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	select {
	case c.dialSem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-c.dialSem }()
	if cn, err := c.liveConn(); cn != nil || err != nil {
		return cn, err
	}
	cn, err := dialConn(ctx, c.addr, &c.stats, c.cfg.Deadline)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.Load() {
		go cn.close()
		return nil, ErrClosed
	}
	if old := c.cur.Swap(cn); old != nil {
		go old.close() // already dead; reap its goroutines
	}
	return cn, nil
}

func (c *Client) liveConn() (*clientConn, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if cn := c.cur.Load(); cn != nil && !cn.dead.Load() {
		return cn, nil
	}
	return nil, nil
}

// Do runs call under ctx and the call's total timeout, retrying as the
// client's policy allows. It always returns a Result; it returns no later
// than the total timeout (plus scheduling delay).
func (c *Client) Do(ctx context.Context, call Call) Result {
	start := time.Now()
	total := call.Timeout
	if total <= 0 {
		total = c.cfg.Deadline
	}
	attemptTimeout := call.AttemptTimeout
	if attemptTimeout <= 0 {
		attemptTimeout = c.cfg.AttemptTimeout
	}
	deadline := start.Add(total)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}

	var res Result
	probe := Frame{Type: TypeRequest, ID: 1, Method: call.Method, Key: call.Key, Payload: call.Payload}
	if err := probe.check(); err != nil {
		res.Status, res.Stop, res.Err = StatusInvalidArgument, StopFinal, err
		res.Elapsed = time.Since(start)
		return res
	}

	var last reply
	for now := start; ; now = time.Now() {
		if stop := stopFor(ctx, now, deadline); stop != "" {
			res.Stop = stop
			break
		}
		a, r := c.attempt(ctx, &call, now, min(attemptTimeout, deadline.Sub(now)))
		res.Log = append(res.Log, a)
		last = r
		if a.Class == ClassFinal {
			res.Status, res.Payload, res.Stop = r.f.Status, r.f.Payload, StopFinal
			break
		}
		if stop := stopFor(ctx, time.Now(), deadline); stop != "" {
			res.Stop = stop
			break
		}
		if errors.Is(r.err, ErrClosed) {
			res.Stop = StopClosed
			break
		}
		if !c.mayRetry(&call, a.Class) {
			res.Stop = StopNotRetryable
			break
		}
		if len(res.Log) >= c.cfg.MaxAttempts {
			res.Stop = StopMaxAttempts
			break
		}
		pause := c.backoff(len(res.Log))
		if time.Until(deadline) <= pause {
			res.Stop = StopBackoffCrosses
			break
		}
		res.Log[len(res.Log)-1].Backoff = pause
		if !sleep(ctx, pause) {
			res.Stop = stopFor(ctx, time.Now(), deadline)
			break
		}
	}
	res.Attempts = len(res.Log)
	if res.Stop != StopFinal {
		res.Status = giveUpStatus(&call, res.Log, res.Stop)
		res.Err = last.err
		if res.Err == nil && len(res.Log) == 0 {
			res.Err = ctx.Err()
			if res.Err == nil {
				res.Err = context.DeadlineExceeded
			}
		}
	}
	res.Elapsed = time.Since(start)
	return res
}

// stopFor says why no further attempt may start: the caller's context
// ended or the deadline passed. It returns "" while attempts may go on.
func stopFor(ctx context.Context, now, deadline time.Time) string {
	switch err := ctx.Err(); {
	case errors.Is(err, context.Canceled):
		return StopCanceled
	case err != nil, !now.Before(deadline):
		return StopDeadline
	}
	return ""
}

func (c *Client) mayRetry(call *Call, class Class) bool {
	switch class {
	case ClassNotSent, ClassNotExecuted:
		return true
	case ClassUnknown:
		return c.cfg.Retry == RetryNaive || call.Idempotent || call.Key != ""
	}
	return false
}

// giveUpStatus is the status of a call that ended without a final answer.
// A non-idempotent call any of whose attempts may have executed is UNKNOWN,
// whatever happened after; a call whose deadline ran out is
// DEADLINE_EXCEEDED; otherwise the last attempt decides.
func giveUpStatus(call *Call, log []Attempt, stop string) Status {
	if len(log) == 0 {
		return StatusDeadlineExceeded
	}
	if !call.Idempotent {
		for _, a := range log {
			if a.Class == ClassUnknown {
				return StatusUnknown
			}
		}
	}
	if stop == StopDeadline {
		return StatusDeadlineExceeded
	}
	switch last := log[len(log)-1]; last.Class {
	case ClassNotExecuted:
		return last.Status
	case ClassUnknown:
		if last.Outcome == OutcomeTimeout {
			return StatusDeadlineExceeded
		}
	}
	return StatusUnavailable
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

// sleep pauses for d unless ctx ends first; it reports whether it slept.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// waiter is what an attempt waits with; pooled, since every call needs one.
type waiter struct {
	ch chan reply
	t  *time.Timer
}

var waiters = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &waiter{ch: make(chan reply, 1), t: t}
}}

// attempt makes one try with the given budget. The returned reply holds the
// server's frame for a response, or the error that ended the attempt.
func (c *Client) attempt(ctx context.Context, call *Call, now time.Time, budget time.Duration) (Attempt, reply) {
	a := Attempt{BudgetMs: deadlineMs(budget)}
	deadline := now.Add(budget)
	live, _ := c.liveConn()

	var cn *clientConn
	var err error
	if c.cfg.ConnPerCall {
		dctx, cancel := context.WithDeadline(ctx, deadline)
		cn, err = dialConn(dctx, c.addr, &c.stats, c.cfg.Deadline)
		cancel()
		if err == nil {
			defer cn.close()
		}
	} else {
		cn, err = c.conn(ctx, deadline)
	}
	if err != nil {
		a.Class, a.Outcome, a.Err = ClassNotSent, OutcomeConnectFailed, err.Error()
		return a, reply{err: err}
	}

	// The server is told what is left of the attempt after connecting.
	if cn != live {
		budget = time.Until(deadline)
		a.BudgetMs = deadlineMs(budget)
	}
	a.ID = c.nextID.Add(1)
	f := Frame{Type: TypeRequest, ID: a.ID, BudgetMs: a.BudgetMs, Method: call.Method, Key: call.Key, Payload: call.Payload}
	w := waiters.Get().(*waiter)
	// Every path below leaves w.ch empty with no sender holding it, so w
	// can be reused.
	defer waiters.Put(w)
	if err := cn.submit(&f, w.ch); err != nil {
		a.Class, a.Outcome, a.Err = ClassNotSent, OutcomeNotSent, err.Error()
		return a, reply{err: err}
	}

	var r reply
	w.t.Reset(budget)
	select {
	case r = <-w.ch:
		w.t.Stop()
	case <-w.t.C:
		if r, ok := c.abandon(cn, a.ID, &a, context.DeadlineExceeded); !ok {
			return a, r
		}
		r = <-w.ch
	case <-ctx.Done():
		w.t.Stop()
		if r, ok := c.abandon(cn, a.ID, &a, ctx.Err()); !ok {
			return a, r
		}
		r = <-w.ch
	}
	switch {
	case r.err != nil && r.notSent:
		a.Class, a.Outcome, a.Err = ClassNotSent, OutcomeNotSent, r.err.Error()
	case r.err != nil:
		a.Class, a.Outcome, a.Err = ClassUnknown, OutcomeConnLost, r.err.Error()
		var pe *ProtocolError
		if errors.As(r.err, &pe) {
			a.Outcome = OutcomeProtocolError
		}
	default:
		a.Outcome, a.Status, a.Class = OutcomeResponse, r.f.Status, classify(r.f.Status)
	}
	return a, r
}

// abandon gives up waiting for id because of cause. It reports false, with
// the attempt classified, when the pending entry was still there; true when
// the reader took the entry first, so its reply is on its way and must be
// used.
func (c *Client) abandon(cn *clientConn, id uint64, a *Attempt, cause error) (reply, bool) {
	if cn.remove(id) {
		a.Class, a.Outcome, a.Err = ClassUnknown, OutcomeTimeout, cause.Error()
		if errors.Is(cause, context.Canceled) {
			a.Outcome = OutcomeCanceled
		}
		return reply{err: cause}, false
	}
	return reply{}, true
}
