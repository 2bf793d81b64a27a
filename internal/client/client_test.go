package client_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/server"
	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/servertest"
)

// returnMargin is how late past its total timeout a call may return: the
// scheduling delay of a loaded 2-core machine under the race detector.
const returnMargin = 250 * time.Millisecond

// TestResponseGoesToItsAttempt: call A times out; its response arrives late
// while call B waits on the same connection. B must get B's response, and
// A's must be dropped and counted, never handed to B.
func TestResponseGoesToItsAttempt(t *testing.T) {
	t.Parallel()
	srv, addr := servertest.Start(t, server.DefaultConfig(), "kind=late method=get count=1 delay=100ms")
	c := servertest.NewClient(t, addr, servertest.ClientConfig())

	a := servertest.Get("acct-a")
	a.Idempotent = false // one attempt only: its response must arrive after it gave up
	a.AttemptTimeout = 200 * time.Millisecond
	ra := c.Do(context.Background(), a)
	if ra.Status != proto.StatusUnknown || ra.Attempts != 1 || ra.Log[0].Outcome != client.OutcomeTimeout {
		t.Fatalf("call A: got status %v, %d attempts, log %v; want UNKNOWN after 1 TIMEOUT", ra.Status, ra.Attempts, ra.Log)
	}

	// A's response is written 100ms after its budget ran out; B is sent
	// after that budget and answered 600ms later, so it is still waiting
	// when A's arrives.
	rb := c.Do(context.Background(), servertest.Get("acct-b", "sleep=600"))
	if rb.Status != proto.StatusOK {
		t.Fatalf("call B: got status %v (%v), want OK", rb.Status, rb.Log)
	}
	if got := servertest.Fields(t, rb.Payload)["account"]; got != "acct-b" {
		t.Errorf("call B got the response for account %q, want %q", got, "acct-b")
	}
	if got := c.Stats().LateDropped; got != 1 {
		t.Errorf("Stats().LateDropped = %d, want 1", got)
	}
	if got := servertest.Counter(t, srv, "faults_fired"); got != 1 {
		t.Errorf("server faults_fired = %d, want 1", got)
	}
	if got := c.Stats().ConnsOpened; got != 1 {
		t.Errorf("Stats().ConnsOpened = %d, want 1 (both calls on one connection)", got)
	}
}

// TestConcurrentCallsSeeTheirOwnAnswers runs many calls at once on one
// connection to a chunk-mode server, which coalesces responses and splits
// them into small pieces. Each call debits its own account by its own
// amount and must see exactly its own result.
func TestConcurrentCallsSeeTheirOwnAnswers(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.Chunk = true
	srv, addr := servertest.Start(t, cfg)
	c := servertest.NewClient(t, addr, servertest.ClientConfig())

	const n = 64
	type answer struct{ Account, Balance string }
	got := make([]answer, n)
	want := make([]answer, n)
	var wg sync.WaitGroup
	for i := range n {
		want[i] = answer{fmt.Sprintf("acct-%d", i), fmt.Sprint(bank.DefaultBalance - (i + 1))}
		wg.Go(func() {
			call := servertest.Debit(want[i].Account, i+1)
			call.Key = "key-" + want[i].Account
			r := c.Do(context.Background(), call)
			if r.Status != proto.StatusOK {
				t.Errorf("call %d: got status %v (%v), want OK", i, r.Status, r.Log)
				return
			}
			fs := servertest.Fields(t, r.Payload)
			got[i] = answer{fs["account"], fs["balance"]}
		})
	}
	wg.Wait()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers by call (-want +got):\n%s", diff)
	}
	if got := c.Stats().ConnsOpened; got != 1 {
		t.Errorf("Stats().ConnsOpened = %d, want 1", got)
	}
	if got := servertest.Counter(t, srv, "exec.debit"); got != n {
		t.Errorf("server exec.debit = %d, want %d", got, n)
	}
}

// TestSustainedLoadKeepsStreamIntact drives many concurrent calls of
// varied sizes through one connection, so that requests are coalesced into
// shared writes and answers into shared reads. Any corruption of the byte
// stream shows up as a protocol error, a redial or a wrong answer.
func TestSustainedLoadKeepsStreamIntact(t *testing.T) {
	for _, chunk := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunk=%v", chunk), func(t *testing.T) {
			cfg := server.DefaultConfig()
			cfg.Chunk = chunk
			srv, addr := servertest.Start(t, cfg)
			c := servertest.NewClient(t, addr, servertest.ClientConfig())
			const goroutines, calls = 16, 300
			var wrong atomic.Int64
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					for i := range calls {
						account := fmt.Sprintf("acct-%d-%d", g, i)
						pad := strings.Repeat("p", (g*calls+i)*37%3000)
						r := c.Do(context.Background(), servertest.Get(account, "pad="+pad))
						if r.Status != proto.StatusOK || servertest.Fields(t, r.Payload)["account"] != account {
							if wrong.Add(1) == 1 {
								t.Errorf("call %s: got %v %q (log %v), want OK for that account", account, r.Status, r.Payload, r.Log)
							}
						}
					}
				})
			}
			wg.Wait()
			if n := wrong.Load(); n > 0 {
				t.Errorf("%d of %d calls got a failure or another account's answer", n, goroutines*calls)
			}
			if got := servertest.Counter(t, srv, "protocol_errors"); got != 0 {
				t.Errorf("server protocol_errors = %d, want 0", got)
			}
			if got := c.Stats().ConnsOpened; got != 1 {
				t.Errorf("Stats().ConnsOpened = %d, want 1 (the connection broke)", got)
			}
		})
	}
}

