package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

type listOptions struct {
	*app
	// Group selects the scenarios listed; groupAll lists every one.
	Group string
	// Names prints bare names, one per line.
	Names bool
}

func newListCmd(a *app) *cobra.Command {
	o := &listOptions{app: a}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the scenarios: group, name and what each proves",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			return runList(o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.Names, "names", false, "print bare names, one per line")
	f.StringVar(&o.Group, "group", groupAll, `list only this group ("all" for every scenario)`)
	_ = cmd.RegisterFlagCompletionFunc("group", completeGroups(a))
	return cmd
}

func runList(o *listOptions) error {
	list := o.Scenarios
	if o.Group != groupAll {
		var err error
		if list, err = selectGroup(o.Scenarios, o.Group); err != nil {
			return err
		}
	}
	if o.Names {
		for _, s := range list {
			if _, err := fmt.Fprintln(o.Out, s.Name); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(o.Out, 0, 0, 2, ' ', 0)
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Group, s.Name, s.Doc)
	}
	return tw.Flush()
}
