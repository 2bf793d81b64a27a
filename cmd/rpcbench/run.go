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
	// Evidence is the evidence directory; "" (the default) writes none.
	Evidence string
	// JSON is the --json file; "" writes none.
	JSON string
}

func newRunCmd(a *app) *cobra.Command {
	o := &runOptions{app: a}
	cmd := &cobra.Command{
		Use:   "run NAME...",
		Short: "Run the named scenarios",
		Long: `Run the named scenarios in the order given (each once), printing each CASE
line as it completes and then "N passed, M failed". Nothing is written
unless --evidence or --json is given. 'rpcbench list' shows the names.`,
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
		ServerBin: bin,
		Out:       o.Out,
		Color:     o.Color,
		Evidence:  o.Evidence,
		JSON:      o.JSON,
	})
	return err
}
