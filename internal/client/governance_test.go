package client_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/server"
	"github.com/rpcbench/rpcbench/internal/servertest"
)

// quickRetries is servertest.ClientConfig with pauses of a few
// milliseconds, for tests that make many failing calls.
func quickRetries() client.Config {
	cfg := servertest.ClientConfig()
	cfg.BackoffInitial, cfg.BackoffMax = time.Millisecond, 2*time.Millisecond
	return cfg
}

// requests is how many requests of every business method reached srv.
func requests(t *testing.T, srv *server.Server) int64 {
	t.Helper()
	return servertest.Counter(t, srv, "requests."+bank.MethodGet) + servertest.Counter(t, srv, "requests."+bank.MethodDebit)
}

// wantRefused checks that r is a call the client refused itself with
// status st and stop reason stop, having made no attempt.
func wantRefused(t *testing.T, r client.Result, st proto.Status, stop client.Stop, err error) {
	t.Helper()
	if r.Status != st || r.Stop != stop || r.Attempts != 0 || len(r.Log) != 0 || !errors.Is(r.Err, err) {
		t.Errorf("got status %v, stop %q, %d attempts (log %v), Err %v; want %v, %q, no attempt, %v",
			r.Status, r.Stop, r.Attempts, r.Log, r.Err, st, stop, err)
	}
}

// TestGovernanceOffByDefault: a client configured with none of it has no
// breaker, hands out no permits and counts no refusal.
func TestGovernanceOffByDefault(t *testing.T) {
	t.Parallel()
	_, addr := servertest.Start(t, server.DefaultConfig())
	c := servertest.NewClient(t, addr, servertest.ClientConfig())
	for i := range 20 {
		if r := c.Do(context.Background(), servertest.Get(fmt.Sprint(i))); r.Status != proto.StatusOK {
			t.Fatalf("call %d: got %v (%v), want OK", i, r.Status, r.Log)
		}
	}
	if got := c.BreakerState(); got != "" {
		t.Errorf("BreakerState() = %q, want \"\" without a breaker", got)
	}
	if got := c.InFlight(); got != 0 {
		t.Errorf("InFlight() = %d, want 0 without a cap", got)
	}
	st := c.Stats()
	if st.RejectedBusy+st.RejectedRateLimited+st.RejectedCircuitOpen+st.RetriesThrottled != 0 {
		t.Errorf("Stats() = %+v, want no refusal and no throttled retry", st)
	}
}

// TestRetryBudgetThrottles: against a server refusing every request, the
// first call spends tokens 10 -> 6 on its 4 attempts; every later call's
// first failure leaves 5 or fewer, half of 10, so none retries.
func TestRetryBudgetThrottles(t *testing.T) {
	t.Parallel()
	srv, addr := servertest.Start(t, server.DefaultConfig(), "kind=unavailable method=get")
	cfg := quickRetries()
	cfg.RetryBudget = &client.RetryBudget{MaxTokens: 10, TokenRatio: 0.1}
	c := servertest.NewClient(t, addr, cfg)
	const calls = 20
	for i := range calls {
		r := c.Do(context.Background(), servertest.Get("a"))
		attempts, stop := 1, client.StopRetryBudget
		if i == 0 {
			attempts, stop = cfg.MaxAttempts, client.StopMaxAttempts
		}
		if r.Status != proto.StatusUnavailable || r.Attempts != attempts || r.Stop != stop {
			t.Fatalf("call %d: got %v after %d attempts, stop %q; want UNAVAILABLE after %d, %q", i, r.Status, r.Attempts, r.Stop, attempts, stop)
		}
	}
	if got, want := requests(t, srv), int64(calls+cfg.MaxAttempts-1); got != want {
		t.Errorf("server saw %d requests, want %d", got, want)
	}
	if got, want := c.Stats().RetriesThrottled, int64(calls-1); got != want {
		t.Errorf("Stats().RetriesThrottled = %d, want %d", got, want)
	}
}

// TestRetryBudgetBoundsAmplification: many goroutines call a server
// refusing everything. Without a budget every call makes all its attempts;
// with one, the requests stay within calls x (1 + TokenRatio) + MaxTokens.
func TestRetryBudgetBoundsAmplification(t *testing.T) {
	const calls, goroutines = 400, 16
	budget := client.RetryBudget{MaxTokens: 10, TokenRatio: 0.1}
	tests := []struct {
		name   string
		budget *client.RetryBudget
	}{
		{"no_budget", nil},
		{"budget", &budget},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, addr := servertest.Start(t, server.DefaultConfig(), "kind=unavailable method=get")
			cfg := quickRetries()
			cfg.RetryBudget = tt.budget
			c := servertest.NewClient(t, addr, cfg)
			var next atomic.Int64
			var wg sync.WaitGroup
			for range goroutines {
				wg.Go(func() {
					for next.Add(1) <= calls {
						if r := c.Do(context.Background(), servertest.Get("a")); r.Status != proto.StatusUnavailable {
							t.Errorf("got %v (%v), want UNAVAILABLE", r.Status, r.Log)
						}
					}
				})
			}
			wg.Wait()
			got := requests(t, srv)
			if tt.budget == nil {
				if want := int64(calls * cfg.MaxAttempts); got != want {
					t.Errorf("server saw %d requests, want %d: every call's %d attempts", got, want, cfg.MaxAttempts)
				}
				return
			}
			if bound := int64(calls*(1+budget.TokenRatio) + budget.MaxTokens); got > bound {
				t.Errorf("server saw %d requests, want at most %d", got, bound)
			}
			if got := c.Stats().RetriesThrottled; got < calls/2 {
				t.Errorf("Stats().RetriesThrottled = %d, want most of the %d calls", got, calls)
			}
		})
	}
}

