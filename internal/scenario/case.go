package scenario

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/rpcbench/rpcbench/internal/leftover"
	"github.com/rpcbench/rpcbench/internal/report"
)

// Group names.
// GroupAll selects every scenario wherever a group is asked for. Each
// group's name is declared in its file, group_NAME.go.
const GroupAll = "all"

// Case is one named scenario.
type Case struct {
	// Name is stable snake_case; it doubles as the go test subtest name.
	Name  string
	Group string
	// Doc says in one sentence what the scenario proves.
	Doc string
	// Needs names the prerequisites the scenario needs beyond an
	// rpcserver binary, none for none: NeedsPostgres, NeedsNetwork,
	// NeedsAdapter(stack). Run does not check them. Whoever runs the
	// scenario checks them first, once for all its scenarios, and does
	// not call Run when one is missing:
	// rpcbench (cmd/rpcbench) reports a SKIP line saying what is missing
	// and how to get it, or a FAIL line when the prerequisite is required
	// (RPCBENCH_REQUIRE_PG=1, RPCBENCH_REQUIRE_NETNS=1); go test
	// (TestCases) skips the subtest, or fails it when required.
	Needs []string
	// NoServer marks a scenario that starts no rpcserver (it runs
	// in-process, or against an address nothing listens on), so that it
	// runs without the binary. TestNoServerScenarios holds it to that.
	NoServer bool
	// Pool names the scenarios this one may run beside (rpcbench -p):
	// those of the same pool. "" runs alone. PoolCounts holds those
	// whose meaning is neither a timing bound nor a state of the kernel or
	// the machine, so that another's load cannot change their outcome;
	// PoolKeepalive those that spend their time waiting on keepalive
	// timers, seconds long, with nothing to do: beside each other they
	// add no load, beside busy ones they would.
	Pool string
	// Column, for a scenario that judges a stack, names the scenario it
	// runs and the column it runs in: grpc_close_after_exec_grpcgo_retry
	// is grpc_close_after_exec in grpc-go's retry configuration. Zero for
	// the others. rpcbench selects by it (run SCENARIO, --stack,
	// --config).
	Column Column
	// Body is what the scenario does: it records fields and checks on t.
	Body func(t *T)
	// fake, when set, is what Run does instead (see Fake).
	fake func(ctx context.Context, env Env) report.Line
}

// Column is where a judging scenario runs: the scenario's own name, the
// stack under test and its configuration ("client" and "server" for
// rpcbench's own client and the server section).
type Column struct {
	Scenario, Stack, Config string
}

// The pools of scenarios that may run at the same time (Case.Pool).
const (
	PoolCounts    = "counts"
	PoolKeepalive = "keepalive"
)

// Requires reports whether need is one of c's Needs.
func (c Case) Requires(need string) bool { return slices.Contains(c.Needs, need) }

// NeedsNetwork is the Needs of a scenario that runs on test hosts in
// network namespaces: nethost.Available must return nil (root, iproute2).
const NeedsNetwork = "netns"

// Fake returns a Case whose Run is run, for testing programs that run
// scenarios. run must behave as Run does: never panic, clean up what it
// started, return early when ctx ends.
func Fake(name, group, doc string, run func(ctx context.Context, env Env) report.Line) Case {
	return Case{Name: name, Group: group, Doc: doc, fake: run}
}

// Env is what scenarios need from their caller.
type Env struct {
	// ServerBin is the path of the rpcserver binary.
	ServerBin string
	// LogDir receives one server log per server started, named
	// server-<case>.log (server-<case>-2.log for a second one). Empty
	// means a fresh temporary directory per run, removed afterwards.
	LogDir string
	// Postgres hands out databases to the scenarios that need
	// PostgreSQL; without it they fail with ErrNoPostgres.
	Postgres Databases
	// Adapters maps a stack, such as "grpc-go", to how its adapter
	// starts, for the NeedsAdapter scenarios; a stack it does not name
	// makes them ERROR.
	Adapters map[string]Adapter
	// AdapterEnv, when not empty, is added to this process's environment
	// for every adapter started: a negative control names a fake stack
	// in it (package fakestack).
	AdapterEnv []string
}

// Adapter is how the harness starts a stack's adapter: each a program
// and its arguments, as a client under test (adapters/PROTOCOL.md) and
// as a server under test (adapters/SERVER-PROTOCOL.md); nil for a side
// it does not have.
type Adapter struct{ Client, Server []string }

// BinAdapter is the adapter of a shipped stack: one program, a client
// as it is and a server with the argument "serve".
func BinAdapter(bin string) Adapter {
	return Adapter{Client: []string{bin}, Server: []string{bin, "serve"}}
}

// AdapterEnviron is the whole environment of an adapter started under
// env: nil, this process's, unless env.AdapterEnv adds to it.
func (env Env) AdapterEnviron() []string {
	if len(env.AdapterEnv) == 0 {
		return nil
	}
	return append(os.Environ(), env.AdapterEnv...)
}

