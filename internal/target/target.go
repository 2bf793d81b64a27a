// Package target judges a running gRPC service rpcbench did not write:
// any schema, any method, from outside. It sends, through rawgrpc, what
// the grpc group's server section sends a server adapter (grpc-timeout
// of 0n to 1m, a body after the deadline, a malformed message, a
// malformed frame, an oversized message) and judges the same invariants.
//
// Whether a call executed is decided by an oracle the user chooses,
// never by the answer: an observe oracle reads a field of another call
// before and after each trial (a balance, a counter) and counts how far
// it moved. With no oracle, executions are unknown and the invariants
// that need them are n/a.
package target

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rpcbench/rpcbench/internal/rawgrpc"
	"github.com/rpcbench/rpcbench/internal/schema"
)

// Group is the group of target's cases.
const Group = "target"

// Service is the running service judged, and how.
type Service struct {
	// Addr is where it listens for h2c (HTTP/2 without TLS).
	Addr string
	// Name is its column in the evidence (the stack field).
	Name string
	// Method and Request are the call every row sends: a method that
	// does something (a write) and its request's bytes.
	Method  schema.Method
	Request []byte
	// Slow, when set, is a request of Method whose handler takes
	// SlowFor before it executes (a sleep the service takes, a big
	// batch): the rows that reset a call, or let its deadline pass,
	// while its handler runs send it.
	Slow    []byte
	SlowFor time.Duration
	// Oracle counts executions of Method; nil: unknown.
	Oracle *Observe
	// Trials, when above 0, is how many calls each timeout row makes
	// (by default 50 at 0n and 1n, 100 from 1u).
	Trials int
	// Settle is how long after each trial's answer the oracle reads: a
	// handler still running when its answer left may execute after it.
	Settle time.Duration
	// LateWindow is how long after a row's last call the oracle reads a
	// last time, for an execution later than Settle (at least Settle).
	LateWindow time.Duration
	// Lifecycle, when rpcbench started the service, lets the rows that
	// stop it (SIGTERM, SIGKILL) do so; nil makes them n/a.
	Lifecycle Lifecycle
}

// MaxAnswer bounds the DATA rpcbench holds of one answer of the service:
// a service is not trusted to send a small one.
const MaxAnswer = 4 << 20

// dial opens a connection to the service.
func (s *Service) dial(ctx context.Context) (*rawgrpc.Conn, error) {
	c, err := rawgrpc.DialOptions(ctx, s.Addr, rawgrpc.Options{MaxBody: MaxAnswer})
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", s.Addr, err)
	}
	return c, nil
}

// Observe is an observe oracle: Method, called with Request, answers a
// message whose integer Field moves by PerExec with each execution of the
// judged method.
type Observe struct {
	Method  schema.Method
	Request []byte
	Field   string
	// PerExec is how far Field moves per execution; 0 until calibrated.
	PerExec int64
}

// Describe says what the oracle reads, for evidence.
func (o *Observe) Describe() string {
	return fmt.Sprintf("observe %s .%s (%+d per execution)", o.Method.Name(), o.Field, o.PerExec)
}

// ErrOracle wraps what makes an oracle's count untrustworthy: a read that
// fails, or a move that is not a whole number of executions. A row that
// meets one is an ERROR naming it.
var ErrOracle = errors.New("oracle")

// Read calls the observe method once on c and returns its field.
func (o *Observe) Read(ctx context.Context, c *rawgrpc.Conn) (int64, error) {
	st, err := c.Open(rawgrpc.Request{Path: o.Method.Path, Timeout: "10S", Message: o.Request})
	if err != nil {
		return 0, fmt.Errorf("%w: read %s: %v", ErrOracle, o.Method.Name(), err)
	}
	res, err := st.Wait(ctx)
	if err != nil {
		st.Reset(0x8)
		return 0, fmt.Errorf("%w: read %s: %v", ErrOracle, o.Method.Name(), err)
	}
	if !res.HasCode || res.Code != 0 || len(res.Messages) != 1 {
		return 0, fmt.Errorf("%w: read %s answered %s with %d messages%s", ErrOracle, o.Method.Name(), res.Outcome(), len(res.Messages), badBody(res))
	}
	v, err := o.Method.Int(res.Messages[0], o.Field)
	if err != nil {
		return 0, fmt.Errorf("%w: read %s: %v", ErrOracle, o.Method.Name(), err)
	}
	return v, nil
}