// TestRetryBudgetGiveUpStatus: a call the budget stops gives up as any
// other: UNKNOWN if a non-idempotent attempt may have executed, otherwise
// what its last attempt met.
func TestRetryBudgetGiveUpStatus(t *testing.T) {
	keyed := servertest.Debit("a", 1)
	keyed.Key = "k"
	tests := []struct {
		name   string
		fault  string
		call   client.Call
		status proto.Status
	}{
		{"unavailable_get", "kind=unavailable method=get", servertest.Get("a"), proto.StatusUnavailable},
		{"noreply_get", "kind=noreply method=get", servertest.Get("a"), proto.StatusDeadlineExceeded},
		{"noreply_keyed_debit", "kind=noreply method=debit", keyed, proto.StatusUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, addr := servertest.Start(t, server.DefaultConfig(), tt.fault)
			cfg := quickRetries()
			// One failure leaves 0 tokens of 1: no retry at all.
			cfg.RetryBudget = &client.RetryBudget{MaxTokens: 1, TokenRatio: 1}
			c := servertest.NewClient(t, addr, cfg)
			call := tt.call
			call.AttemptTimeout = 100 * time.Millisecond
			r := c.Do(context.Background(), call)
			if r.Status != tt.status || r.Attempts != 1 || r.Stop != client.StopRetryBudget {
				t.Errorf("got %v after %v, stop %q; want %v after 1 attempt, %q", r.Status, r.Log, r.Stop, tt.status, client.StopRetryBudget)
			}
		})
	}
}

// TestRetryBudgetRefills: answers give tokens back, so that retries are
// allowed again.
func TestRetryBudgetRefills(t *testing.T) {
	t.Parallel()
	srv, addr := servertest.Start(t, server.DefaultConfig())
	cfg := quickRetries()
	cfg.RetryBudget = &client.RetryBudget{MaxTokens: 3, TokenRatio: 0.5}
	c := servertest.NewClient(t, addr, cfg)
	// failOnce makes a call whose first attempt is refused UNAVAILABLE.
	failOnce := func(status proto.Status, attempts int, stop client.Stop) {
		t.Helper()
		srv.AddFault(server.Fault{Kind: server.FaultUnavailable, Method: bank.MethodGet, Count: 1})
		if r := c.Do(context.Background(), servertest.Get("a")); r.Status != status || r.Attempts != attempts || r.Stop != stop {
			t.Fatalf("got %v after %v, stop %q; want %v after %d attempts, %q", r.Status, r.Log, r.Stop, status, attempts, stop)
		}
	}
	// Tokens, of 3: the failure leaves 2, above half, so the call retries
	// and its answer gives back 0.5.
	failOnce(proto.StatusOK, 2, client.StopFinal)
	// 2.5 - 1 = 1.5: not above half.
	failOnce(proto.StatusUnavailable, 1, client.StopRetryBudget)
	for range 3 { // 1.5 + 3 x 0.5 = 3
		if r := c.Do(context.Background(), servertest.Get("a")); r.Status != proto.StatusOK {
			t.Fatalf("got %v (%v), want OK", r.Status, r.Log)
		}
	}
	failOnce(proto.StatusOK, 2, client.StopFinal) // 3 - 1 = 2: retries again
}

// breakerClient returns a client whose calls make one attempt, with the
// breaker br.
func breakerClient(t *testing.T, addr string, br client.BreakerConfig) *client.Client {
	cfg := quickRetries()
	cfg.MaxAttempts = 1
	cfg.Breaker = &br
	return servertest.NewClient(t, addr, cfg)
}

func wantBreaker(t *testing.T, c *client.Client, want string) {
	t.Helper()
	if got := c.BreakerState(); got != want {
		t.Fatalf("BreakerState() = %q, want %q", got, want)
	}
}