// Run executes the scenario and returns its line. It never panics: a
// scenario that aborts reports FAIL with the reason, and one stopped by
// ctx reports INTERRUPTED. Every process and
// connection the scenario opened is closed before Run returns.
func (c Case) Run(ctx context.Context, env Env) report.Line {
	if c.fake != nil {
		return c.fake(ctx, env)
	}
	t := &T{Ctx: ctx, Env: env, Name: c.Name}
	if env.LogDir == "" {
		dir, err := leftover.MkdirTemp("", c.Name)
		if err != nil {
			return failLine(c.Name, err.Error())
		}
		t.Env.LogDir = dir
		t.Cleanup(func() { os.RemoveAll(dir) })
	}
	func() {
		defer t.runCleanups()
		if env.LogDir != "" {
			// Before the cleanups: the log directory may be theirs.
			defer func() {
				if err := t.Trace.write(env.LogDir, c.Name); err != nil {
					t.Failures = append(t.Failures, "client trace: "+err.Error())
				}
			}()
		}
		defer func() {
			switch r := recover().(type) {
			case nil, abort:
			default:
				t.Failures = append(t.Failures, fmt.Sprintf("panic: %v\n%s", r, debug.Stack()))
			}
		}()
		c.Body(t)
	}()
	if t.Servers == 0 && env.LogDir != "" {
		t.noServerNote()
	}
	if c.NoServer && t.Servers > 0 {
		t.Failures = append(t.Failures, "registered NoServer, but started a server: rpcbench would run it without the rpcserver binary")
	}

	if ctx.Err() != nil {
		return Stopped(ctx, c.Name, t.Fields, t.Failures)
	}
	if t.skip != "" {
		return report.Skip(c.Name, t.skip)
	}
	line := report.Line{Name: c.Name, Verdict: report.PassIf(len(t.Failures) == 0), Fields: t.Fields}
	switch {
	case len(t.Errors) > 0:
		line.Verdict = report.Error
	case !line.Passed():
	case t.NA != "":
		line.Verdict = report.NotApplicable
		line.Fields = append(line.Fields, report.Field{Key: report.WhyKey, Value: t.NA})
		return line
	case t.Finding:
		line.Verdict = report.Finding
		return line
	}
	if !line.Passed() {
		line.Fields = append(line.Fields, report.Field{Key: report.WhyKey, Value: strings.Join(append(slices.Clone(t.Errors), t.Failures...), "; ")})
	}
	return line
}

// TimeoutError is the cause a runner gives a scenario's context to bound
// it (rpcbench's --timeout): a scenario stopped by it FAILs, naming the
// bound, where one stopped by any other cause is INTERRUPTED.
type TimeoutError struct {
	After time.Duration
	// Bound names what set it, such as "--timeout"; "" names nothing.
	Bound string
}

func (e *TimeoutError) Error() string {
	if e.Bound == "" {
		return fmt.Sprintf("timed out after %v", e.After)
	}
	return fmt.Sprintf("timed out after %v (%s)", e.After, e.Bound)
}

// Stopped is the line of scenario name, whose context ended before it
// finished, with the fields it recorded and the checks that had failed.
// Stopped by a *TimeoutError, it FAILs with why naming the bound first;
// stopped by the caller otherwise, what it checked says nothing either
// way, so it is INTERRUPTED. Run returns it, and so must a Fake whose
// context ends.
func Stopped(ctx context.Context, name string, fields []report.Field, failures []string) report.Line {
	line := report.Line{Name: name, Verdict: report.Interrupted, Fields: slices.Clone(fields)}
	cause := context.Cause(ctx)
	first := "interrupted: " + cause.Error()
	if te, ok := errors.AsType[*TimeoutError](cause); ok {
		line.Verdict, first = report.Fail, te.Error()
	}
	why := strings.Join(append([]string{first}, failures...), "; ")
	line.Fields = append(line.Fields, report.Field{Key: report.WhyKey, Value: why})
	return line
}

func failLine(name, why string) report.Line {
	return report.Line{Name: name, Fields: []report.Field{{Key: report.WhyKey, Value: why}}}
}

// T is a running scenario: it collects fields and failed checks, and owns
// the cleanups of what the scenario started.
type T struct {
	// Ctx ends when the scenario must stop; what it runs honours it.
	Ctx context.Context
	// Env is what the caller gave the scenario.
	Env Env
	// Name is the scenario's name, which its logs are named by.
	Name string
	// Fields are the fields recorded so far, in order (Field, Volatile,
	// Expect).
	Fields []report.Field
	// Failures are the checks that failed so far; any makes the verdict
	// FAIL.
	Failures []string
	// Errors say why the scenario could not establish what happened
	// (Errored); any makes its verdict ERROR.
	Errors   []string
	cleanups []func()
	// Servers counts the rpcservers the scenario started.
	Servers int
	// Trace records the client's connection events for the trace file.
	Trace tracer
	// Finding and NA are what the pins judged (the gRPC judge): a
	// scenario whose checks all held is a FINDING when the stack showed a
	// pinned violation, N/A, saying why, when it supported none of the
	// invariants.
	Finding bool
	NA      string
	// skip, set by Skipf, says why this machine cannot run the scenario.
	skip string
}

