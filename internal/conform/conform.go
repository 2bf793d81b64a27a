// Package conform checks, over the wire and from the outside, that a
// running server behaves as internal/proto/SPEC.md says.
//
// It needs nothing from the server but SPEC.md's methods (get, debit and
// ctl.ping), connects only to the address it is given, and touches only
// accounts and idempotency keys whose names carry a random tag of its run,
// so its checks do not depend on what the server did before.
package conform

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/report"
)

// Defaults for Config.
const (
	DefaultTimeout = 5 * time.Second
	DefaultSlow    = 250 * time.Millisecond
)

// Config says which server to check and how long to wait for it.
type Config struct {
	// Addr is the server's host:port. Run connects to it and nowhere else.
	Addr string
	// Timeout bounds each check as a whole: its dials, writes, reads and
	// waits for the server to close a connection. A server that does not
	// answer within it fails the check instead of hanging the run. It also
	// bounds the first ctl.ping. It is the budget (budgetMs) of every
	// request that is not meant to expire. Must be at least 100ms.
	Timeout time.Duration
	// Slow is the sleep field, in whole milliseconds, of the requests that
	// must still be executing while others arrive. Must be at least 1ms and
	// at most Timeout/4.
	Slow time.Duration
	// Tag starts the name of every account and key the run uses; "" means
	// a random one ("cf-" and 8 hex digits), which Result.Tag reports.
	Tag string
	// Drain runs drain_finishes_taken after the other checks. It sends
	// ctl.drain, which stops the server (SPEC.md, "Drain").
	Drain bool
}

// DefaultConfig returns a Config for addr with the default timeouts.
func DefaultConfig(addr string) Config {
	return Config{Addr: addr, Timeout: DefaultTimeout, Slow: DefaultSlow}
}

// ErrConfig is wrapped by every error Validate returns.
var ErrConfig = errors.New("conform: invalid config")

// ErrPing is wrapped by Run's error when the first ctl.ping was not
// answered OK, so that no check could mean anything. That error is a
// *PingError, which says what the server did instead.
var ErrPing = errors.New("conform: ctl.ping not answered OK")

// Validate reports the first field out of range.
func (c *Config) Validate() error {
	switch {
	case c.Addr == "":
		return fmt.Errorf("%w: no address", ErrConfig)
	case c.Timeout < 100*time.Millisecond:
		return fmt.Errorf("%w: timeout %v must be at least 100ms", ErrConfig, c.Timeout)
	case c.Slow < time.Millisecond || c.Slow > c.Timeout/4:
		return fmt.Errorf("%w: slow %v must be in [1ms, timeout/4 = %v]", ErrConfig, c.Slow, c.Timeout/4)
	case len(c.Tag) > maxTagLen:
		return fmt.Errorf("%w: tag %q longer than %d bytes", ErrConfig, c.Tag, maxTagLen)
	}
	return nil
}

// maxTagLen keeps every key the checks build (tag, '-', a short suffix)
// within proto.MaxKeyLen.
const maxTagLen = 40

// Check is the outcome of one check.
type Check struct {
	Name string
	// Verdict is report.Pass or report.Fail.
	Verdict report.Verdict
	// Detail is what the check saw, as key=value fields; for a failure it
	// starts with why the check failed.
	Detail string
	// Elapsed is how long the check took.
	Elapsed time.Duration
}

// Line formats c as "CHECK name PASS|FAIL detail".
func (c Check) Line() string {
	return strings.TrimRight(fmt.Sprintf("CHECK %s %s %s", c.Name, c.Verdict, c.Detail), " ")
}

// Result is every check's outcome, in run order.
type Result struct {
	Addr string
	// Tag starts the name of every account and key the run used.
	Tag    string
	Checks []Check
}

// Passed counts the checks that passed.
func (r Result) Passed() int {
	n := 0
	for _, c := range r.Checks {
		if c.Verdict == report.Pass {
			n++
		}
	}
	return n
}

// Failed counts the checks that failed.
func (r Result) Failed() int { return len(r.Checks) - r.Passed() }

// Summary is the line that ends a run's output: "N passed, M failed".
func (r Result) Summary() string {
	return fmt.Sprintf("%d passed, %d failed", r.Passed(), r.Failed())
}

// Info names a check and says what it sends and expects.
type Info struct {
	Name string
	Doc  string
	// Drain marks the check that runs only with Config.Drain.
	Drain bool
}

// Checks lists the checks in run order, drain_finishes_taken (run with
// Config.Drain only) last.
func Checks() []Info {
	var out []Info
	for _, c := range checks {
		out = append(out, Info{Name: c.name, Doc: c.doc})
	}
	return append(out, Info{Name: drainCheck.name, Doc: drainCheck.doc, Drain: true})
}

// Run checks the server at cfg.Addr, one check after another, and calls
// each (if not nil) with every outcome as it is decided. First it sends
// ctl.ping on a connection of its own: if the server cannot be dialed or
// does not answer OK within cfg.Timeout, Run returns a *PingError, which
// wraps ErrPing, and runs no check. When ctx ends, Run stops after the
// current check and returns the outcomes so far with ctx's error.
func Run(ctx context.Context, cfg Config, each func(Check)) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	if cfg.Tag == "" {
		cfg.Tag = randomTag()
	}
	res := Result{Addr: cfg.Addr, Tag: cfg.Tag}
	if err := ping(ctx, cfg); err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		return res, err
	}
	ccfg := client.DefaultConfig()
	ccfg.Deadline = cfg.Timeout
	ccfg.AttemptTimeout = min(time.Second, cfg.Timeout)
	cl, err := client.New(cfg.Addr, ccfg)
	if err != nil {
		return res, fmt.Errorf("conform: %w", err)
	}
	defer cl.Close()
	run := checks
	if cfg.Drain {
		run = append(slices.Clone(checks), drainCheck)
	}
	for _, c := range run {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		out := runCheck(ctx, cfg, cl, c)
		res.Checks = append(res.Checks, out)
		if each != nil {
			each(out)
		}
	}
	return res, nil
}

// runCheck runs one check under its own timeout and turns what it
// recorded into a Check.
func runCheck(ctx context.Context, cfg Config, cl *client.Client, c check) Check {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	p := &probe{ctx: ctx, cfg: cfg, cl: cl, prefix: cfg.Tag + "-" + c.short}
	start := time.Now()
	err := c.run(p)
	p.closeAll()
	if err != nil {
		p.failf("%v", err)
	}
	out := Check{Name: c.name, Verdict: report.Pass, Elapsed: time.Since(start), Detail: strings.Join(p.fields, " ")}
	if len(p.fails) > 0 {
		out.Verdict = report.Fail
		out.Detail = strings.Join(p.fails, "; ")
		if len(p.fields) > 0 {
			out.Detail += " [" + strings.Join(p.fields, " ") + "]"
		}
	}
	return out
}

func randomTag() string {
	b := make([]byte, 4)
	rand.Read(b)
	return "cf-" + hex.EncodeToString(b)
}