// TestCallReturnsWithinTimeout: whatever the server does, a call returns
// within its total timeout; each attempt's budget is min(attempt timeout,
// time left); attempts and pauses never add up past the deadline.
func TestCallReturnsWithinTimeout(t *testing.T) {
	tests := []struct {
		name           string
		fault          string
		call           client.Call
		timeout        time.Duration
		attemptTimeout time.Duration
		stop           client.Stop
	}{
		// Second attempt gets what is left of the 1s, about 380ms.
		{"noreply_get", "kind=noreply method=get", servertest.Get("a"), time.Second, 600 * time.Millisecond, client.StopDeadline},
		// The first budget is cut to the call's timeout; then pauses of
		// 20, 40, 80, 160ms until the next 200ms would cross the deadline:
		// the client stops rather than sleep past it.
		{"unavailable_debit", "kind=unavailable method=debit", servertest.Debit("a", 1), 500 * time.Millisecond, 600 * time.Millisecond,
			client.StopBackoffCrosses},
		{"sleep_keyed_debit", "kind=sleep method=debit delay=5s", func() client.Call { c := servertest.Debit("a", 1); c.Key = "k"; return c }(),
			900 * time.Millisecond, 300 * time.Millisecond, client.StopDeadline},
		{"late_get", "kind=late method=get delay=50ms", servertest.Get("a"), 700 * time.Millisecond, 250 * time.Millisecond, client.StopDeadline},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, addr := servertest.Start(t, server.DefaultConfig(), tt.fault)
			cfg := servertest.ClientConfig()
			cfg.MaxAttempts = 100 // the deadline, not the attempt cap, must end these calls
			c := servertest.NewClient(t, addr, cfg)
			call := tt.call
			call.Timeout, call.AttemptTimeout = tt.timeout, tt.attemptTimeout

			start := time.Now()
			r := c.Do(context.Background(), call)
			wall := time.Since(start)

			if limit := tt.timeout + returnMargin; wall > limit || r.Elapsed > limit {
				t.Errorf("call returned after %v (Elapsed %v), want at most %v", wall, r.Elapsed, limit)
			}
			if r.Status == proto.StatusOK {
				t.Fatalf("got status OK, want a failure (log %v)", r.Log)
			}
			if r.Stop != tt.stop {
				t.Errorf("Stop = %q, want %q (log %v)", r.Stop, tt.stop, r.Log)
			}
			if len(r.Log) < 2 {
				t.Fatalf("got %d attempts, want at least 2 (log %v)", len(r.Log), r.Log)
			}
			totalMs := uint32(tt.timeout.Milliseconds())
			attemptMs := uint32(tt.attemptTimeout.Milliseconds())
			// The budget is what is left after connecting: at most the
			// minimum, less only by the time the dial took.
			if got, want := r.Log[0].BudgetMs, min(attemptMs, totalMs); got > want || got+250 < want {
				t.Errorf("first attempt budget = %dms, want min(attempt %dms, total %dms) = %dms less the dial time", got, attemptMs, totalMs, want)
			}
			// Attempt i starts no earlier than the sum of every earlier
			// pause and every earlier attempt that ran out its budget.
			var spent uint32
			for i, a := range r.Log {
				if a.BudgetMs > attemptMs {
					t.Errorf("attempt %d budget = %dms, more than the attempt timeout %dms", i+1, a.BudgetMs, attemptMs)
				}
				if a.BudgetMs+spent > totalMs {
					t.Errorf("attempt %d budget = %dms after %dms already spent: crosses the %dms deadline", i+1, a.BudgetMs, spent, totalMs)
				}
				if a.Outcome == client.OutcomeTimeout {
					spent += a.BudgetMs
				}
				spent += uint32(a.Backoff.Milliseconds())
			}
			if spent > totalMs {
				t.Errorf("timed-out attempts and pauses add up to %dms, past the %dms deadline", spent, totalMs)
			}
			if last := r.Log[len(r.Log)-1]; last.BudgetMs >= attemptMs {
				t.Errorf("last attempt budget = %dms, want less than the attempt timeout %dms (cut to the time left)", last.BudgetMs, attemptMs)
			}
		})
	}
}

