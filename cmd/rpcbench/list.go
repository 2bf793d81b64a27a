package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/rpcbench/rpcbench/internal/scenario"
)

type listOptions struct {
	*app
	// Group selects the scenarios listed; scenario.GroupAll lists every one.
	Group string
	// JSON prints the list as a JSON array.
	JSON bool
	// Names prints bare names, one per line.
	Names bool
}

func newListCmd(a *app) *cobra.Command {
	o := &listOptions{app: a}
	cmd := &cobra.Command{
		Use: "list",
		Example: `  rpcbench list
  rpcbench list --group durability
  rpcbench list --names | grep idempotency`,
		Short: "List the scenarios: group, name and what each proves",
		Long: `List the scenarios under a GROUP NAME PROVES heading, group by group (in
the order the groups first appear, each in run order). 'rpcbench all' runs
the "evidence" group unless told --group; 'rpcbench run NAME' runs a
scenario of any group.

--names prints the bare names, one per line and without the heading, for
scripts; --group limits either form to one group.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf(cmd.UsageString(), "list takes no arguments (got %q): to list a group use --group GROUP; to run scenarios, 'rpcbench run NAME'", strings.Join(args, " "))
			}
			return nil
		},
		RunE: func(*cobra.Command, []string) error {
			return runList(o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.Names, "names", false, "print bare names, one per line")
	f.BoolVar(&o.JSON, "json", false, `print a JSON array of {"group", "name", "doc", "needs"}`)
	f.StringVar(&o.Group, "group", scenario.GroupAll, `list only this group ("all" for every scenario)`)
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
	slices.SortStableFunc(list, func(x, y scenario.Case) int {
		return slices.Index(groups, x.Group) - slices.Index(groups, y.Group)
	})
	if o.JSON {
		type entry struct {
			Group string   `json:"group"`
			Name  string   `json:"name"`
			Doc   string   `json:"doc"`
			Needs []string `json:"needs,omitempty"`
		}
		out := make([]entry, len(list))
		for i, s := range list {
			out[i] = entry{s.Group, s.Name, s.Doc, s.Needs}
		}
		enc := json.NewEncoder(o.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
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
	fmt.Fprintln(tw, "GROUP\tNAME\tPROVES")
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Group, s.Name, s.Doc)
	}
	return tw.Flush()
}
