package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rpcbench/rpcbench/internal/cases"
)

type allOptions struct {
	*app
	// Group selects the scenarios; groupAll runs every one.
	Group string
	// Evidence is the evidence directory; "" writes none.
	Evidence string
	// JSON is the --json file; "" writes none.
	JSON string
}

func newAllCmd(a *app) *cobra.Command {
	o := &allOptions{app: a}
	cmd := &cobra.Command{
		Use:   "all",
		Short: "Run every scenario of a group and write the evidence directory",
		Long: `Run every scenario of a group (default "evidence") in order, printing each
CASE line as it completes and then "N passed, M failed".

The evidence directory gets output.txt (the CASE lines and the summary),
env.txt (Go, OS, kernel, CPU, git commit, date) and logs/ (one log per
server; old server-*.log files there are removed first).`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAll(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Group, "group", cases.GroupEvidence, `scenario group to run, or "all"`)
	f.StringVar(&o.Evidence, "evidence", "evidence", `evidence directory to write ("" for none)`)
	f.StringVar(&o.JSON, "json", "", "also write the results as JSON to this file")
	_ = cmd.RegisterFlagCompletionFunc("group", completeGroups(a))
	_ = cmd.MarkFlagDirname("evidence")
	return cmd
}

func runAll(ctx context.Context, o *allOptions) error {
	list, err := selectGroup(o.Scenarios, o.Group)
	if err != nil {
		return err
	}
	bin, err := resolveServer(o.Server, o.Executable)
	if err != nil {
		return err
	}
	where := "no evidence written"
	if o.Evidence != "" {
		where = "evidence to " + o.Evidence
	}
	fmt.Fprintf(o.Err, "rpcbench: running %d scenarios of group %s, %s\n", len(list), o.Group, where)
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
