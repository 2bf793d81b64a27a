package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rpcbench/rpcbench/internal/outfile"
	child "github.com/rpcbench/rpcbench/internal/proc"
	"github.com/rpcbench/rpcbench/internal/proxy"
)

// EnvProxyAddr is the variable that tells proxy's workload command where
// the proxy listens.
const EnvProxyAddr = "RPCBENCH_PROXY_ADDR"

// proxyOptions are proxy's flags.
type proxyOptions struct {
	*app
	Listen, Upstream string
	Faults           []string
	FaultsFile       string
	Record           string
	// Workload is the command after --, nil for none.
	Workload []string
	judgeFlags
}

func newProxyCmd(a *app) *cobra.Command {
	o := &proxyOptions{app: a}
	cmd := &cobra.Command{
		Use:   "proxy --upstream ADDR [--listen ADDR] [--fault RULE]... [--faults FILE] [--record FILE] [-- COMMAND ARGS...]",
		Short: "A fault proxy between your gRPC client and server that records every attempt",
		Example: `  rpcbench proxy --upstream 127.0.0.1:50051 --listen 127.0.0.1:50052 --fault 'kind=drop method=shop.v1.Orders/Place count=1'
  rpcbench proxy --upstream 127.0.0.1:50051 --faults faults.txt --record attempts.jsonl -- ./my-client --addr '$RPCBENCH_PROXY_ADDR'
  rpcbench proxy --upstream 127.0.0.1:50051 --fault 'kind=unavailable method=*/Place retry_after=300ms' -- go test ./e2e
  rpcbench proxy --upstream 127.0.0.1:50051 --fault 'kind=unavailable_after method=Place count=1' \
      --method shop.v1.Orders/Place --observe shop.v1.Orders/Count --observe-field placed -- ./e2e.sh
  rpcbench proxy --upstream 127.0.0.1:50051 --serve './shop --port 50051 --db shop.db' --method Place \
      --count-sql 'SELECT count(*) FROM orders' --db sqlite:shop.db --faults faults.txt -- ./e2e.sh`,
		Long: `Stand between a gRPC client and its server (h2c on both sides) and inject
faults per call, stream by stream. Each rule, in the fault grammar of
rpcserver's -grpc-fault ("kind=K method=PATTERN count=N ..."), takes the
calls whose method ("pkg.Service/Method", or a bare method name)
matches its pattern: after the first skip=N, every every=N-th one (or
each with probability p=F, seed=S), until it has taken count=N (0: no
end). The first unspent rule that takes a call applies to it:

  before forwarding, the upstream never sees the call:
    unavailable         UNAVAILABLE, trailers-only (retry_after=D adds pushback)
    refuse              RST_STREAM(REFUSED_STREAM)
    goaway_below        GOAWAY below its stream; the connection then takes
                        no new stream and closes once the rest have ended
  forwarded, then the upstream's answer is lost:
    drop                the answer replaced by RST_STREAM (code=, default CANCEL)
    close               the client's connection closed (FIN) instead
    reset               the client's connection reset (TCP RST) instead
    goaway_cover        GOAWAY covering its stream, then the connection closed
    cut_data            HEADERS and half of the first DATA frame, then FIN
    unavailable_after   UNAVAILABLE in its place
    noreply             never answered: held until the client gives up
  forwarded, answered late:
    late                the whole answer held delay=D after it came
    delay               the call forwarded delay=D after it came

Every attempt is recorded: its connection and stream, method,
idempotency-key, grpc-previous-rpc-attempts and grpc-timeout, the rule
that took it, whether it was forwarded, what the upstream answered, what
the client was sent, and when. --record FILE writes them as JSON lines
when the proxy stops.

With -- COMMAND, the command runs with RPCBENCH_PROXY_ADDR set to the
proxy's address (and $RPCBENCH_PROXY_ADDR in its arguments replaced by
it), and the proxy stops when it exits. Without, the proxy prints
"PROXY LISTEN ADDR" and runs until SIGINT or SIGTERM. --serve CMD starts
the service too (sh -c CMD), before the workload, and stops it after.

Then the attempts are tied into logical calls (CALL; the rule is in
docs/judge-your-service.md) and each call is judged by the grpc group's
invariants: exec_at_most_once (for the methods not marked idempotent by
--idempotent or their idempotency_level), ok_only_if_executed,
within_deadline, timeout_is_time_left and pushback_honoured. Whether an
attempt executed is decided by an execution oracle, never by its answer:

  --observe METHOD --observe-field F   a read whose answer's field F moves
                                       with each execution (a counter)
  --count-sql QUERY --db DSN           a query that counts effects, on
                                       sqlite:PATH or PostgreSQL
  --exec-log REGEX                     lines of --serve's output, one per
                                       execution

The proxy reads it before forwarding each attempt of a --method and after
the upstream's answer (--settle later), one such attempt at a time. With
no oracle, executions are unknown and exec_at_most_once is n/a.

The verdict is a CASE line per invariant, with the evidence directory
(default rpcbench-proxy/), --json and --junit as 'rpcbench all' writes
them: a broken invariant is a FAIL, and rpcbench exits 1; a workload that
failed makes rpcbench exit 1 too.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && cmd.ArgsLenAtDash() != 0 {
				return usageErrorf(cmd.UsageString(), "proxy takes a command only after -- (got %q)", strings.Join(args, " "))
			}
			if len(args) > 0 {
				o.Workload = args
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return runProxy(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.Upstream, "upstream", "", "the server's address, HOST:PORT (h2c)")
	f.StringVar(&o.Listen, "listen", "127.0.0.1:0", "where clients connect (port 0: any free one, printed)")
	f.StringArrayVar(&o.Faults, "fault", nil, "a fault rule (repeatable; the first unspent one that matches a call takes it)")
	f.StringVar(&o.FaultsFile, "faults", "", "a file of fault rules, one a line (# comments)")
	f.StringVar(&o.Record, "record", "", `write every attempt as JSON lines to this file when the proxy stops ("-": stdout)`)
	o.judgeFlags.add(cmd)
	return cmd
}

// readRules parses --fault values and --faults' lines, naming a bad
// line's file and number.
func readRules(values []string, file string) ([]*proxy.Rule, error) {
	var rules []*proxy.Rule
	for _, v := range values {
		r, err := proxy.ParseRule(v)
		if err != nil {
			return nil, usageErrorf("", "--fault: %v", err)
		}
		rules = append(rules, r)
	}
	if file == "" {
		return rules, nil
	}
	fh, err := os.Open(file)
	if err != nil {
		return nil, usageErrorf("", "--faults: %v", err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if strings.TrimSpace(line) == "" {
			continue
		}
		r, err := proxy.ParseRule(strings.TrimSpace(line))
		if err != nil {
			return nil, usageErrorf("", "%s:%d: %v", file, n, err)
		}
		rules = append(rules, r)
	}
	if err := sc.Err(); err != nil {
		return nil, usageErrorf("", "--faults: %v", err)
	}
	return rules, nil
}

func runProxy(ctx context.Context, o *proxyOptions) error {
	if o.Upstream == "" {
		return usageErrorf("", "proxy needs --upstream HOST:PORT: the server to forward to")
	}
	for _, a := range []struct{ flag, v string }{{"--upstream", o.Upstream}, {"--listen", o.Listen}} {
		if _, _, err := net.SplitHostPort(a.v); err != nil {
			return usageErrorf("", "%s %q: %v: give HOST:PORT", a.flag, a.v, err)
		}
	}
	rules, err := readRules(o.Faults, o.FaultsFile)
	if err != nil {
		return err
	}
	if o.Record != "" && o.Record != stdoutPath {
		if err := outfile.Check(o.Record); err != nil {
			return usageErrorf("", "--record: %v", err)
		}
	}
	if err := o.judgeFlags.check(); err != nil {
		return err
	}
	for _, out := range []struct{ flag, path string }{{"--json", o.JSON}, {"--junit", o.JUnit}, {"--json-events", o.Events}} {
		if o.Record == stdoutPath && out.path == stdoutPath {
			return usageErrorf("", "--record - and %s - both want stdout: give one of them a file", out.flag)
		}
	}
	// The service's and the workload's output are copied to the same
	// writers as rpcbench's own messages, from goroutines of their own.
	a := *o.app
	a.Out, a.Err = &lockedWriter{w: a.Out}, &lockedWriter{w: a.Err}
	o.app = &a
	sv := &service{}
	err = startService(ctx, o, sv)
	if err == nil {
		err = openOracle(ctx, o, sv)
	}
	if err != nil {
		sv.close(o)
		return err
	}
	runErr := proxyRun(ctx, o, sv, rules)
	if err := sv.close(o); err != nil && runErr == nil {
		runErr = err
	}
	return runErr
}

// proxyRun runs the proxy until the workload ends (or SIGINT without
// one), then records, prints and judges what came through it.
func proxyRun(ctx context.Context, o *proxyOptions, sv *service, rules []*proxy.Rule) error {
	cfg := proxy.Config{Upstream: o.Upstream, Rules: rules, Settle: o.Settle}
	if sv.oracle != nil {
		cfg.Oracle, cfg.Judged = sv.oracle, o.judged
	}
	p, err := proxy.Listen(o.Listen, cfg)
	if err != nil {
		return err
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve() }()
	var runErr error
	if o.Workload == nil {
		fmt.Fprintf(o.Out, "PROXY LISTEN %s\n", p.Addr())
		fmt.Fprintf(o.Err, "rpcbench: proxy %s -> %s, %d rules; stop it with Ctrl-C\n", p.Addr(), o.Upstream, len(rules))
		select {
		case <-ctx.Done():
		case err := <-served:
			runErr = err
		}
	} else {
		runErr = runWorkload(ctx, o, p.Addr())
	}
	problem := ""
	if sv.oracle != nil {
		// Bounded: a judged attempt still holding the gate (its upstream
		// never answered) gives up when the proxy closes.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.LateWindow+settleWait)
		if err := p.SettleOracle(sctx, o.LateWindow); err != nil {
			problem = fmt.Sprintf("the oracle's last read, %v after the workload: %v", o.LateWindow, err)
		}
		cancel()
	}
	p.Close()
	if n := p.Unrecorded(); n > 0 {
		problem = fmt.Sprintf("the record was full: %d attempts after the first %d went unrecorded, and the verdict would cover part of the run", n, len(p.Attempts()))
	}
	if sv.oracle != nil && problem == "" {
		if n, unreadable := p.Unattributed(); n > 0 || unreadable {
			problem = fmt.Sprintf("the oracle moved by %d executions no attempt accounts for", n)
			if unreadable {
				problem = "the oracle failed a read, or moved by no whole number of executions, where no attempt accounts for the move"
			}
			problem += ": something else changes what it counts, or a handler executed long after its call ended; every count is suspect"
		}
	}
	attempts := p.Attempts()
	if o.Record != "" {
		if err := writeRecord(o, attempts); err != nil && runErr == nil {
			runErr = err
		}
	}
	if o.Record != stdoutPath {
		printAttempts(o.Out, attempts, p.Errors())
	}
	if o.Workload != nil && ctx.Err() != nil {
		return runErr // interrupted: no verdict on half a workload
	}
	if err := judgeCalls(ctx, o, sv, attempts, problem); err != nil {
		return err
	}
	return runErr
}

// settleWait bounds the oracle's last read beyond --late-window.
const settleWait = 10 * time.Second

// runWorkload runs the command after -- with the proxy's address, and
// returns its failure as rpcbench's.
func runWorkload(ctx context.Context, o *proxyOptions, addr string) error {
	args := workloadArgs(o, addr)
	fmt.Fprintf(o.Err, "rpcbench: proxy %s -> %s; running %s\n", addr, o.Upstream, strings.Join(args, " "))
	workload, err := child.Start(ctx, child.Spec{Bin: args[0], Args: args[1:], Env: append(os.Environ(), EnvProxyAddr+"="+addr),
		Stdout: o.Out, Stderr: o.Err, Interrupt: syscall.SIGTERM, WaitDelay: 5 * time.Second})
	if err != nil {
		return &errAdapter{fmt.Errorf("proxy: the workload %q: %w", args[0], err)}
	}
	ex := workload.Exit()
	switch {
	case ctx.Err() != nil:
		return context.Cause(ctx)
	case ex.Code == 0:
		return nil
	}
	fmt.Fprintf(o.Err, "rpcbench: the workload %s\n", ex)
	return &workloadExit{ex.Code}
}

// workloadExit is a workload that failed: rpcbench exits with its status.
type workloadExit struct{ code int }

func (e *workloadExit) Error() string {
	return fmt.Sprintf("the workload exited with status %d", e.code)
}
func (e *workloadExit) Unwrap() error { return errFailed }

// writeRecord writes the attempts as JSON lines.
func writeRecord(o *proxyOptions, attempts []proxy.Attempt) error {
	if o.Record == stdoutPath {
		return encodeAttempts(o.Out, attempts)
	}
	// Written whole or not at all: a crash leaves no half record.
	f, err := outfile.Create(o.Record)
	if err != nil {
		return err
	}
	defer f.Abort()
	if err := encodeAttempts(f, attempts); err != nil {
		return err
	}
	return f.Commit()
}

// encodeAttempts writes each attempt as a JSON line, with the logical
// call it is part of (proxy.Group).
func encodeAttempts(w io.Writer, attempts []proxy.Attempt) error {
	_, callOf := proxy.Group(attempts)
	enc := json.NewEncoder(w)
	for i, a := range attempts {
		line := struct {
			Call int `json:"call"`
			proxy.Attempt
		}{callOf[i], a}
		if err := enc.Encode(line); err != nil {
			return err
		}
	}
	return nil
}

// printAttempts prints one line per attempt.
func printAttempts(w io.Writer, attempts []proxy.Attempt, errs map[string]int) {
	if len(attempts) == 0 {
		fmt.Fprintln(w, "no calls came through the proxy")
	} else {
		calls, callOf := proxy.Group(attempts)
		fmt.Fprintf(w, "%s in %s (CALL ties retries and hedges together: docs/judge-your-service.md)\n",
			plural(len(attempts), "attempt"), plural(len(calls), "logical call"))
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "CALL\tCONN\tSTREAM\tMETHOD\tPREV\tKEY\tRULE\tFORWARDED\tUPSTREAM\tEXECUTED\tCLIENT\tMS")
		for i, a := range attempts {
			ms := "-"
			if !a.Ended.IsZero() {
				ms = fmt.Sprint(a.Ended.Sub(a.Start).Milliseconds())
			}
			fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%s\t%s\t%s\t%v\t%s\t%s\t%s\t%s\n", callOf[i], a.Conn, a.Stream, a.Method, dash(a.Previous), dash(a.Key),
				dash(a.Rule), a.Forwarded, dash(a.Upstream), proxy.Executed(a), dash(clientOutcome(a)), ms)
		}
		tw.Flush()
	}
	if n := errs["client"] + errs["upstream"]; n > 0 {
		fmt.Fprintf(w, "%d connections closed for malformed input (client %d, upstream %d)\n", n, errs["client"], errs["upstream"])
	}
}

func clientOutcome(a proxy.Attempt) string {
	if a.Client == "" && a.ClientReset != "" {
		return "(reset " + a.ClientReset + ")"
	}
	return a.Client
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