// TestBreakerOpensFailsFastAndRecovers: failures open the breaker; while
// open, calls fail at once and nothing reaches the server, not even a
// dial; after OpenFor the probes pass and close it.
func TestBreakerOpensFailsFastAndRecovers(t *testing.T) {
	t.Parallel()
	srv, addr := servertest.Start(t, server.DefaultConfig(), "kind=unavailable method=get count=4")
	c := breakerClient(t, addr, client.BreakerConfig{Window: 10 * time.Second, Bucket: 100 * time.Millisecond,
		MinCalls: 4, FailureRate: 0.5, OpenFor: 500 * time.Millisecond, Probes: 2})
	ctx := context.Background()
	for i := range 4 {
		wantBreaker(t, c, "closed")
		if r := c.Do(ctx, servertest.Get("a")); r.Status != proto.StatusUnavailable {
			t.Fatalf("call %d: got %v (%v), want UNAVAILABLE", i, r.Status, r.Log)
		}
	}
	wantBreaker(t, c, "open")

	reqs, conns := requests(t, srv), c.Stats().ConnsOpened
	c.Cut() // so that a call reaching for the network would have to dial
	const refused = 10
	for range refused {
		wantRefused(t, c.Do(ctx, servertest.Get("a")), proto.StatusCircuitOpen, client.StopCircuitOpen, client.ErrCircuitOpen)
	}
	if got := requests(t, srv); got != reqs {
		t.Errorf("server saw %d requests while the breaker was open, want none", got-reqs)
	}
	if got := c.Stats().ConnsOpened; got != conns {
		t.Errorf("client dialed %d connections while the breaker was open, want none", got-conns)
	}
	if got := c.Stats().RejectedCircuitOpen; got != refused {
		t.Errorf("Stats().RejectedCircuitOpen = %d, want %d", got, refused)
	}

	servertest.WaitFor(t, "the breaker to turn half-open", func() bool { return c.BreakerState() == "half-open" })
	for i, want := range []string{"half-open", "closed"} {
		if r := c.Do(ctx, servertest.Get("a")); r.Status != proto.StatusOK {
			t.Fatalf("probe %d: got %v (%v), want OK", i+1, r.Status, r.Log)
		}
		wantBreaker(t, c, want)
	}
}

// TestBreakerProbeFailureReopens: a failed probe opens the breaker again.
func TestBreakerProbeFailureReopens(t *testing.T) {
	t.Parallel()
	srv, addr := servertest.Start(t, server.DefaultConfig(), "kind=unavailable method=get count=3")
	c := breakerClient(t, addr, client.BreakerConfig{Window: 10 * time.Second, Bucket: 100 * time.Millisecond,
		MinCalls: 2, FailureRate: 1, OpenFor: 200 * time.Millisecond, Probes: 1})
	for range 2 {
		c.Do(context.Background(), servertest.Get("a"))
	}
	wantBreaker(t, c, "open")
	servertest.WaitFor(t, "the breaker to turn half-open", func() bool { return c.BreakerState() == "half-open" })
	if r := c.Do(context.Background(), servertest.Get("a")); r.Status != proto.StatusUnavailable || r.Attempts != 1 {
		t.Fatalf("probe: got %v (%v), want UNAVAILABLE after 1 attempt", r.Status, r.Log)
	}
	wantBreaker(t, c, "open")
	if got := requests(t, srv); got != 3 {
		t.Errorf("server saw %d requests, want 3", got)
	}
}

// TestBreakerHalfOpenLimitsProbes: while its one probe is in flight, the
// half-open breaker refuses every other call.
func TestBreakerHalfOpenLimitsProbes(t *testing.T) {
	t.Parallel()
	srv, addr := servertest.Start(t, server.DefaultConfig(), "kind=unavailable method=get count=1")
	c := breakerClient(t, addr, client.BreakerConfig{Window: 10 * time.Second, Bucket: 100 * time.Millisecond,
		MinCalls: 1, FailureRate: 1, OpenFor: 200 * time.Millisecond, Probes: 1})
	c.Do(context.Background(), servertest.Get("a"))
	wantBreaker(t, c, "open")
	servertest.WaitFor(t, "the breaker to turn half-open", func() bool { return c.BreakerState() == "half-open" })

	done := make(chan client.Result, 1)
	go func() { done <- c.Do(context.Background(), servertest.Get("probe", "sleep=1000")) }()
	servertest.WaitCounter(t, srv, "requests.get", 2)
	wantRefused(t, c.Do(context.Background(), servertest.Get("b")), proto.StatusCircuitOpen, client.StopCircuitOpen, client.ErrCircuitOpen)
	if r := <-done; r.Status != proto.StatusOK {
		t.Fatalf("probe: got %v (%v), want OK", r.Status, r.Log)
	}
	wantBreaker(t, c, "closed")
}

