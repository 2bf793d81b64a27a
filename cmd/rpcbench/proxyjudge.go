package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/rpcbench/rpcbench/internal/oracle"
	"github.com/rpcbench/rpcbench/internal/outfile"
	child "github.com/rpcbench/rpcbench/internal/proc"
	"github.com/rpcbench/rpcbench/internal/proxy"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/schema"
)

// judgeFlags are proxy's flags for judging the calls it saw.
type judgeFlags struct {
	// Methods are the patterns of the methods whose attempts the oracle
	// counts; Idempotent those exec_at_most_once does not judge.
	Methods, Idempotent []string
	// Protos, ImportPaths and DescriptorSet give the schema, as
	// target's; none: server reflection, when a schema is needed.
	Protos, ImportPaths []string
	DescriptorSet       string
	// The observe oracle.
	Observe, ObserveData, ObserveField string
	PerExec                            int64
	// The SQL oracle.
	CountSQL, DB string
	// Serve is the service's command; ExecLog the pattern of its output
	// lines that count executions.
	Serve, ExecLog string
	// Settle, LateWindow and Slack say when the oracle reads and how
	// late a call may end.
	Settle, LateWindow, Slack time.Duration
	Name, Evidence, JSON      string
	control
}

func (j *judgeFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringArrayVar(&j.Methods, "method", nil, "a method whose executions the oracle counts, pkg.Service/Method or a pattern (repeatable; needed with an oracle)")
	f.StringArrayVar(&j.Idempotent, "idempotent", nil, "a method that may run twice, a pattern (repeatable): exec_at_most_once does not judge it")
	f.StringArrayVar(&j.Protos, "proto", nil, "a .proto file of the service's schema (repeatable); default: server reflection, when --observe needs one")
	f.StringArrayVarP(&j.ImportPaths, "import-path", "I", nil, "where --proto files and their imports are found (repeatable)")
	f.StringVar(&j.DescriptorSet, "descriptor-set", "", "the schema as a FileDescriptorSet file")
	f.StringVar(&j.Observe, "observe", "", "oracle: a read, SERVICE/METHOD, whose answer moves with each execution")
	f.StringVar(&j.ObserveData, "observe-data", "{}", "its request as JSON, or @FILE")
	f.StringVar(&j.ObserveField, "observe-field", "", "the integer field of its answer that moves (dotted for nested messages)")
	f.Int64Var(&j.PerExec, "per-exec", 1, "how far the oracle's count moves per execution (e.g. -10 for a balance debited by 10)")
	f.StringVar(&j.CountSQL, "count-sql", "", "oracle: an SQL query answering one integer that counts effects (needs --db)")
	f.StringVar(&j.DB, "db", "", "the database --count-sql reads: sqlite:PATH, postgres://... or a key=value PostgreSQL DSN")
	f.StringVar(&j.Serve, "serve", "", "start the service with sh -c CMD before the workload, and stop it (SIGTERM) after")
	f.StringVar(&j.ExecLog, "exec-log", "", "oracle: a regular expression matching one line of --serve's output per execution")
	f.DurationVar(&j.Settle, "settle", 20*time.Millisecond, "how long after an attempt's answer the oracle reads, for a handler that executes after answering")
	f.DurationVar(&j.LateWindow, "late-window", 300*time.Millisecond, "how long after the workload the oracle reads a last time")
	f.DurationVar(&j.Slack, "slack", 500*time.Millisecond, "how far past its deadline a call may end (or a retry's grpc-timeout exceed the time left) and hold")
	f.StringVar(&j.Name, "name", "service", "the service's name in the evidence (its column)")
	f.StringVar(&j.Evidence, "evidence", "rpcbench-proxy", `evidence directory to write ("" for none)`)
	f.StringVar(&j.JSON, "json", "", `also write the results as JSON to this file ("-": stdout)`)
	j.control.runFlags(cmd)
}