// TestUnknownOutcomeNotResent: a keyless debit whose request was written
// and never answered may have executed, so it must not be sent again.
func TestUnknownOutcomeNotResent(t *testing.T) {
	t.Parallel()
	srv, addr := servertest.Start(t, server.DefaultConfig(), "kind=noreply method=debit")
	c := servertest.NewClient(t, addr, servertest.ClientConfig())
	call := servertest.Debit("acct", 10)
	call.AttemptTimeout = 200 * time.Millisecond

	r := c.Do(context.Background(), call)
	if r.Status != proto.StatusUnknown {
		t.Errorf("Status = %v, want %v", r.Status, proto.StatusUnknown)
	}
	if r.Attempts != 1 {
		t.Errorf("Attempts = %d, want 1 (log %v)", r.Attempts, r.Log)
	}
	if r.Stop != client.StopNotRetryable {
		t.Errorf("Stop = %q, want %q", r.Stop, client.StopNotRetryable)
	}
	if r.Log[0].Class != client.ClassUnknown {
		t.Errorf("attempt class = %v, want %v", r.Log[0].Class, client.ClassUnknown)
	}
	if !errors.Is(r.Err, context.DeadlineExceeded) {
		t.Errorf("Err = %v, want %v", r.Err, context.DeadlineExceeded)
	}
	for name, want := range map[string]int64{"requests.debit": 1, "exec.debit": 1} {
		if got := servertest.Counter(t, srv, name); got != want {
			t.Errorf("server %s = %d, want %d", name, got, want)
		}
	}
}

// TestBadFrameFailsConnection: after a bad frame from the server, every
// call in flight on that connection fails at once, and the next call opens
// a new connection.
func TestBadFrameFailsConnection(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.Workers = 8
	srv, addr := servertest.Start(t, cfg, "kind=badmagic method=debit count=1")
	c := servertest.NewClient(t, addr, servertest.ClientConfig())

	const inFlight = 3
	results := make([]client.Result, inFlight)
	var wg sync.WaitGroup
	for i := range inFlight {
		wg.Go(func() {
			call := servertest.Get(fmt.Sprint("slow-", i), "sleep=5000")
			call.Idempotent = false // so its failure shows instead of a retry
			call.Timeout = 8 * time.Second
			call.AttemptTimeout = 8 * time.Second
			results[i] = c.Do(context.Background(), call)
		})
	}
	servertest.WaitCounter(t, srv, "requests.get", inFlight)

	bad := c.Do(context.Background(), servertest.Debit("acct", 1))
	wg.Wait()
	for i, r := range append(results, bad) {
		var pe *proto.ProtocolError
		if !errors.As(r.Err, &pe) {
			t.Errorf("call %d: Err = %v, want a *ProtocolError", i, r.Err)
		}
		if r.Status != proto.StatusUnknown || r.Attempts != 1 || r.Log[0].Outcome != client.OutcomeProtocolError {
			t.Errorf("call %d: got status %v after %v; want UNKNOWN after one %s", i, r.Status, r.Log, client.OutcomeProtocolError)
		}
		if r.Elapsed >= 5*time.Second {
			t.Errorf("call %d took %v: it waited for its answer instead of failing with the connection", i, r.Elapsed)
		}
	}
	if got := c.Stats().ProtocolErrors; got != 1 {
		t.Errorf("Stats().ProtocolErrors = %d, want 1", got)
	}

	before := c.Stats().ConnsOpened
	if r := c.Do(context.Background(), servertest.Get("acct")); r.Status != proto.StatusOK {
		t.Fatalf("call after the bad frame: got status %v (%v), want OK", r.Status, r.Log)
	}
	if got, want := c.Stats().ConnsOpened, before+1; got != want {
		t.Errorf("Stats().ConnsOpened = %d after the bad frame, want %d", got, want)
	}
}

// target is what a classification row runs against.
type target struct {
	addr      string
	execDebit func() int64 // executions of debit the server performed
	dedupHits func() int64
}

func realServer(faults ...string) func(*testing.T) target {
	return func(t *testing.T) target {
		srv, addr := servertest.Start(t, server.DefaultConfig(), faults...)
		return target{
			addr:      addr,
			execDebit: func() int64 { return servertest.Counter(t, srv, "exec.debit") },
			dedupHits: func() int64 { return servertest.Counter(t, srv, "dedup_hits") },
		}
	}
}

// refused returns the address of a port nobody listens on.
func refused(t *testing.T) target {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	zero := func() int64 { return 0 }
	return target{addr: addr, execDebit: zero, dedupHits: zero}
}