// TestBreakerStopsRetries: a call whose retry the breaker refuses gives up
// as after any failed attempt, with stop circuit_open; it is not counted
// as refused.
func TestBreakerStopsRetries(t *testing.T) {
	keyed := servertest.Debit("a", 1)
	keyed.Key = "k"
	tests := []struct {
		name   string
		fault  string
		call   client.Call
		status proto.Status
	}{
		{"unavailable_get", "kind=unavailable method=get", servertest.Get("a"), proto.StatusUnavailable},
		{"noreply_keyed_debit", "kind=noreply method=debit", keyed, proto.StatusUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, addr := servertest.Start(t, server.DefaultConfig(), tt.fault)
			cfg := quickRetries()
			cfg.Breaker = &client.BreakerConfig{Window: 10 * time.Second, Bucket: 100 * time.Millisecond,
				MinCalls: 2, FailureRate: 1, OpenFor: time.Minute, Probes: 1}
			c := servertest.NewClient(t, addr, cfg)
			call := tt.call
			call.AttemptTimeout = 100 * time.Millisecond
			r := c.Do(context.Background(), call)
			if r.Status != tt.status || r.Attempts != 2 || r.Stop != client.StopCircuitOpen {
				t.Errorf("got %v after %v, stop %q; want %v after 2 attempts, %q", r.Status, r.Log, r.Stop, tt.status, client.StopCircuitOpen)
			}
			if got := requests(t, srv); got != 2 {
				t.Errorf("server saw %d requests, want 2", got)
			}
			if got := c.Stats().RejectedCircuitOpen; got != 0 {
				t.Errorf("Stats().RejectedCircuitOpen = %d, want 0: the call made attempts", got)
			}
		})
	}
}

// TestBreakerSlowCalls: slow answers open a breaker set on slow calls,
// though every one is OK; they do not open one set on failures only, and
// fast answers do not open one set on slow calls.
func TestBreakerSlowCalls(t *testing.T) {
	const minCalls = 3
	slow := client.BreakerConfig{Window: 10 * time.Second, Bucket: 100 * time.Millisecond, MinCalls: minCalls,
		SlowCall: 40 * time.Millisecond, SlowRate: 0.5, OpenFor: time.Minute, Probes: 1}
	failures := slow
	failures.SlowCall, failures.SlowRate, failures.FailureRate = 0, 0, 0.5
	relaxed := slow
	relaxed.SlowCall = time.Second
	tests := []struct {
		name   string
		faults []string
		br     client.BreakerConfig
		want   string
	}{
		{"slow_opens", []string{"kind=sleep method=get delay=100ms"}, slow, "open"},
		{"slow_rate_off", []string{"kind=sleep method=get delay=100ms"}, failures, "closed"},
		{"fast_stays_closed", nil, relaxed, "closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, addr := servertest.Start(t, server.DefaultConfig(), tt.faults...)
			c := breakerClient(t, addr, tt.br)
			for i := range minCalls {
				wantBreaker(t, c, "closed")
				if r := c.Do(context.Background(), servertest.Get("a")); r.Status != proto.StatusOK {
					t.Fatalf("call %d: got %v (%v), want OK", i, r.Status, r.Log)
				}
			}
			wantBreaker(t, c, tt.want)
			r := c.Do(context.Background(), servertest.Get("a"))
			if tt.want == "open" {
				wantRefused(t, r, proto.StatusCircuitOpen, client.StopCircuitOpen, client.ErrCircuitOpen)
			} else if r.Status != proto.StatusOK {
				t.Errorf("call after %d: got %v (%v), want OK", minCalls, r.Status, r.Log)
			}
		})
	}
}

// TestInFlightCap: with MaxInFlight calls waiting, one more is refused at
// once, reaching no server; once they end, calls go through again.
func TestInFlightCap(t *testing.T) {
	t.Parallel()
	const limit = 3
	srv, addr := servertest.Start(t, server.DefaultConfig(), "kind=noreply method=debit")
	cfg := servertest.ClientConfig()
	cfg.MaxInFlight = limit
	c := servertest.NewClient(t, addr, cfg)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range limit {
		wg.Go(func() {
			call := servertest.Debit("a", 1)
			call.Timeout, call.AttemptTimeout = time.Minute, time.Minute
			if r := c.Do(ctx, call); r.Stop != client.StopCanceled {
				t.Errorf("waiting call: got %v after %v, stop %q; want stop %q", r.Status, r.Log, r.Stop, client.StopCanceled)
			}
		})
	}
	servertest.WaitCounter(t, srv, "requests.debit", limit)
	if got := c.InFlight(); got != limit {
		t.Errorf("InFlight() = %d with %d calls waiting, want %d", got, limit, limit)
	}
	wantRefused(t, c.Do(context.Background(), servertest.Get("a")), proto.StatusClientBusy, client.StopClientBusy, client.ErrClientBusy)
	if got := servertest.Counter(t, srv, "requests.get"); got != 0 {
		t.Errorf("server saw %d gets, want 0", got)
	}
	if got := c.Stats().RejectedBusy; got != 1 {
		t.Errorf("Stats().RejectedBusy = %d, want 1", got)
	}
	cancel()
	wg.Wait()
	if got := c.InFlight(); got != 0 {
		t.Errorf("InFlight() = %d after the calls ended, want 0", got)
	}
	if r := c.Do(context.Background(), servertest.Get("a")); r.Status != proto.StatusOK {
		t.Errorf("call after: got %v (%v), want OK", r.Status, r.Log)
	}
}

