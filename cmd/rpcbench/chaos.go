package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rpcbench/rpcbench/internal/chaos"
	"github.com/rpcbench/rpcbench/internal/report"
)

// chaosDefaultOut is where chaos writes by default; .gitignore names it.
const chaosDefaultOut = "chaos-out"

func newChaosCmd(a *app) *cobra.Command {
	o := chaos.DefaultOptions()
	o.Out = chaosDefaultOut
	var faults string
	cmd := &cobra.Command{
		Use: "chaos",
		Example: `  rpcbench chaos --seed 1 --duration 20s --store sqlite
  rpcbench chaos --store postgres --servers 2 --duration 1m
  rpcbench chaos --client naive            # negative control: FAIL, linearizable
  rpcbench chaos --faults kill             # in-memory store restarted: FAIL, exactly_once`,
		Short: "Run a random workload under a random fault schedule and check the history",
		Long: `Run C clients issuing random gets, keyed debits (retried with the same key)
and keyless debits (never re-sent after an unknown outcome) against
rpcserver processes, while a nemesis carries out a fault schedule drawn
from --seed: the server's own faults switched on and off, servers killed
and restarted on the same store, drained and restarted one or all in turn
(a rolling restart), paused and resumed, client connections cut. Every operation is recorded with its outcome (ok, failed, unknown) in
OUT/history.jsonl, and three checkers read the history:

  linearizable   each account's history could have happened one operation
                 at a time (porcupine; an unknown debit took effect at some
                 point after its invocation, or never)
  exactly_once   no idempotency key executed twice, every acknowledged keyed
                 debit executed once (from the servers' EXEC log lines)
  right_caller   every answer names the account its call asked for

One CHECK line per checker, then
  CHAOS seed=N ops=... ok=... failed=... unknown=... faults=... verdict=PASS|FAIL|UNKNOWN

The schedule is a function of the seed and the options only (OUT/schedule.txt);
the run's timing is not, so a replay meets the same faults at the same times,
not necessarily the same operations. On FAIL, OUT/linear-ACCOUNT.html is
porcupine's visualization of the first account that is not linearizable,
OUT/window.jsonl the operations around the violation, and the line
"replay:" the command that replays the run: this rpcbench, with every
option it was given.

Interrupted (Ctrl-C, SIGTERM) while the workload runs, chaos stops the
workload and the nemesis, checks the history recorded so far and prints
its lines as above, the CHAOS line ending interrupted_after=T: the verdict
covers only the T that ran.

Exit status: 0 PASS, 1 FAIL or UNKNOWN (a check could not decide), 2 usage error
or a run that could not be set up, 130/143 interrupted (checked or not).`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if cmd.Flags().Changed("faults") {
				if o.Faults, err = chaos.ParseFaults(faults); err != nil {
					return usageErrorf("", "--faults: %v", err)
				}
			} else {
				o.Faults = chaos.DefaultFaults(o.Store)
			}
			return runChaos(cmd.Context(), a, o)
		},
	}
	f := cmd.Flags()
	f.Int64Var(&o.Seed, "seed", o.Seed, "seed of the fault schedule and the workload")
	f.DurationVar(&o.Duration, "duration", o.Duration, "how long the workload runs")
	f.IntVar(&o.Clients, "clients", o.Clients, "concurrent clients")
	f.IntVar(&o.Accounts, "accounts", o.Accounts, "accounts the operations spread over (few, so that they contend)")
	f.StringVar(&o.Store, "store", o.Store, "memory, sqlite or postgres")
	f.IntVar(&o.Servers, "servers", o.Servers, "rpcserver processes on the store; each client knows them all")
	f.StringVar(&faults, "faults", "", "comma-separated nemesis kinds, all or none (default: all; all but kill, drain and rolling for the memory store): "+strings.Join(chaos.NemesisKinds, ","))
	f.StringVar(&o.Client, "client", o.Client, "normal, or naive: re-send any call whose outcome is unknown (a negative control)")
	f.StringVar(&o.Out, "out", o.Out, "directory for the history, the schedule, the server logs and the visualization")
	f.DurationVar(&o.CheckTimeout, "check-timeout", o.CheckTimeout, "bound on the linearizability check; past it the verdict is UNKNOWN")
	_ = cmd.RegisterFlagCompletionFunc("store", cobra.FixedCompletions([]string{chaos.StoreMemory, chaos.StoreSQLite, chaos.StorePostgres}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("client", cobra.FixedCompletions([]string{chaos.ClientNormal, chaos.ClientNaive}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.MarkFlagDirname("out")
	return cmd
}

func runChaos(ctx context.Context, a *app, o chaos.Options) error {
	if err := o.Validate(); err != nil {
		return usageErrorf("", "%v", err)
	}
	bin, err := resolveServer(a.Server, a.Executable)
	if err != nil {
		return err
	}
	o.ServerBin, o.Progress = bin, a.Err
	if o.Store == chaos.StorePostgres {
		sweepLeftovers(a.Err)
		pg, stop, err := startPostgres(ctx, a.Err)
		defer stop()
		if err != nil {
			return fmt.Errorf("--store postgres: %w", err)
		}
		o.Postgres = pg
	}
	start := time.Now()
	res, err := chaos.Run(ctx, o)
	interrupted := ctx.Err() != nil
	switch {
	case interrupted && len(res.Checks) == 0:
		// Stopped before the workload ran: there is nothing to check.
		return fmt.Errorf("%w: %w", errInterrupted, context.Cause(ctx))
	case !interrupted && err != nil:
		return err
	}
	// An interrupted run's history so far was checked: its verdict is
	// printed as any run's, the CHAOS line saying how long it ran.
	verdict := report.VerdictPainter(a.Out, a.Color)
	for _, l := range res.LinesWith(verdict) {
		fmt.Fprintln(a.Out, l)
	}
	took := time.Since(start).Round(time.Millisecond)
	if interrupted {
		fmt.Fprintf(a.Err, "chaos: interrupted; ran and checked what ran in %v; the history so far is in %s\n", took, o.Out)
	} else {
		fmt.Fprintf(a.Err, "chaos: ran and checked in %v; history in %s\n", took, o.Out)
	}
	if res.Verdict != report.Pass {
		fmt.Fprintf(a.Out, "replay: %s\n", res.ReplayAs(replayProgram(a), replayFlags(a)...))
	}
	switch {
	case interrupted && err != nil && !errors.Is(err, context.Cause(ctx)):
		// Writing the result failed as well.
		return fmt.Errorf("%w: %w; %w", errInterrupted, context.Cause(ctx), err)
	case interrupted:
		return fmt.Errorf("%w: %w", errInterrupted, context.Cause(ctx))
	case res.Verdict != report.Pass:
		return errFailed
	}
	return nil
}

// replayProgram is the path of the running rpcbench, so that the replay
// line runs the same binary; "rpcbench" if it cannot be found.
func replayProgram(a *app) string {
	if p, err := a.Executable(); err == nil {
		return p
	}
	return "rpcbench"
}

// replayFlags are rpcbench's own flags that change what a chaos run
// does, as the run was given them.
func replayFlags(a *app) []string {
	if a.Server != "" {
		return []string{"--server", a.Server}
	}
	return nil
}