// answering returns a fake server that answers the n-th request it reads
// (from 0) with statuses[n], or OK past the end. It counts an OK answer as
// an execution: the real server cannot send DEADLINE_EXCEEDED in time for a
// waiting client, since it sends it only once the client's budget is gone.
func answering(statuses ...proto.Status) func(*testing.T) target {
	return func(t *testing.T) target {
		var mu sync.Mutex
		var n, executed int64
		addr := fakeServer(t, func(nc net.Conn) {
			fr := proto.NewFrameReader(nc, proto.TypeRequest, 4096)
			for {
				frames, err := fr.ReadBatch()
				for _, f := range frames {
					mu.Lock()
					st := proto.StatusOK
					if int(n) < len(statuses) {
						st = statuses[n]
					}
					n++
					if st == proto.StatusOK {
						executed++
					}
					mu.Unlock()
					resp := proto.Frame{Type: proto.TypeResponse, ID: f.ID, Status: st, Method: f.Method, Payload: []byte("account=fake")}
					b, _ := proto.AppendFrame(nil, &resp)
					nc.Write(b)
				}
				if err != nil {
					return
				}
			}
		})
		return target{
			addr:      addr,
			execDebit: func() int64 { mu.Lock(); defer mu.Unlock(); return executed },
			dedupHits: func() int64 { return 0 },
		}
	}
}

// fakeServer accepts connections on a free loopback port and runs serve on
// each until the test ends.
func fakeServer(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex // guards conns, closed
	var conns []net.Conn
	closed := false
	wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			if closed {
				mu.Unlock()
				nc.Close()
				return
			}
			conns = append(conns, nc)
			wg.Go(func() { serve(nc) })
			mu.Unlock()
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		closed = true
		for _, nc := range conns {
			nc.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// attemptSummary is the part of an Attempt the classification rows check.
type attemptSummary struct {
	Outcome client.Outcome
	Status  proto.Status // only for a RESPONSE
	Class   client.Class
}

type outcome struct {
	Status    proto.Status
	Attempts  []attemptSummary
	Stop      client.Stop
	ExecDebit int64
	DedupHits int64
	Replayed  string
}

func summarize(r client.Result, tg target) outcome {
	o := outcome{Status: r.Status, Stop: r.Stop, ExecDebit: tg.execDebit(), DedupHits: tg.dedupHits()}
	for _, a := range r.Log {
		s := attemptSummary{Outcome: a.Outcome, Class: a.Class}
		if a.Outcome == client.OutcomeResponse {
			s.Status = a.Status
		}
		o.Attempts = append(o.Attempts, s)
	}
	if fs, err := serverapi.ParseFields(r.Payload); err == nil {
		o.Replayed = fs["replayed"]
	}
	return o
}

// TestAttemptClassification drives one call through each kind of failure
// and checks how every attempt is classified, whether it is retried, how
// the call ends, and how often the server executed it.
func TestAttemptClassification(t *testing.T) {
	var (
		resp = func(st proto.Status, c client.Class) attemptSummary {
			return attemptSummary{Outcome: client.OutcomeResponse, Status: st, Class: c}
		}
		ok         = resp(proto.StatusOK, client.ClassFinal)
		unavail    = proto.StatusUnavailable
		refusedTry = attemptSummary{Outcome: client.OutcomeConnectFailed, Class: client.ClassNotSent}
		unknown    = func(tag client.Outcome) attemptSummary {
			return attemptSummary{Outcome: tag, Class: client.ClassUnknown}
		}
		keyed       = func(c client.Call) client.Call { c.Key = "key-1"; return c }
		notIdem     = func(c client.Call) client.Call { c.Idempotent = false; return c }
		okReplayed  = outcome{Status: proto.StatusOK, Stop: client.StopFinal, ExecDebit: 1, DedupHits: 1, Replayed: "true"}
		unknownOnce = outcome{Status: proto.StatusUnknown, Stop: client.StopNotRetryable, ExecDebit: 1}
	)
	with := func(o outcome, attempts ...attemptSummary) outcome { o.Attempts = attempts; return o }

	type row struct {
		name   string
		target func(*testing.T) target
		call   client.Call
		want   outcome
	}
	rows := []row{
		{"connect_refused_debit", refused, servertest.Debit("a", 1),
			outcome{Status: proto.StatusUnavailable, Stop: client.StopMaxAttempts,
				Attempts: []attemptSummary{refusedTry, refusedTry, refusedTry, refusedTry}}},
		{"unavailable_debit", realServer("kind=unavailable method=debit count=1"), servertest.Debit("a", 1),
			outcome{Status: proto.StatusOK, Stop: client.StopFinal, ExecDebit: 1, Replayed: "false",
				Attempts: []attemptSummary{resp(proto.StatusUnavailable, client.ClassNotExecuted), ok}}},
		{"deadline_exceeded_debit", answering(proto.StatusDeadlineExceeded), servertest.Debit("a", 1),
			outcome{Status: proto.StatusOK, Stop: client.StopFinal, ExecDebit: 1,
				Attempts: []attemptSummary{resp(proto.StatusDeadlineExceeded, client.ClassNotExecuted), ok}}},
		{"unavailable_every_time", answering(unavail, unavail, unavail, unavail), servertest.Debit("a", 1),
			outcome{Status: unavail, Stop: client.StopMaxAttempts, Attempts: []attemptSummary{
				resp(unavail, client.ClassNotExecuted), resp(unavail, client.ClassNotExecuted),
				resp(unavail, client.ClassNotExecuted), resp(unavail, client.ClassNotExecuted)}}},
		{"invalid_argument_get", realServer(), servertest.Get("", "sleep=1"),
			outcome{Status: proto.StatusInvalidArgument, Stop: client.StopFinal,
				Attempts: []attemptSummary{resp(proto.StatusInvalidArgument, client.ClassFinal)}}},
		{"app_error_debit", realServer(), servertest.Debit("a", bank.DefaultBalance+1),
			outcome{Status: proto.StatusAppError, Stop: client.StopFinal,
				Attempts: []attemptSummary{resp(proto.StatusAppError, client.ClassFinal)}}},
	}
	// Each way an attempt can end with its outcome unknown, for the three
	// kinds of call.
	for _, u := range []struct {
		fault string
		tag   client.Outcome
	}{
		{"kind=late delay=50ms", client.OutcomeTimeout},
		{"kind=close", client.OutcomeConnLost},
		{"kind=partial", client.OutcomeConnLost},
		{"kind=badmagic", client.OutcomeProtocolError},
	} {
		kind := strings.TrimPrefix(strings.Fields(u.fault)[0], "kind=")
		rows = append(rows,
			row{kind + "_get_idempotent", realServer(u.fault + " method=get count=1"), servertest.Get("a"),
				outcome{Status: proto.StatusOK, Stop: client.StopFinal, Replayed: "false", Attempts: []attemptSummary{unknown(u.tag), ok}}},
			row{kind + "_get_not_idempotent", realServer(u.fault + " method=get count=1"), notIdem(servertest.Get("a")),
				outcome{Status: proto.StatusUnknown, Stop: client.StopNotRetryable, Attempts: []attemptSummary{unknown(u.tag)}}},
			row{kind + "_debit_keyless", realServer(u.fault + " method=debit count=1"), servertest.Debit("a", 1),
				with(unknownOnce, unknown(u.tag))},
			row{kind + "_debit_keyed", realServer(u.fault + " method=debit count=1"), keyed(servertest.Debit("a", 1)),
				with(okReplayed, unknown(u.tag), ok)},
		)
	}
	for _, tt := range rows {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tg := tt.target(t)
			c := servertest.NewClient(t, tg.addr, servertest.ClientConfig())
			call := tt.call
			// Long enough for any answer that comes, a late fault's retry
			// included, with every row running at once on a loaded
			// machine (500ms failed the late rows once at load 10-14);
			// the rows that time out wait it out, in parallel.
			call.AttemptTimeout = 2 * time.Second
			r := c.Do(context.Background(), call)
			if diff := cmp.Diff(tt.want, summarize(r, tg)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s\nlog: %v", diff, r.Log)
			}
			if r.Attempts != len(r.Log) {
				t.Errorf("Attempts = %d, len(Log) = %d", r.Attempts, len(r.Log))
			}
		})
	}
}