// TestInFlightReleasedOnEveryPath: whichever way a call ends, its permit
// is back when Do returns. With a cap of 1, a permit kept would refuse
// every later call. Where it can, the test also sees the permit held
// while the call is in flight.
func TestInFlightReleasedOnEveryPath(t *testing.T) {
	type env struct {
		srv *server.Server
		c   *client.Client
	}
	// held checks, from inside a call, that it holds the one permit.
	held := func(t *testing.T, e env) {
		t.Helper()
		if got := e.c.InFlight(); got != 1 {
			t.Errorf("InFlight() = %d during the call, want 1", got)
		}
	}
	notIdem := servertest.Get("a")
	notIdem.Idempotent = false
	oneBreaker := &client.BreakerConfig{Window: 10 * time.Second, Bucket: 100 * time.Millisecond,
		MinCalls: 1, FailureRate: 1, OpenFor: time.Minute, Probes: 1}
	tests := []struct {
		name   string
		faults []string
		cfg    func(*client.Config)
		run    func(*testing.T, env) client.Result
		stop   client.Stop
	}{
		{"answer", nil, nil, func(t *testing.T, e env) client.Result {
			return e.c.Do(context.Background(), servertest.Get("a"))
		}, client.StopFinal},
		{"app_error", nil, nil, func(t *testing.T, e env) client.Result {
			return e.c.Do(context.Background(), servertest.Debit("a", bank.DefaultBalance+1))
		}, client.StopFinal},
		{"invalid_argument", nil, nil, func(t *testing.T, e env) client.Result {
			return e.c.Do(context.Background(), client.Call{Method: bank.MethodGet, Payload: make([]byte, proto.MaxFrameLen)})
		}, client.StopFinal},
		{"timeout_not_retryable", []string{"kind=noreply method=get"}, nil, func(t *testing.T, e env) client.Result {
			call := notIdem
			call.AttemptTimeout = 100 * time.Millisecond
			return e.c.Do(context.Background(), call)
		}, client.StopNotRetryable},
		{"timeout_deadline", []string{"kind=noreply method=get"}, nil, func(t *testing.T, e env) client.Result {
			call := servertest.Get("a")
			call.Timeout = 100 * time.Millisecond
			return e.c.Do(context.Background(), call)
		}, client.StopDeadline},
		{"caller_deadline", []string{"kind=noreply method=get"}, nil, func(t *testing.T, e env) client.Result {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			return e.c.Do(ctx, servertest.Get("a"))
		}, client.StopDeadline},
		{"cancel", []string{"kind=noreply method=get"}, nil, func(t *testing.T, e env) client.Result {
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan client.Result, 1)
			go func() { done <- e.c.Do(ctx, servertest.Get("a")) }()
			servertest.WaitCounter(t, e.srv, "requests.get", 1)
			held(t, e)
			cancel()
			return <-done
		}, client.StopCanceled},
		{"canceled_before_start", nil, nil, func(t *testing.T, e env) client.Result {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return e.c.Do(ctx, servertest.Get("a"))
		}, client.StopCanceled},
		{"conn_lost_cut", nil, nil, func(t *testing.T, e env) client.Result {
			done := make(chan client.Result, 1)
			go func() { done <- e.c.Do(context.Background(), servertest.Debit("a", 1, "sleep=3000")) }()
			servertest.WaitCounter(t, e.srv, "requests.debit", 1)
			held(t, e)
			e.c.Cut()
			return <-done
		}, client.StopNotRetryable},
		{"conn_lost_server_close", []string{"kind=close method=debit"}, nil, func(t *testing.T, e env) client.Result {
			return e.c.Do(context.Background(), servertest.Debit("a", 1))
		}, client.StopNotRetryable},
		{"client_closed", nil, nil, func(t *testing.T, e env) client.Result {
			done := make(chan client.Result, 1)
			go func() { done <- e.c.Do(context.Background(), servertest.Debit("a", 1, "sleep=3000")) }()
			servertest.WaitCounter(t, e.srv, "requests.debit", 1)
			held(t, e)
			e.c.Close()
			return <-done
		}, client.StopClosed},
		{"max_attempts", []string{"kind=unavailable method=get"}, func(c *client.Config) {
			c.BackoffInitial, c.BackoffMax = time.Millisecond, time.Millisecond
		}, func(t *testing.T, e env) client.Result {
			return e.c.Do(context.Background(), servertest.Get("a"))
		}, client.StopMaxAttempts},
		{"retry_budget", []string{"kind=unavailable method=get"}, func(c *client.Config) {
			c.RetryBudget = &client.RetryBudget{MaxTokens: 1, TokenRatio: 0.1}
		}, func(t *testing.T, e env) client.Result {
			return e.c.Do(context.Background(), servertest.Get("a"))
		}, client.StopRetryBudget},
		{"breaker_mid_call", []string{"kind=unavailable method=get"}, func(c *client.Config) {
			c.Breaker = oneBreaker
		}, func(t *testing.T, e env) client.Result {
			return e.c.Do(context.Background(), servertest.Get("a"))
		}, client.StopCircuitOpen},
		{"breaker_refuses", []string{"kind=unavailable method=get"}, func(c *client.Config) {
			c.Breaker, c.MaxAttempts = oneBreaker, 1
		}, func(t *testing.T, e env) client.Result {
			if r := e.c.Do(context.Background(), servertest.Get("a")); r.Status != proto.StatusUnavailable {
				t.Fatalf("first call: got %v (%v), want UNAVAILABLE", r.Status, r.Log)
			}
			return e.c.Do(context.Background(), servertest.Get("a"))
		}, client.StopCircuitOpen},
		{"rate_limited", nil, func(c *client.Config) {
			c.RateLimits = map[string]client.RateLimit{bank.MethodGet: {PerSecond: 0.001, Burst: 1}}
		}, func(t *testing.T, e env) client.Result {
			if r := e.c.Do(context.Background(), servertest.Get("a")); r.Status != proto.StatusOK {
				t.Fatalf("first call: got %v (%v), want OK", r.Status, r.Log)
			}
			return e.c.Do(context.Background(), servertest.Get("a"))
		}, client.StopRateLimited},
		{"trace_panics", nil, func(c *client.Config) {
			var panicked atomic.Bool // once: the next call must return
			c.Trace = func(*client.Call, []client.Attempt, []client.Span) {
				if !panicked.Swap(true) {
					panic("trace")
				}
			}
		}, func(t *testing.T, e env) (r client.Result) {
			defer func() {
				if p := recover(); p != "trace" {
					t.Errorf("recovered %v, want the Trace panic", p)
				}
				r.Stop = client.StopFinal // what the call would have returned
			}()
			return e.c.Do(context.Background(), servertest.Get("a"))
		}, client.StopFinal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, addr := servertest.Start(t, server.DefaultConfig(), tt.faults...)
			cfg := servertest.ClientConfig()
			cfg.MaxInFlight = 1
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			e := env{srv, servertest.NewClient(t, addr, cfg)}
			r := tt.run(t, e)
			if r.Stop != tt.stop {
				t.Errorf("call: got %v after %v, stop %q; want stop %q", r.Status, r.Log, r.Stop, tt.stop)
			}
			if got := e.c.InFlight(); got != 0 {
				t.Errorf("InFlight() = %d after the call returned, want 0", got)
			}
			// The next call gets the permit back: whatever else stops
			// it, the in-flight cap does not.
			call := servertest.Get("b")
			call.Timeout = 100 * time.Millisecond
			if r := e.c.Do(context.Background(), call); r.Status == proto.StatusClientBusy {
				t.Errorf("next call: got %v, want it admitted", r.Status)
			}
			if got := e.c.Stats().RejectedBusy; got != 0 {
				t.Errorf("Stats().RejectedBusy = %d, want 0", got)
			}
		})
	}
}

