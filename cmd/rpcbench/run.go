package main

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/spf13/cobra"
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
}

func newRunCmd(a *app) *cobra.Command {
	o := &runOptions{app: a, Count: 1}
	cmd := &cobra.Command{
		Use:   "run NAME...",
		Short: "Run the named scenarios",
		Long: `Run the named scenarios, of any group, in the order given (a name given
twice runs once), printing each CASE line as it completes and then
"N passed, M failed". Nothing is written unless --evidence or --json is
given. 'rpcbench list' shows the names.

--count N runs them N times over, as 'rpcbench all --count' does:
"# run K/N" on stderr before each pass, the CASE lines unchanged, then one
line per scenario with its passes, such as
"normal_multiplex  29/30  failed in run 17", and the summary of every
line. --evidence gets the same; --json gets every line and, under
"per_case", each scenario's counts. Any failure in any pass exits 1.`,
		Args: usageArgs(func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("run needs at least one scenario name")
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
	f.StringVar(&o.JSON, "json", "", "also write the results as JSON to this file")
	_ = cmd.MarkFlagDirname("evidence")
	return cmd
}

func runRun(ctx context.Context, o *runOptions) error {
	list, err := selectNames(o.Scenarios, o.Names)
	if err != nil {
		return err
	}
	bin, err := resolveServer(o.Server, o.Executable)
	if err != nil {
		return err
	}
	_, err = runBatch(ctx, batch{
		Scenarios: list,
		Count:     o.Count,
		ServerBin: bin,
		Out:       o.Out,
		Status:    o.Err,
		Color:     o.Color,
		Evidence:  o.Evidence,
		JSON:      o.JSON,
	})
	return err
}