func badBody(r rawgrpc.Result) string {
	if r.BadBody != "" {
		return " (" + r.BadBody + ")"
	}
	return ""
}

// executions turns a move of the observed field into executions.
func (o *Observe) executions(moved int64) (int, error) {
	if o.PerExec == 0 {
		return 0, fmt.Errorf("%w: not calibrated", ErrOracle)
	}
	if moved%o.PerExec != 0 || moved/o.PerExec < 0 {
		return 0, fmt.Errorf("%w: .%s moved by %d, not a whole number of executions of %+d: does something else change it?", ErrOracle, o.Field, moved, o.PerExec)
	}
	return int(moved / o.PerExec), nil
}

// Calibrate learns PerExec, when not given, from one plain call of the
// judged method: it must answer OK, and the observed field must move.
// It returns the call's answer.
func (s *Service) Calibrate(ctx context.Context) (string, error) {
	c, err := s.dial(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	o := s.Oracle
	before, err := o.Read(ctx, c)
	if err != nil {
		return "", err
	}
	res, err := s.call(ctx, c, "10S")
	if err != nil {
		return "", err
	}
	if !res.HasCode || res.Code != 0 {
		return res.Outcome(), fmt.Errorf("%w: the calibration call of %s answered %s%s: give --per-exec, or a request it serves", ErrOracle, s.Method.Name(), res.Outcome(), badBody(res))
	}
	if err := sleep(ctx, s.Settle); err != nil {
		return "", err
	}
	after, err := o.Read(ctx, c)
	if err != nil {
		return "", err
	}
	if o.PerExec == 0 {
		if after == before {
			return "OK", fmt.Errorf("%w: the calibration call of %s answered OK and .%s of %s did not move (%d): it cannot count executions", ErrOracle, s.Method.Name(), o.Field, o.Method.Name(), before)
		}
		o.PerExec = after - before
		return "OK", nil
	}
	if n, err := o.executions(after - before); err != nil || n != 1 {
		return "OK", fmt.Errorf("%w: the calibration call of %s answered OK and .%s moved by %d, not the %+d of --per-exec", ErrOracle, s.Method.Name(), o.Field, after-before, o.PerExec)
	}
	return "OK", nil
}

// call sends the judged call with grpc-timeout timeout ("" for none) and
// waits for its end.
func (s *Service) call(ctx context.Context, c *rawgrpc.Conn, timeout string) (rawgrpc.Result, error) {
	st, err := c.Open(rawgrpc.Request{Path: s.Method.Path, Timeout: timeout, Message: s.Request})
	if err != nil {
		return rawgrpc.Result{}, fmt.Errorf("target %s: %w", s.Addr, err)
	}
	return s.wait(ctx, st)
}

// answerTimeout bounds how long a row waits for an answer the service
// owes: past it, the stream is reset and the row says the service never
// answered.
const answerTimeout = 10 * time.Second

// wait waits for st's end, at most answerTimeout; a stream still open
// then is reset, and its result says NO_ANSWER.
func (s *Service) wait(ctx context.Context, st *rawgrpc.Stream) (rawgrpc.Result, error) {
	wctx, cancel := context.WithTimeout(ctx, answerTimeout)
	defer cancel()
	res, err := st.Wait(wctx)
	if err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		st.Reset(0x8)
		return rawgrpc.Result{}, errNoAnswer
	}
	return res, nil
}

var errNoAnswer = errors.New("no answer within 10s")

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