// TestRateLimitPerMethod: a limited method's calls beyond its burst are
// refused at once and reach no server; other methods are not limited;
// the bucket refills with time.
func TestRateLimitPerMethod(t *testing.T) {
	t.Parallel()
	srv, addr := servertest.Start(t, server.DefaultConfig())
	cfg := servertest.ClientConfig()
	// One token every 500ms: the test's calls take far less, and it waits
	// 750ms for the next.
	cfg.RateLimits = map[string]client.RateLimit{bank.MethodDebit: {PerSecond: 2, Burst: 2}}
	c := servertest.NewClient(t, addr, cfg)
	ctx := context.Background()
	for i := range 2 {
		if r := c.Do(ctx, servertest.Debit("a", 1)); r.Status != proto.StatusOK {
			t.Fatalf("debit %d: got %v (%v), want OK", i, r.Status, r.Log)
		}
	}
	wantRefused(t, c.Do(ctx, servertest.Debit("a", 1)), proto.StatusRateLimited, client.StopRateLimited, client.ErrRateLimited)
	for i := range 10 {
		if r := c.Do(ctx, servertest.Get("a")); r.Status != proto.StatusOK {
			t.Fatalf("get %d: got %v (%v), want OK: gets are not limited", i, r.Status, r.Log)
		}
	}
	if got := servertest.Counter(t, srv, "requests.debit"); got != 2 {
		t.Errorf("server saw %d debits, want 2", got)
	}
	if got := c.Stats().RejectedRateLimited; got != 1 {
		t.Errorf("Stats().RejectedRateLimited = %d, want 1", got)
	}
	time.Sleep(750 * time.Millisecond) // the bucket refills with time; no event to wait for
	if r := c.Do(ctx, servertest.Debit("a", 1)); r.Status != proto.StatusOK {
		t.Fatalf("debit after the refill: got %v (%v), want OK", r.Status, r.Log)
	}
}

