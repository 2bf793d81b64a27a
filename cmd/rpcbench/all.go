package main

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rpcbench/rpcbench/internal/cases"
	"github.com/rpcbench/rpcbench/internal/scenario"
)

type allOptions struct {
	*app
	// Group selects the scenarios; scenario.GroupAll runs every one.
	Group string
	// Count is how many times the group runs; 0 means 1.
	Count int
	// Evidence is the evidence directory; "" writes none.
	Evidence string
	// EvidenceSet records that --evidence was given, which Count > 1
	// requires.
	EvidenceSet bool
	// JSON is the --json file; "" writes none.
	JSON string
	control
}

func newAllCmd(a *app) *cobra.Command {
	o := &allOptions{app: a, Count: 1}
	cmd := &cobra.Command{
		Use: "all",
		Example: `  rpcbench all                             # the evidence group, evidence to evidence/
  rpcbench all --group durability          # another group, evidence to evidence/durability
  rpcbench all --run 'late_' --evidence ""  # a selection, no evidence written
  rpcbench all --count 30 --evidence "" --failfast
  rpcbench all -v --run '^retry_'          # attempt logs and server events under each line`,
		Short: "Run every scenario of a group and write the evidence directory",
		Long: `Run every scenario of a group (default "evidence"; see 'rpcbench list') in
order, printing each CASE line in run order and then "N passed, M failed"
(and the findings and n/a, named above it).
A scenario whose prerequisite is missing on this machine (PostgreSQL, root
and iproute2 for test hosts) is not run: it prints SKIP with why= saying
what is missing and how to get it, and does not fail the run;
RPCBENCH_REQUIRE_PG=1 and RPCBENCH_REQUIRE_NETNS=1 make a missing one a
failure instead.

The evidence directory (default "evidence" for the evidence group and
"evidence/GROUP" for any other) gets output.txt (the CASE lines and the
summary), env.txt (Go, OS, kernel, CPU, the commit the binaries were built
from, date) and logs/ (each scenario's server logs, traces and adapter
output, bundled in one SCENARIO.logs file). The run writes into a
temporary directory inside it and moves its files into place only when
every scenario has run: an interrupted or failed write leaves the previous
evidence as it was and says where the partial output went. Other files in
the directory are never touched, and a second run on the same directory
is refused while the first holds it.

--count N runs the group N times over, printing "# run K/N" on stderr
before each pass; the CASE lines are unchanged. Before the summary, which
counts every line of every pass, comes one line per scenario with its
passes and the runs it failed in:

  normal_multiplex             30/30
  late_response_dropped_by_id  29/30  failed in run 17

With N > 1 the evidence directory must be named with --evidence (or
--evidence "" for none), so that a repeated run never replaces the
evidence of a single one by accident; it then gets all of the above
(every pass's CASE lines, the table, the summary), and each server log
holds the passes one after another. --json always holds
every line and, under "per_case", each scenario's runs, passes and
failed_runs. Any failure in any pass exits 1.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf(cmd.UsageString(), "all takes no arguments (got %q): to run scenarios by name use 'rpcbench run %s', or select with --run REGEX",
					strings.Join(args, " "), strings.Join(args, " "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.EvidenceSet = cmd.Flags().Changed("evidence")
			if !o.EvidenceSet {
				o.Evidence = defaultEvidence(o.Group)
			}
			return runAll(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Group, "group", cases.GroupEvidence, `scenario group to run, or "all"`)
	f.Var(countFlag{&o.Count}, "count", "run the group this many times over")
	// The default depends on --group (defaultEvidence): RunE sets it, so
	// that --help states it once.
	f.StringVar(&o.Evidence, "evidence", "", `evidence directory to write ("" for none); default evidence/ for the evidence group, evidence/GROUP for the others, none for all`)
	f.StringVar(&o.JSON, "json", "", `also write the results as JSON to this file ("-": stdout, the CASE lines then go to stderr)`)
	o.control.flags(cmd)
	_ = cmd.RegisterFlagCompletionFunc("group", completeGroups(a))
	_ = cmd.MarkFlagDirname("evidence")
	return cmd
}

// defaultEvidence is the evidence directory of a group when --evidence is
// not given: each group has its own, so that running one group never
// replaces another's evidence. "all" spans the groups, whose evidence
// lives apart, and writes none.
func defaultEvidence(group string) string {
	switch group {
	case cases.GroupEvidence:
		return "evidence"
	case scenario.GroupAll:
		return ""
	}
	return filepath.Join("evidence", group)
}

func runAll(ctx context.Context, o *allOptions) error {
	group, err := selectGroup(o.Scenarios, o.Group)
	if err != nil {
		return err
	}
	list, err := o.filter(group, o.Scenarios)
	if err != nil {
		return err
	}
	count := max(o.Count, 1)
	if !o.EvidenceSet && o.Evidence != "" {
		// What is written by default is the group's evidence: a run that
		// is not that, one pass of the whole group, must be sent
		// somewhere by name.
		switch {
		case count > 1:
			return usageErrorf("", "--count %d would replace %s/ with %d runs; name the directory with --evidence DIR, or --evidence \"\" to write none",
				count, o.Evidence, count)
		case len(list) < len(group):
			return usageErrorf("", "--run/--skip/--stack/--config select %s of the %d in group %s, which would replace %s/ with part of it; name the directory with --evidence DIR, or --evidence \"\" to write none",
				plural(len(list), "scenario"), len(group), o.Group, o.Evidence)
		}
	}
	bin, err := serverFor(list, o.Server, o.Executable)
	if err != nil {
		return err
	}
	b := o.control.batch(o.app, list, bin)
	b.Count = count
	b.Evidence = o.Evidence
	b.JSON = o.JSON
	b.Announce = " of group " + o.Group
	_, err = runBatch(ctx, b)
	return err
}
