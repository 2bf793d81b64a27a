package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rpcbench/rpcbench/internal/outfile"
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
}

func newScorecardCmd(a *app) *cobra.Command {
	o := &scorecardOptions{app: a}
	cmd := &cobra.Command{
		Use: "scorecard [EVIDENCE_DIR|OUTPUT_FILE]",
		Example: `  rpcbench scorecard                       # evidence/grpc as a table
  rpcbench scorecard --markdown card.md --json card.json
  rpcbench all --group grpc --evidence /tmp/g && rpcbench scorecard /tmp/g`,
		Short: "Tabulate what each gRPC stack and configuration did, from the grpc group's evidence",
		Long: `Read the grpc group's evidence (default "evidence/grpc") and print one
row per scenario and invariant, one column per stack and configuration,
rpcbench's own client first: what the stack did, holds, VIOLATED or n/a
(the stack lacks what the invariant needs, or rpcbench's wire has no such
fault). A violation is a finding about the stack, pinned with its reason
in expectations/STACK.txt; a cell whose case did not pass shows its
verdict, (FAIL) or (ERROR), and is not to be trusted as it stands.

--markdown writes it as GitHub Markdown, one table per stack beside the
reference column, leaving out the configurations a stack lacks the
capability for (named above its table), each cell linking to its case
on the report page named by --page; --json writes the whole card as
JSON.

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
	_, lines, err := readOutputFile(o.Evidence)
	if err != nil {
		return err
	}
	card, err := scorecard.Build(lines)
	if err != nil {
		return fmt.Errorf("%s: %w", o.Evidence, err)
	}
	// The table is for a person; an output on stdout takes its place.
	if (jsonOut == nil || !jsonOut.stdout()) && (mdOut == nil || !mdOut.stdout()) {
		if err := card.WriteText(o.Out); err != nil {
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
