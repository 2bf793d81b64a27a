package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rpcbench/rpcbench/internal/report"
)

type runOptions struct {
	*app
	// Names are the scenarios to run, in this order.
	Names []string
	// Count is how many times the named scenarios run; 0 means 1.
	Count int
	// Evidence is the evidence directory; "" (the default) writes none.
	Evidence string
	// JSON is the --json file; "" writes none.
	JSON string
	control
}

func newRunCmd(a *app) *cobra.Command {
	o := &runOptions{app: a, Count: 1}
	cmd := &cobra.Command{
		Use: "run NAME...",
		Example: `  rpcbench run late_response_dropped_by_id
  rpcbench run --run 'late_.*'             # every scenario whose name matches
  rpcbench run --run '^hostile_' --skip 'churn'
  rpcbench run --count 20 --timeout 30s retry_with_idempotency_key`,
		Short: "Run the named scenarios",
		Long: `Run the named scenarios, of any group, in the order given (a name given
twice runs once), or with --run REGEX every scenario whose name matches
(of the named ones, when names are given too), printing each CASE line in run order and then
"N passed, M failed" (and the findings and n/a, named above it). A grpc
scenario's own name (grpc_close_after_exec) runs it in every column;
--stack and --config select columns. Nothing is written unless --evidence or --json is
given. 'rpcbench list' shows the names.

--count N runs them N times over, as 'rpcbench all --count' does:
"# run K/N" on stderr before each pass, the CASE lines unchanged, then one
line per scenario with its passes, such as
"normal_multiplex  29/30  failed in run 17", and the summary of every
line. --evidence gets the same; --json gets every line and, under
"per_case", each scenario's counts. Any failure in any pass exits 1.`,
		Args: usageArgs(func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && !cmd.Flags().Changed("run") {
				return errors.New("run needs at least one scenario name, or --run REGEX")
			}
			return nil
		}),
		ValidArgsFunction: func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			var out []cobra.Completion
			for _, s := range a.Scenarios {
				if strings.HasPrefix(s.Name, toComplete) && !slices.Contains(args, s.Name) {
					out = append(out, cobra.CompletionWithDesc(s.Name, s.Doc))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Names = args
			return runRun(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.Var(countFlag{&o.Count}, "count", "run the scenarios this many times over")
	f.StringVar(&o.Evidence, "evidence", "", "also write an evidence directory here (output.txt, env.txt, logs/)")
	f.StringVar(&o.JSON, "json", "", `also write the results as JSON to this file ("-": stdout, the CASE lines then go to stderr)`)
	o.control.flags(cmd)
	_ = cmd.MarkFlagDirname("evidence")
	return cmd
}

func runRun(ctx context.Context, o *runOptions) error {
	list := o.Scenarios
	if len(o.Names) > 0 {
		var err error
		if list, err = selectNames(o.Scenarios, o.Names); err != nil {
			return err
		}
	}
	list, err := o.filter(list, o.Scenarios)
	if err != nil {
		return err
	}
	bin, err := serverFor(list, o.Server, o.Executable)
	if err != nil {
		return err
	}
	b := o.control.batch(o.app, list, bin)
	b.Count = o.Count
	b.Evidence = o.Evidence
	b.JSON = o.JSON
	lines, err := runBatch(ctx, b)
	if err == nil && len(lines) > 0 && report.Tally(lines).Skipped == len(lines) {
		// What was asked for by name proved nothing here: a SKIP is never
		// a pass, and a command that ran nothing must not exit 0.
		fmt.Fprintf(o.Err, "rpcbench: none of the %s selected could run on this machine (each SKIP above says what it lacks)\n", plural(len(lines), "scenario"))
		return errFailed
	}
	return err
}