// TestPartialResponseDiscarded: half a response followed by EOF is never
// delivered; the buffered bytes are counted.
func TestPartialResponseDiscarded(t *testing.T) {
	_, addr := servertest.Start(t, server.DefaultConfig(), "kind=partial method=get count=1")
	c := servertest.NewClient(t, addr, servertest.ClientConfig())
	r := c.Do(context.Background(), servertest.Get("a"))
	if r.Status != proto.StatusOK || r.Attempts != 2 {
		t.Fatalf("got status %v after %v, want OK after 2 attempts", r.Status, r.Log)
	}
	if got := c.Stats().PartialBytes; got <= 0 {
		t.Errorf("Stats().PartialBytes = %d, want > 0", got)
	}
	if !strings.Contains(r.Log[0].Err, "partial bytes=") {
		t.Errorf("first attempt Err = %q, want it to report the partial bytes", r.Log[0].Err)
	}
	var lost *client.ConnLostError
	if !errors.As(r.Log[0].Cause, &lost) || lost.Partial <= 0 {
		t.Errorf("first attempt Cause = %#v, want a *ConnLostError with Partial > 0", r.Log[0].Cause)
	}
	if r.Log[1].Cause != nil {
		t.Errorf("answered attempt Cause = %v, want nil", r.Log[1].Cause)
	}
}

