package main

import (
	"fmt"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/rpcbench/rpcbench/internal/cases"
)

type listOptions struct {
	*app
	// Group selects the scenarios listed; cases.GroupAll lists every one.
	Group string
	// Names prints bare names, one per line.
	Names bool
}

func newListCmd(a *app) *cobra.Command {
	o := &listOptions{app: a}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the scenarios: group, name and what each proves",
		Long: `List the scenarios under a GROUP NAME PROVES heading, group by group (in
the order the groups first appear, each in run order). 'rpcbench all' runs
the "evidence" group unless told --group; 'rpcbench run NAME' runs a
scenario of any group.

--names prints the bare names, one per line and without the heading, for
scripts; --group limits either form to one group.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			return runList(o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.Names, "names", false, "print bare names, one per line")
	f.StringVar(&o.Group, "group", cases.GroupAll, `list only this group ("all" for every scenario)`)
	_ = cmd.RegisterFlagCompletionFunc("group", completeGroups(a))
	return cmd
}

func runList(o *listOptions) error {
	list, err := selectGroup(o.Scenarios, o.Group)
	if err != nil {
		return err
	}
	groups := list.Groups()
	list = slices.Clone(list)
	slices.SortStableFunc(list, func(x, y cases.Case) int {
		return slices.Index(groups, x.Group) - slices.Index(groups, y.Group)
	})
	if o.Names {
		for _, s := range list {
			if _, err := fmt.Fprintln(o.Out, s.Name); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(o.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tNAME\tPROVES")
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Group, s.Name, s.Doc)
	}
	return tw.Flush()
}