// check validates the judging flags before anything runs.
func (j *judgeFlags) check() error {
	oracles := 0
	for _, set := range []bool{j.Observe != "", j.CountSQL != "", j.ExecLog != ""} {
		if set {
			oracles++
		}
	}
	switch {
	case oracles > 1:
		return usageErrorf("", "--observe, --count-sql and --exec-log are three oracles: give one")
	case oracles == 1 && len(j.Methods) == 0:
		return usageErrorf("", "an oracle counts the executions of --method: give the method(s) it counts (pkg.Service/Method)")
	case oracles == 0 && len(j.Methods) > 0:
		return usageErrorf("", "--method names what an oracle counts: give one (--observe, --count-sql or --exec-log)")
	case j.Observe != "" && j.ObserveField == "":
		return usageErrorf("", "--observe needs --observe-field: the integer field of its answer that moves with each execution")
	case j.Observe == "" && (j.ObserveField != "" || j.ObserveData != "{}"):
		return usageErrorf("", "--observe-field and --observe-data are the observe oracle's: give --observe SERVICE/METHOD too")
	case (j.CountSQL == "") != (j.DB == ""):
		return usageErrorf("", "--count-sql and --db go together: a query, and the database it reads")
	case j.ExecLog != "" && j.Serve == "":
		return usageErrorf("", "--exec-log reads the output of a service rpcbench starts: give --serve CMD too")
	case j.PerExec == 0:
		return usageErrorf("", "--per-exec 0: an oracle that does not move cannot count executions")
	case j.ExecLog != "" && j.PerExec != 1:
		return usageErrorf("", "--per-exec is one line per execution for --exec-log")
	case len(j.Protos) > 0 && j.DescriptorSet != "":
		return usageErrorf("", "--proto and --descriptor-set both give the schema: give one")
	case len(j.ImportPaths) > 0 && len(j.Protos) == 0:
		return usageErrorf("", "-I/--import-path is where --proto files are found: give --proto too")
	case j.Settle < 0 || j.Settle > time.Minute, j.LateWindow < 0 || j.LateWindow > time.Minute, j.Slack < 0 || j.Slack > time.Minute:
		return usageErrorf("", "--settle, --late-window and --slack take durations from 0 to 1m")
	case !stackNameRE.MatchString(j.Name):
		return usageErrorf("", "--name %q: lowercase words joined by - (it names the service's column)", j.Name)
	}
	for _, p := range append(append([]string(nil), j.Methods...), j.Idempotent...) {
		if err := proxy.CheckPattern(p); err != nil {
			return usageErrorf("", "--method/--idempotent: %v", err)
		}
	}
	if j.ExecLog != "" {
		if _, err := regexp.Compile(j.ExecLog); err != nil {
			return usageErrorf("", "--exec-log: log pattern %q: %v", j.ExecLog, err)
		}
	}
	// The outputs are written after the workload has run against the
	// service: a path that cannot be written is refused before.
	for _, out := range []struct{ flag, path string }{{"--json", j.JSON}, {"--junit", j.JUnit}, {"--json-events", j.Events}} {
		if out.path != "" && out.path != stdoutPath {
			if err := outfile.Check(out.path); err != nil {
				return usageErrorf("", "%s: %v", out.flag, err)
			}
		}
	}
	return nil
}

// judged reports whether the oracle counts method's executions.
func (j *judgeFlags) judged(method string) bool {
	for _, p := range j.Methods {
		if proxy.MatchMethod(p, method) {
			return true
		}
	}
	return false
}

// service is what proxy starts and reads besides the proxy: the
// service (--serve), its schema and the oracle.
type service struct {
	proc   *child.Proc
	log    *oracle.Log
	oracle proxy.Oracle
	what   string
	closer func()
	// idempotent are the methods the schema marks so.
	schema *schema.Schema
}

// lockedWriter serialises writes to w: proxy's own messages, and the
// output of the service and the workload it runs, copied as they come.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// serveWait bounds how long --serve's service has to listen.
const serveWait = 30 * time.Second

// startService starts --serve, when given, and waits until the
// upstream accepts connections.
func startService(ctx context.Context, o *proxyOptions, sv *service) error {
	if o.Serve == "" {
		return nil
	}
	var out io.Writer = o.Err
	if o.ExecLog != "" {
		l, err := oracle.NewLog(o.ExecLog)
		if err != nil {
			return usageErrorf("", "--exec-log: %v", err)
		}
		sv.log = l
		out = io.MultiWriter(o.Err, l)
	}
	// A process group of its own: the stop's SIGTERM reaches the
	// service, not only the shell that started it.
	p, err := child.Start(context.WithoutCancel(ctx), child.Spec{Bin: "/bin/sh", Args: []string{"-c", o.Serve}, Stdout: out, Stderr: out,
		Group: true, WaitDelay: 5 * time.Second})
	if err != nil {
		if sv.log != nil {
			sv.log.Close()
			sv.log = nil
		}
		return &errAdapter{fmt.Errorf("proxy: --serve %q: %w", o.Serve, err)}
	}
	sv.proc = p
	fmt.Fprintf(o.Err, "rpcbench: started %q; waiting for %s\n", o.Serve, o.Upstream)
	if err := awaitListen(ctx, o.Upstream, p); err != nil {
		return &errAdapter{fmt.Errorf("proxy: --serve %q: %w", o.Serve, err)}
	}
	return nil
}

// awaitListen waits until addr accepts a connection, at most serveWait;
// p's exit first is an error saying how it ended.
func awaitListen(ctx context.Context, addr string, p *child.Proc) error {
	deadline := time.Now().Add(serveWait)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-p.Exited():
			return fmt.Errorf("it exited before %s listened: %s", addr, p.Exit())
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listened on %s within %v", addr, serveWait)
		}
	}
}

// stopService stops --serve's service (SIGTERM, then SIGKILL) and
// closes the oracle; a service that had exited early is reported.
func (sv *service) close(o *proxyOptions) error {
	if sv.closer != nil {
		sv.closer()
	}
	if sv.proc == nil {
		return nil
	}
	var err error
	select {
	case <-sv.proc.Exited():
		err = &errAdapter{fmt.Errorf("proxy: --serve %q exited while the proxy ran: %s", o.Serve, sv.proc.Exit())}
	default:
	}
	stopGroup(sv.proc)
	if sv.log != nil {
		sv.log.Close()
	}
	return err
}