// TestGovernanceConcurrent runs many goroutines through a client with all
// four mechanisms on, against a server that refuses some methods' calls,
// and checks what every call and the counters say: refusals make no
// attempt and are counted once, every attempt made reaches the server,
// and the cap holds throughout.
func TestGovernanceConcurrent(t *testing.T) {
	t.Parallel()
	const goroutines, calls, limit = 32, 40, 16
	srv, addr := servertest.Start(t, server.DefaultConfig(), "kind=unavailable method=debit")
	cfg := quickRetries()
	cfg.MaxInFlight = limit
	cfg.RateLimits = map[string]client.RateLimit{bank.MethodDebit: {PerSecond: 1000, Burst: 10}}
	cfg.RetryBudget = &client.RetryBudget{MaxTokens: 10, TokenRatio: 0.1}
	cfg.Breaker = &client.BreakerConfig{Window: time.Second, Bucket: 50 * time.Millisecond, MinCalls: 20,
		FailureRate: 0.5, OpenFor: 20 * time.Millisecond, Probes: 2}
	var overCap atomic.Int64
	var c *client.Client
	cfg.Trace = func(*client.Call, []client.Attempt, []client.Span) {
		// Trace runs while the call holds its permit.
		if n := c.InFlight(); n < 1 || n > limit {
			overCap.Add(1)
		}
	}
	c = servertest.NewClient(t, addr, cfg)

	var mu sync.Mutex // guards the counts below
	byStop := map[client.Stop]int64{}
	var attempts, circuitRefused int64
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range calls {
				call := servertest.Get(fmt.Sprint(g), "sleep=1")
				if i%3 == 0 {
					call = servertest.Debit(fmt.Sprint(g), 1)
					call.Key = fmt.Sprintf("k-%d-%d", g, i)
				}
				r := c.Do(context.Background(), call)
				switch r.Stop {
				case client.StopClientBusy, client.StopRateLimited:
					if r.Attempts != 0 {
						t.Errorf("refused call %q made %d attempts", r.Stop, r.Attempts)
					}
				case client.StopCircuitOpen:
					if r.Attempts == 0 && r.Status != proto.StatusCircuitOpen {
						t.Errorf("call refused by the breaker: got %v, want %v", r.Status, proto.StatusCircuitOpen)
					}
				}
				mu.Lock()
				byStop[r.Stop]++
				if r.Attempts == 0 && r.Stop == client.StopCircuitOpen {
					circuitRefused++ // not stopped mid-call
				}
				attempts += int64(r.Attempts)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.Logf("calls by stop: %v", byStop)
	st := c.Stats()
	for _, x := range []struct {
		name      string
		got, want int64
	}{
		{"RejectedBusy", st.RejectedBusy, byStop[client.StopClientBusy]},
		{"RejectedRateLimited", st.RejectedRateLimited, byStop[client.StopRateLimited]},
		{"RejectedCircuitOpen", st.RejectedCircuitOpen, circuitRefused},
		{"RetriesThrottled", st.RetriesThrottled, byStop[client.StopRetryBudget]},
		{"server requests", requests(t, srv), attempts},
	} {
		if x.got != x.want {
			t.Errorf("%s = %d, want %d", x.name, x.got, x.want)
		}
	}
	if n := overCap.Load(); n > 0 {
		t.Errorf("%d calls saw InFlight() outside [1,%d] while holding a permit", n, limit)
	}
	if got := c.InFlight(); got != 0 {
		t.Errorf("InFlight() = %d after every call returned, want 0", got)
	}
}

func TestConfigValidateGovernance(t *testing.T) {
	breaker := func(mut func(*client.BreakerConfig)) func(*client.Config) {
		return func(c *client.Config) {
			b := client.BreakerConfig{Window: time.Second, Bucket: 100 * time.Millisecond, MinCalls: 5, FailureRate: 0.5,
				SlowCall: time.Second, SlowRate: 0.5, OpenFor: time.Second, Probes: 1}
			mut(&b)
			c.Breaker = &b
		}
	}
	limit := func(m string, l client.RateLimit) func(*client.Config) {
		return func(c *client.Config) {
			c.RateLimits = map[string]client.RateLimit{bank.MethodGet: {PerSecond: 1, Burst: 1}, m: l}
		}
	}
	budget := func(b client.RetryBudget) func(*client.Config) {
		return func(c *client.Config) { c.RetryBudget = &b }
	}
	tests := []struct {
		name   string
		mutate func(*client.Config)
		field  string // named in the error; "" when the config is valid
	}{
		{"all_set", func(c *client.Config) {
			breaker(func(*client.BreakerConfig) {})(c)
			limit(bank.MethodDebit, client.RateLimit{PerSecond: 0.5, Burst: 3})(c)
			budget(client.RetryBudget{MaxTokens: 1000, TokenRatio: 1})(c)
			c.MaxInFlight = 1
		}, ""},
		{"breaker_failures_only", breaker(func(b *client.BreakerConfig) { b.SlowCall, b.SlowRate = 0, 0 }), ""},
		{"breaker_slow_only", breaker(func(b *client.BreakerConfig) { b.FailureRate = 0 }), ""},
		{"breaker_bucket_is_window", breaker(func(b *client.BreakerConfig) { b.Bucket = b.Window }), ""},
		{"budget_smallest", budget(client.RetryBudget{MaxTokens: 0.001, TokenRatio: 0.001}), ""},

		{"max_in_flight_negative", func(c *client.Config) { c.MaxInFlight = -1 }, "MaxInFlight"},
		{"budget_tokens_zero", budget(client.RetryBudget{TokenRatio: 0.1}), "RetryBudget.MaxTokens"},
		{"budget_tokens_1001", budget(client.RetryBudget{MaxTokens: 1001, TokenRatio: 0.1}), "RetryBudget.MaxTokens"},
		{"budget_ratio_zero", budget(client.RetryBudget{MaxTokens: 10}), "RetryBudget.TokenRatio"},
		{"budget_ratio_below_resolution", budget(client.RetryBudget{MaxTokens: 10, TokenRatio: 0.0009}), "RetryBudget.TokenRatio"},
		{"budget_ratio_above_one", budget(client.RetryBudget{MaxTokens: 10, TokenRatio: 1.1}), "RetryBudget.TokenRatio"},
		{"breaker_window_zero", breaker(func(b *client.BreakerConfig) { b.Window = 0 }), "Breaker.Window"},
		{"breaker_bucket_zero", breaker(func(b *client.BreakerConfig) { b.Bucket = 0 }), "Breaker.Bucket"},
		{"breaker_bucket_over_window", breaker(func(b *client.BreakerConfig) { b.Bucket = 2 * b.Window }), "Breaker.Bucket"},
		{"breaker_too_many_buckets", breaker(func(b *client.BreakerConfig) { b.Bucket = time.Microsecond }), "Breaker.Bucket"},
		{"breaker_min_calls_zero", breaker(func(b *client.BreakerConfig) { b.MinCalls = 0 }), "Breaker.MinCalls"},
		{"breaker_failure_rate_negative", breaker(func(b *client.BreakerConfig) { b.FailureRate = -0.1 }), "Breaker.FailureRate"},
		{"breaker_failure_rate_above_one", breaker(func(b *client.BreakerConfig) { b.FailureRate = 1.5 }), "Breaker.FailureRate"},
		{"breaker_slow_rate_above_one", breaker(func(b *client.BreakerConfig) { b.SlowRate = 2 }), "Breaker.SlowRate"},
		{"breaker_both_rates_zero", breaker(func(b *client.BreakerConfig) { b.FailureRate, b.SlowRate = 0, 0 }), "Breaker.FailureRate and Breaker.SlowRate"},
		{"breaker_slow_call_zero", breaker(func(b *client.BreakerConfig) { b.SlowCall = 0 }), "Breaker.SlowCall"},
		{"breaker_slow_call_negative", breaker(func(b *client.BreakerConfig) { b.SlowCall, b.SlowRate = -1, 0 }), "Breaker.SlowCall"},
		{"breaker_open_for_zero", breaker(func(b *client.BreakerConfig) { b.OpenFor = 0 }), "Breaker.OpenFor"},
		{"breaker_probes_zero", breaker(func(b *client.BreakerConfig) { b.Probes = 0 }), "Breaker.Probes"},
		{"rate_empty_method", limit("", client.RateLimit{PerSecond: 1, Burst: 1}), "RateLimits"},
		{"rate_per_second_zero", limit(bank.MethodDebit, client.RateLimit{Burst: 1}), `RateLimits["debit"].PerSecond`},
		{"rate_burst_zero", limit(bank.MethodDebit, client.RateLimit{PerSecond: 1}), `RateLimits["debit"].Burst`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := client.DefaultConfig()
			tt.mutate(&cfg)
			err := cfg.Validate()
			if tt.field == "" {
				if err != nil {
					t.Errorf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, client.ErrConfig) {
				t.Fatalf("Validate() = %v, want an error wrapping %v", err, client.ErrConfig)
			}
			// The text is for people; this checks it names the field.
			if !strings.Contains(err.Error(), tt.field) {
				t.Errorf("Validate() = %q, want it to name %s", err, tt.field)
			}
		})
	}
}