func TestInvalidCallRejectedLocally(t *testing.T) {
	tests := []struct {
		name string
		call client.Call
	}{
		{"oversize_payload", client.Call{Method: bank.MethodGet, Payload: make([]byte, proto.MaxFrameLen)}},
		{"empty_method", client.Call{Payload: []byte("account=a")}},
		{"method_33", client.Call{Method: strings.Repeat("m", 33), Payload: []byte("account=a")}},
		{"key_65", client.Call{Method: bank.MethodDebit, Key: strings.Repeat("k", 65), Payload: []byte("account=a amount=1")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, addr := servertest.Start(t, server.DefaultConfig())
			c := servertest.NewClient(t, addr, servertest.ClientConfig())
			r := c.Do(context.Background(), tt.call)
			if r.Status != proto.StatusInvalidArgument || r.Attempts != 0 || r.Stop != client.StopFinal {
				t.Errorf("got status %v, %d attempts, stop %q; want INVALID_ARGUMENT, 0, %q", r.Status, r.Attempts, r.Stop, client.StopFinal)
			}
			if !errors.Is(r.Err, proto.ErrInvalidFrame) {
				t.Errorf("Err = %v, want one wrapping %v", r.Err, proto.ErrInvalidFrame)
			}
			if got := c.Stats().ConnsOpened; got != 0 {
				t.Errorf("Stats().ConnsOpened = %d, want 0", got)
			}
			for _, name := range []string{"requests.get", "requests.debit", "requests.other", "conns_accepted"} {
				if got := servertest.Counter(t, srv, name); got != 0 {
					t.Errorf("server %s = %d, want 0", name, got)
				}
			}
		})
	}
}

// TestRetryUnknownHook: the RetryUnknown hook decides whether a call
// whose outcome is unknown is re-sent. A hook that says yes to a keyless
// debit is the negative control: the debit executes twice. Without a hook
// the safe rule holds and it executes once.
func TestRetryUnknownHook(t *testing.T) {
	tests := []struct {
		name      string
		hook      func(*client.Call) bool
		status    proto.Status
		attempts  int
		stop      client.Stop
		execDebit int64
	}{
		{"hook_true_double_executes", func(*client.Call) bool { return true }, proto.StatusOK, 2, client.StopFinal, 2},
		{"nil_not_resent", nil, proto.StatusUnknown, 1, client.StopNotRetryable, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, addr := servertest.Start(t, server.DefaultConfig(), "kind=noreply method=debit count=1")
			cfg := servertest.ClientConfig()
			var asked atomic.Int64
			if tt.hook != nil {
				cfg.RetryUnknown = func(call *client.Call) bool {
					asked.Add(1)
					if call.Method != bank.MethodDebit || call.Key != "" {
						t.Errorf("RetryUnknown got call %s key %q, want the keyless debit", call.Method, call.Key)
					}
					return tt.hook(call)
				}
			}
			c := servertest.NewClient(t, addr, cfg)
			call := servertest.Debit("acct", 10)
			call.AttemptTimeout = 200 * time.Millisecond

			r := c.Do(context.Background(), call)
			if r.Status != tt.status || r.Attempts != tt.attempts || r.Stop != tt.stop {
				t.Fatalf("got status %v after %d attempts, stop %v (log %v); want %v after %d, stop %v",
					r.Status, r.Attempts, r.Stop, r.Log, tt.status, tt.attempts, tt.stop)
			}
			if got := servertest.Counter(t, srv, "exec.debit"); got != tt.execDebit {
				t.Errorf("server exec.debit = %d, want %d", got, tt.execDebit)
			}
			if tt.hook != nil && asked.Load() != 1 {
				t.Errorf("RetryUnknown called %d times, want 1 (after the unanswered attempt)", asked.Load())
			}
			if tt.status != proto.StatusOK {
				return
			}
			if got, want := servertest.Fields(t, r.Payload)["balance"], fmt.Sprint(bank.DefaultBalance-tt.execDebit*10); got != want {
				t.Errorf("balance = %s, want %s", got, want)
			}
		})
	}
}