// stopWait is how long a stopped service has between SIGTERM and
// SIGKILL.
const stopWait = 5 * time.Second

// stopGroup stops p's process group: SIGTERM, then SIGKILL stopWait
// later if p is still running, and waits for p.
func stopGroup(p *child.Proc) {
	p.SignalGroup(syscall.SIGTERM)
	t := time.NewTimer(stopWait)
	defer t.Stop()
	select {
	case <-p.Exited():
	case <-t.C:
		p.SignalGroup(syscall.SIGKILL)
		<-p.Exited()
	}
}

// openOracle loads the schema when the oracle or idempotency needs one,
// and opens the oracle.
func openOracle(ctx context.Context, o *proxyOptions, sv *service) error {
	if len(o.Protos) > 0 || o.DescriptorSet != "" || o.Observe != "" {
		var err error
		if sv.schema, err = loadSchema(ctx, o.Protos, o.ImportPaths, o.DescriptorSet, o.Upstream); err != nil {
			return err
		}
	}
	switch {
	case o.Observe != "":
		data, err := readData("--observe-data", o.ObserveData)
		if err != nil {
			return err
		}
		ob, err := observeOracle(sv.schema, o.Observe, data, o.ObserveField, o.PerExec)
		if err != nil {
			return err
		}
		obs := &oracle.Observe{Observe: ob, Addr: o.Upstream}
		if _, err := obs.Read(ctx); err != nil {
			obs.Close()
			return &errAdapter{fmt.Errorf("proxy: the oracle's first read: %w", err)}
		}
		sv.oracle, sv.what, sv.closer = obs, ob.Describe(), obs.Close
	case o.CountSQL != "":
		s, err := oracle.OpenSQL(ctx, o.DB, o.CountSQL, o.PerExec)
		if errors.Is(err, oracle.ErrUsage) {
			return usageErrorf("", "--count-sql: %v", err)
		}
		if err != nil {
			return err
		}
		sv.oracle, sv.what, sv.closer = s, s.Describe(), s.Close
	case o.ExecLog != "":
		sv.oracle, sv.what = sv.log, sv.log.Describe()
	default:
		sv.what = "none: executions unknown"
	}
	return nil
}

// idempotent reports whether method may run twice: --idempotent says
// so, or its schema's idempotency_level.
func (sv *service) idempotent(o *proxyOptions) func(string) bool {
	return func(method string) bool {
		for _, p := range o.Idempotent {
			if proxy.MatchMethod(p, method) {
				return true
			}
		}
		if sv.schema != nil {
			if m, err := sv.schema.Method(method); err == nil && m.Idempotency() != "" {
				return true
			}
		}
		return false
	}
}

// judgeCalls ties the attempts into calls, judges them, prints the calls
// and runs the verdict as cases, with their evidence.
//
// problem is why the oracle's counts cannot be trusted, "" when they
// can.
func judgeCalls(ctx context.Context, o *proxyOptions, sv *service, attempts []proxy.Attempt, problem string) error {
	if sv.oracle != nil && problem == "" && !slices.ContainsFunc(attempts, func(a proxy.Attempt) bool { return o.judged(a.Method) }) {
		problem = fmt.Sprintf("no call of --method %s came through the proxy: the oracle counted nothing", strings.Join(o.Methods, ", "))
	}
	calls, _ := proxy.Group(attempts)
	verdicts := proxy.Judge(calls, proxy.JudgeOptions{Idempotent: sv.idempotent(o), Slack: o.Slack})
	if len(verdicts) > 0 && o.Record != stdoutPath {
		fmt.Fprintf(o.Out, "\n%s judged (executions by the oracle: %s)\n", plural(len(verdicts), "logical call"), sv.what)
		proxy.WriteCalls(o.Out, verdicts, "")
		fmt.Fprintln(o.Out)
	}
	all := scenario.Registry(proxy.Cases(o.Name, sv.what, verdicts, problem))
	list, err := o.filter(all, all)
	if err != nil {
		return err
	}
	b := o.control.batch(o.app, list, "")
	b.Evidence = o.Evidence
	b.JSON = o.JSON
	if o.Record == stdoutPath {
		b.Out = o.Err
	}
	b.Announce = fmt.Sprintf(" judging %s's calls through the proxy (oracle: %s)", o.Name, sv.what)
	_, err = runBatch(context.WithoutCancel(ctx), b)
	return err
}

// workloadArgs is the workload with the proxy's address in its
// arguments.
func workloadArgs(o *proxyOptions, addr string) []string {
	args := make([]string, len(o.Workload))
	for i, a := range o.Workload {
		args[i] = strings.ReplaceAll(a, "$"+EnvProxyAddr, addr)
	}
	return args
}
