package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rpcbench/rpcbench/configs"
	"github.com/rpcbench/rpcbench/internal/cut"
	"github.com/rpcbench/rpcbench/internal/outfile"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/scorecard"
)

type scorecardOptions struct {
	*app
	// Evidence is the grpc group's evidence directory, or its
	// output.txt.
	Evidence string
	// JSON and Markdown are files to write the card to as well; "" for
	// none, "-" for stdout in place of the table.
	JSON, Markdown string
	// Page is the report page the Markdown cells link to; "" for none.
	Page string
	// Stacks and Configs select the judged columns shown, in every
	// output; nil selects all.
	Stacks, Configs []string
	// Releases shows what changed between the releases of each stack
	// the evidence holds at several (rpcbench matrix's), in place of
	// the card.
	Releases bool
}

func newScorecardCmd(a *app) *cobra.Command {
	o := &scorecardOptions{app: a}
	cmd := &cobra.Command{
		Use: "scorecard [EVIDENCE_DIR|OUTPUT_FILE]",
		Example: `  rpcbench scorecard                       # evidence/grpc as a table
  rpcbench scorecard --stack grpc-go --config retry,retry+key
  rpcbench scorecard --markdown card.md --json card.json
  rpcbench scorecard --markdown - | less
  rpcbench all --group grpc --evidence /tmp/g && rpcbench scorecard /tmp/g`,
		Short: "Tabulate what each gRPC stack and configuration did, from the grpc group's evidence",
		Long: `Read the grpc group's evidence (default "evidence/grpc") and print, for
each stack, a table of what it did beside rpcbench's own client, the
reference: one row per scenario and invariant, one column per
configuration, each cell holds, VIOLATED or n/a (the stack lacks what the
invariant needs, or rpcbench's wire has no such fault). The server
stacks follow in one table, rpcserver first. A violation is a finding
about the stack, pinned with its reason in expectations/STACK.txt; a cell
whose case ended in a verdict other than PASS, FINDING or N/A shows it,
(FAIL) or (ERROR), and is not to be trusted as it stands.

The tables fit the terminal's width (100 columns when stdout is not a
terminal): scenarios that run in the same columns share a block showing
those alone, and a block still too wide is cut into parts. They are
coloured as --color says: holds green, VIOLATED red, VIOLATED sometimes
yellow, n/a faint.

--stack and --config keep the named stacks and configurations alone
(each repeatable, or a comma-separated list), in every output; a name
the evidence does not hold is a usage error that lists those it does.

--markdown writes the card as GitHub Markdown, one table per stack beside
the reference column, leaving out the configurations a stack lacks the
capability for (named above its table), each cell linking to its case
on the report page named by --page; --json writes the whole card as
JSON. Either writes to stdout for "-", in place of the tables.

Exit status: 0 card printed, 2 usage error, or the evidence could not be
read or holds no grpc case.`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(_ *cobra.Command, args []string) error {
			o.Evidence = "evidence/grpc"
			if len(args) > 0 {
				o.Evidence = args[0]
			}
			return runScorecard(o)
		},
	}
	cmd.Flags().StringVar(&o.JSON, "json", "", `also write the card as JSON to this file ("-": stdout, in place of the table)`)
	cmd.Flags().StringVar(&o.Markdown, "markdown", "", `also write the card as Markdown tables to this file ("-": stdout, in place of the table)`)
	cmd.Flags().StringVar(&o.Page, "page", "report.html", `report page the Markdown cells link to ("" links nothing)`)
	cmd.Flags().StringSliceVar(&o.Stacks, "stack", nil, "show only this stack beside the reference (repeatable, or a comma-separated list)")
	cmd.Flags().StringSliceVar(&o.Configs, "config", nil, "show only this configuration (repeatable, or a comma-separated list)")
	cmd.Flags().BoolVar(&o.Releases, "releases", false, "show, for each stack judged at several releases (rpcbench matrix's evidence), the outcomes that changed from one release to another, in place of the card")
	_ = cmd.RegisterFlagCompletionFunc("stack", cobra.FixedCompletions(cut.StackNames(), cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("config", cobra.FixedCompletions(configNames(), cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func runScorecard(o *scorecardOptions) error {
	switch {
	case o.JSON == stdoutPath && o.Markdown == stdoutPath:
		return usageErrorf("", "--json - and --markdown - would both write to stdout; name a file for one of them")
	case o.JSON != "" && o.Markdown != "" && o.JSON != stdoutPath && o.Markdown != stdoutPath && outfile.Same(o.JSON, o.Markdown):
		return usageErrorf("", "--json and --markdown both name %s", o.JSON)
	}
	// Opened before the evidence is read: a path that cannot be written
	// is said at once.
	var outs [2]*output
	for i, p := range []struct{ flag, path string }{{"--json", o.JSON}, {"--markdown", o.Markdown}} {
		if p.path == "" {
			continue
		}
		out, err := openOutput(p.flag, p.path, o.Out)
		if err != nil {
			return err
		}
		defer out.abort()
		outs[i] = out
	}
	jsonOut, mdOut := outs[0], outs[1]
	_, lines, err := readOutputFile(o.Evidence, o.Err)
	if err != nil {
		return err
	}
	card, err := scorecard.Build(lines)
	if err != nil {
		return fmt.Errorf("%s: %w", o.Evidence, err)
	}
	if o.Releases {
		if err := checkNames("--config", "configurations", o.Configs, card.Configs(), nil); err != nil {
			return err
		}
		return writeReleases(o, card.Filter(nil, o.Configs).Releases(), jsonOut, mdOut)
	}
	// Checked against the evidence before anything is written.
	if err := checkNames("--stack", "stacks", o.Stacks, card.Stacks(), card.References()); err != nil {
		return err
	}
	if err := checkNames("--config", "configurations", o.Configs, card.Configs(), nil); err != nil {
		return err
	}
	card = card.Filter(o.Stacks, o.Configs)
	// The table is for a person; an output on stdout takes its place.
	if (jsonOut == nil || !jsonOut.stdout()) && (mdOut == nil || !mdOut.stdout()) {
		if err := card.WriteText(o.Out, scorecard.TextOptions{Width: report.TerminalWidth(o.Out), Color: report.UseColor(o.Out, o.Color)}); err != nil {
			return err
		}
	}
	if jsonOut != nil {
		if err := card.WriteJSON(jsonOut.w); err != nil {
			return fmt.Errorf("--json %s: %w", o.JSON, err)
		}
		if err := jsonOut.commit(); err != nil {
			return err
		}
	}
	if mdOut != nil {
		if err := card.WriteMarkdownByStack(mdOut.w, o.Page); err != nil {
			return fmt.Errorf("--markdown %s: %w", o.Markdown, err)
		}
		if err := mdOut.commit(); err != nil {
			return err
		}
	}
	return nil
}

// writeReleases writes what changed between releases, as runScorecard
// writes the card: text unless an output takes stdout, then JSON and
// Markdown. --stack keeps the stacks named (runScorecard has kept the
// configurations --config names).
func writeReleases(o *scorecardOptions, rs scorecard.Releases, jsonOut, mdOut *output) error {
	var stacks []string
	for _, sr := range rs {
		stacks = append(stacks, sr.Stack)
	}
	if err := checkNames("--stack", "stacks", o.Stacks, stacks, nil); err != nil {
		return err
	}
	rs = slices.DeleteFunc(rs, func(sr scorecard.StackReleases) bool {
		return len(o.Stacks) > 0 && !slices.Contains(o.Stacks, sr.Stack)
	})
	if (jsonOut == nil || !jsonOut.stdout()) && (mdOut == nil || !mdOut.stdout()) {
		if err := rs.WriteText(o.Out); err != nil {
			return err
		}
	}
	if jsonOut != nil {
		enc := json.NewEncoder(jsonOut.w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rs); err != nil {
			return fmt.Errorf("--json %s: %w", o.JSON, err)
		}
		if err := jsonOut.commit(); err != nil {
			return err
		}
	}
	if mdOut != nil {
		if err := rs.WriteMarkdown(mdOut.w, o.Page); err != nil {
			return fmt.Errorf("--markdown %s: %w", o.Markdown, err)
		}
		if err := mdOut.commit(); err != nil {
			return err
		}
	}
	return nil
}

// checkNames checks each of names, given to flag, against valid; a name
// that is not is a usage error listing valid. A name in refs is a
// reference, shown beside every stack, and said to be.
func checkNames(flag, what string, names, valid, refs []string) error {
	for _, n := range names {
		switch {
		case slices.Contains(valid, n):
		case slices.Contains(refs, n):
			return usageErrorf("valid "+what+": "+strings.Join(valid, ", "), "%s %s: %s is a reference, shown beside every stack", flag, n, n)
		default:
			return usageErrorf("valid "+what+": "+strings.Join(valid, ", "), "%s %q: the evidence holds no such %s", flag, n, strings.TrimSuffix(what, "s"))
		}
	}
	return nil
}

// configNames are the configurations --config completes: the built-in
// client configurations (package configs) and the servers'.
func configNames() []string {
	return append(configs.BuiltinNames(), scorecard.ConfigServer)
}