func TestContextCanceled(t *testing.T) {
	srv, addr := servertest.Start(t, server.DefaultConfig(), "kind=noreply method=debit")
	c := servertest.NewClient(t, addr, servertest.ClientConfig())

	t.Run("in_flight", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		call := servertest.Debit("acct", 1)
		call.Timeout, call.AttemptTimeout = time.Minute, time.Minute
		done := make(chan client.Result, 1)
		go func() { done <- c.Do(ctx, call) }()
		servertest.WaitCounter(t, srv, "exec.debit", 1)
		canceled := time.Now()
		cancel()
		var r client.Result
		select {
		case r = <-done:
		case <-time.After(servertest.WaitLimit):
			t.Fatalf("call still running %v after cancel", servertest.WaitLimit)
		}
		if took := time.Since(canceled); took > returnMargin {
			t.Errorf("call returned %v after cancel, want at most %v", took, returnMargin)
		}
		want := outcome{Status: proto.StatusUnknown, Stop: client.StopCanceled, ExecDebit: 1,
			Attempts: []attemptSummary{{Outcome: client.OutcomeCanceled, Class: client.ClassUnknown}}}
		got := summarize(r, target{execDebit: func() int64 { return servertest.Counter(t, srv, "exec.debit") }, dedupHits: func() int64 { return 0 }})
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
		if !errors.Is(r.Err, context.Canceled) {
			t.Errorf("Err = %v, want %v", r.Err, context.Canceled)
		}
	})
	t.Run("before_start", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r := c.Do(ctx, servertest.Get("acct"))
		if r.Attempts != 0 || r.Stop != client.StopCanceled || !errors.Is(r.Err, context.Canceled) {
			t.Errorf("got %d attempts, stop %q, Err %v; want 0, %q, %v", r.Attempts, r.Stop, r.Err, client.StopCanceled, context.Canceled)
		}
	})
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*client.Config)
	}{
		{"attempt_timeout_zero", func(c *client.Config) { c.AttemptTimeout = 0 }},
		{"attempt_timeout_negative", func(c *client.Config) { c.AttemptTimeout = -time.Second }},
		{"deadline_zero", func(c *client.Config) { c.Deadline = 0 }},
		{"max_attempts_zero", func(c *client.Config) { c.MaxAttempts = 0 }},
		{"backoff_initial_zero", func(c *client.Config) { c.BackoffInitial = 0 }},
		{"backoff_max_below_initial", func(c *client.Config) { c.BackoffMax = c.BackoffInitial - 1 }},
		{"jitter_negative", func(c *client.Config) { c.Jitter = -0.1 }},
		{"jitter_one", func(c *client.Config) { c.Jitter = 1 }},
		{"write_timeout_zero", func(c *client.Config) { c.WriteTimeout = 0 }},
		{"hedge_delay_zero", func(c *client.Config) { c.Hedge = &client.HedgeConfig{} }},
		{"hedge_max_negative", func(c *client.Config) { c.Hedge = &client.HedgeConfig{Delay: time.Millisecond, MaxHedges: -1} }},
		{"user_timeout_negative", func(c *client.Config) { c.UserTimeout = -time.Millisecond }},
		{"keepalive_time_zero", withKeepalive(0, time.Second)},
		{"keepalive_time_negative", withKeepalive(-time.Second, time.Second)},
		{"keepalive_timeout_zero", withKeepalive(time.Second, 0)},
		{"keepalive_timeout_negative", withKeepalive(time.Second, -time.Second)},
	}
	def := client.DefaultConfig()
	if err := def.Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate() = %v, want nil", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := client.DefaultConfig()
			tt.mutate(&cfg)
			if err := cfg.Validate(); !errors.Is(err, client.ErrConfig) {
				t.Errorf("Validate() = %v, want an error wrapping %v", err, client.ErrConfig)
			}
			if c, err := client.New("127.0.0.1:1", cfg); !errors.Is(err, client.ErrConfig) || c != nil {
				t.Errorf("client.New() = %v, %v; want nil, an error wrapping %v", c, err, client.ErrConfig)
			}
		})
	}
}

// withKeepalive sets Config.Keepalive to {tm, to}.
func withKeepalive(tm, to time.Duration) func(*client.Config) {
	return func(c *client.Config) { c.Keepalive = &client.KeepaliveConfig{Time: tm, Timeout: to} }
}

func TestDefaultConfig(t *testing.T) {
	want := client.Config{
		AttemptTimeout: 300 * time.Millisecond,
		Deadline:       2 * time.Second,
		MaxAttempts:    4,
		BackoffInitial: 20 * time.Millisecond,
		BackoffMax:     200 * time.Millisecond,
		Jitter:         0.2,
		WriteTimeout:   2 * time.Second,
	}
	if diff := cmp.Diff(want, client.DefaultConfig()); diff != "" {
		t.Errorf("DefaultConfig() (-want +got):\n%s", diff)
	}
}

// TestBackoff reads the pauses a call actually took from its log: without
// jitter they double from BackoffInitial up to BackoffMax; with jitter each
// stays within ±Jitter of that.
func TestBackoff(t *testing.T) {
	ms := time.Millisecond
	nominal := []time.Duration{20 * ms, 40 * ms, 80 * ms, 160 * ms, 200 * ms, 200 * ms, 0}
	for _, jitter := range []float64{0, 0.2} {
		t.Run(fmt.Sprint("jitter=", jitter), func(t *testing.T) {
			t.Parallel()
			_, addr := servertest.Start(t, server.DefaultConfig(), "kind=unavailable method=debit")
			cfg := servertest.ClientConfig()
			cfg.MaxAttempts = len(nominal)
			cfg.Jitter = jitter
			c := servertest.NewClient(t, addr, cfg)
			call := servertest.Debit("a", 1)
			call.Timeout = time.Minute
			r := c.Do(context.Background(), call)
			if r.Stop != client.StopMaxAttempts {
				t.Fatalf("Stop = %q, want %q (log %v)", r.Stop, client.StopMaxAttempts, r.Log)
			}
			got := make([]time.Duration, len(r.Log))
			for i, a := range r.Log {
				got[i] = a.Backoff
			}
			if jitter == 0 {
				if diff := cmp.Diff(nominal, got); diff != "" {
					t.Errorf("pauses (-want +got):\n%s", diff)
				}
				return
			}
			for i, d := range got {
				lo := time.Duration(float64(nominal[i]) * (1 - jitter))
				hi := time.Duration(float64(nominal[i]) * (1 + jitter))
				if d < lo || d > hi {
					t.Errorf("pause %d = %v, want within [%v, %v]", i+1, d, lo, hi)
				}
			}
		})
	}
}