// abort unwinds a scenario after Fatalf.
type abort struct{}

// Field adds a stable field: Diff compares it across runs.
func (t *T) Field(key string, v any) {
	t.Fields = append(t.Fields, report.Field{Key: key, Value: fmt.Sprint(v)})
}

// Volatile adds a field that legitimately varies between runs.
func (t *T) Volatile(key string, v any) {
	t.Fields = append(t.Fields, report.Field{Key: key, Value: fmt.Sprint(v), Kind: report.Volatile})
}

// Expect records the asserted field key==got and fails the scenario
// unless got equals want, so that an expectation is stated once and the
// evidence shows the value it was checked on, marked as checked.
func Expect[V comparable](t *T, key string, got, want V) bool {
	return Expectf(t, key, got, want, "")
}

// Expectf is expect with a format and arguments that a failure adds, to
// say what the mismatch means.
func Expectf[V comparable](t *T, key string, got, want V, format string, args ...any) bool {
	t.Fields = append(t.Fields, report.Field{Key: key, Value: fmt.Sprint(got), Kind: report.Asserted})
	if got == want {
		return true
	}
	msg := fmt.Sprintf("%s=%v, want %v", key, got, want)
	if format != "" {
		msg += ": " + fmt.Sprintf(format, args...)
	}
	t.Failures = append(t.Failures, msg)
	return false
}

// Check records a failure unless ok, and returns ok.
func (t *T) Check(ok bool, format string, args ...any) bool {
	if !ok {
		t.Failures = append(t.Failures, fmt.Sprintf(format, args...))
	}
	return ok
}

// Fatalf records a failure and stops the scenario.
func (t *T) Fatalf(format string, args ...any) {
	t.Failures = append(t.Failures, fmt.Sprintf(format, args...))
	panic(abort{})
}

// Skipf stops the scenario as one this machine cannot run, saying why:
// its verdict is SKIP, whatever it checked before. It is for what only
// the scenario knows, such as needing Linux's /proc; a prerequisite its
// runner can check first belongs in Case.Needs.
func (t *T) Skipf(format string, args ...any) {
	t.skip = fmt.Sprintf(format, args...)
	panic(abort{})
}

// Errored records that the scenario cannot establish what happened,
// because something it drives broke its contract (a client adapter that
// does not speak the client-under-test protocol, dies or hangs), and stops
// the scenario. Its verdict is then ERROR, whatever its checks said: what
// was observed is not a finding about the stack under test, and no check
// of it may pass.
func (t *T) Errored(format string, args ...any) {
	t.Errors = append(t.Errors, fmt.Sprintf(format, args...))
	panic(abort{})
}

// Cleanup registers f to run when the scenario ends, after those
// registered later: what the scenario started is stopped in reverse order.
func (t *T) Cleanup(f func()) { t.cleanups = append(t.cleanups, f) }

func (t *T) runCleanups() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
	t.cleanups = nil
}

// noServerNote writes the note that says this scenario started no server,
// so that a reader of the logs does not look for one. A note that cannot
// be written fails the scenario.
func (t *T) noServerNote() {
	p := filepath.Join(t.Env.LogDir, report.NoServerNote(t.Name))
	msg := t.Name + " starts no rpcserver: it runs in-process or against an address nothing listens on, so it has no server log.\n"
	if rec := report.SUTRecord(t.Name); fileExists(filepath.Join(t.Env.LogDir, rec)) {
		msg = t.Name + " starts no rpcserver: it judges a server adapter, whose own record is " + rec + ".\n"
	}
	if err := os.WriteFile(p, []byte(msg), 0o644); err != nil {
		t.Failures = append(t.Failures, "no-server note: "+err.Error())
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// logPath returns the log file for the next server this scenario starts.
func (t *T) logPath() string {
	t.Servers++
	return filepath.Join(t.Env.LogDir, report.ServerLog(t.Name, t.Servers))
}

// Millis formats a duration as whole milliseconds.
func Millis(d time.Duration) string { return fmt.Sprintf("%dms", d.Milliseconds()) }

// needsAdapterPrefix starts the Needs of a scenario that drives a
// client adapter.
const needsAdapterPrefix = "adapter:"

// NeedsAdapter is the Needs of a scenario that drives stack's client
// adapter: Env.Adapters must name its binary.
func NeedsAdapter(stack string) string { return needsAdapterPrefix + stack }

// Adapter returns the stack whose adapter c drives, by its Needs: the
// stack a NeedsAdapter value names.
func (c Case) Adapter() (stack string, ok bool) {
	for _, n := range c.Needs {
		if stack, ok := strings.CutPrefix(n, needsAdapterPrefix); ok {
			return stack, true
		}
	}
	return "", false
}

// Databases hands out fresh PostgreSQL databases, one per scenario.
type Databases interface {
	// NewDatabase creates an empty database and returns its DSN.
	NewDatabase(ctx context.Context, prefix string) (string, error)
	// DropDatabase removes a database NewDatabase made.
	DropDatabase(ctx context.Context, dsn string) error
}