// TestConnPerCall: every attempt dials its own connection.
func TestConnPerCall(t *testing.T) {
	srv, addr := servertest.Start(t, server.DefaultConfig())
	cfg := servertest.ClientConfig()
	cfg.ConnPerCall = true
	c := servertest.NewClient(t, addr, cfg)
	const n = 3
	for i := range n {
		if r := c.Do(context.Background(), servertest.Get(fmt.Sprint(i))); r.Status != proto.StatusOK {
			t.Fatalf("call %d: got status %v (%v), want OK", i, r.Status, r.Log)
		}
	}
	if got := c.Stats().ConnsOpened; got != n {
		t.Errorf("Stats().ConnsOpened = %d, want %d", got, n)
	}
	servertest.WaitCounter(t, srv, "conns_accepted", n)
}

// TestClientClose: Close fails a call in flight, and later calls fail
// without dialing.
func TestClientClose(t *testing.T) {
	srv, addr := servertest.Start(t, server.DefaultConfig())
	c, err := client.New(addr, servertest.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan client.Result, 1)
	go func() { done <- c.Do(context.Background(), servertest.Debit("a", 1, "sleep=5000")) }()
	servertest.WaitCounter(t, srv, "requests.debit", 1)
	c.Close()
	r := <-done
	if r.Status != proto.StatusUnknown || !errors.Is(r.Err, client.ErrClosed) {
		t.Errorf("call in flight at Close: got status %v, Err %v; want UNKNOWN, %v", r.Status, r.Err, client.ErrClosed)
	}
	r = c.Do(context.Background(), servertest.Get("a"))
	if r.Status == proto.StatusOK || !errors.Is(r.Err, client.ErrClosed) {
		t.Errorf("call after Close: got status %v, Err %v; want a failure with %v", r.Status, r.Err, client.ErrClosed)
	}
	if r.Attempts != 1 || r.Stop != client.StopClosed {
		t.Errorf("call after Close: got %d attempts, stop %q; want 1, %q", r.Attempts, r.Stop, client.StopClosed)
	}
	if got := c.Stats().ConnsOpened; got != 1 {
		t.Errorf("Stats().ConnsOpened = %d, want 1", got)
	}
}

// TestShorterDeadlineRearmsTimer: a connection keeps one timer for the
// earliest deadline of its attempts. An attempt with a short budget sent
// after one with a long budget must time out at its own deadline, not at
// the earlier attempt's.
func TestShorterDeadlineRearmsTimer(t *testing.T) {
	got := make(chan struct{}, 2)
	addr := fakeServer(t, func(nc net.Conn) {
		fr := proto.NewFrameReader(nc, proto.TypeRequest, 0)
		for {
			frames, err := fr.ReadBatch()
			for range frames {
				got <- struct{}{} // received, never answered
			}
			if err != nil {
				return
			}
		}
	})
	c, err := client.New(addr, servertest.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	long := client.Call{Method: bank.MethodGet, Idempotent: true, Payload: []byte("account=a"), Timeout: 10 * time.Second, AttemptTimeout: 10 * time.Second}
	longDone := make(chan client.Result, 1)
	go func() { longDone <- c.Do(context.Background(), long) }()
	<-got // the long attempt's request arrived, so its deadline is registered

	const short = 100 * time.Millisecond
	r := c.Do(context.Background(), client.Call{Method: bank.MethodGet, Idempotent: true, Payload: []byte("account=b"), Timeout: short, AttemptTimeout: short})
	if r.Status != proto.StatusDeadlineExceeded || r.Log[0].Outcome != client.OutcomeTimeout {
		t.Fatalf("short call: got %v %v, want DEADLINE_EXCEEDED after a TIMEOUT", r.Status, r.Log)
	}
	// Far below the long attempt's 10s: the timer was re-armed.
	if limit := 3 * time.Second; r.Elapsed > limit {
		t.Fatalf("short call took %v, want its %v deadline (at most %v): it waited for the longer attempt's timer", r.Elapsed, short, limit)
	}
	c.Close()
	<-longDone
}
