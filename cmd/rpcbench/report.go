package main

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/rpcbench/rpcbench/internal/outfile"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/timeline"
)

type reportOptions struct {
	*app
	// Evidence is the evidence directory to show.
	Evidence string
	// Output is the page's file; "-" is stdout.
	Output string
}

func newReportCmd(a *app) *cobra.Command {
	o := &reportOptions{app: a}
	cmd := &cobra.Command{
		Use: "report [EVIDENCE_DIR]",
		Example: `  rpcbench report                          # evidence/ to report.html
  rpcbench report evidence/durability -o durability.html
  rpcbench report /tmp/ev -o - > ev.html   # the page on stdout`,
		Short: "Write an evidence directory as one HTML page, with a timeline per scenario",
		Long: `Write the evidence directory EVIDENCE_DIR (default "evidence") as one
self-contained HTML page: it needs no network and no file beside it, and
opens from file://.

Each scenario shows its verdict and its fields, the kinds told apart: a
judged stack's invariants (invariant:=outcome), asserted (key==value),
bounds (key<=value, key>=value), recorded (key=value) and volatile
(key~=value). Scenarios that did not run as
their pins say come first, with why, then the findings (a stack's pinned
violations, with a badge of their own), then n/a, then the passes.

Below them is a timeline: one lane per server, marking the events of
logs/server-NAME.log (then server-NAME-2.log, ...: EXEC, EXPIRED, FAULT,
DEDUP_HIT, CONN_OPEN, CONN_CLOSED, QUEUE_FULL, CLAIM, CRASH, ...), and one
lane per client, a bar per attempt from logs/trace-NAME.jsonl, those whose
outcome is unknown (TIMEOUT, CONN_LOST_AFTER_SEND, ...) drawn apart. A
scenario without a trace gets the server lanes and says so; one that starts
no server, or a chaos run, which keeps its logs out of the evidence, shows
its fields and its note only. A lane with more than 2000 events draws its
commonest events as counts per slice of the time axis, and says so.

A log or trace that cannot be read in full is shown as far as it could be
read, and named on the page and on stderr.

Exit status: 0 page written (whatever the verdicts), 2 usage error, or the
evidence could not be read or the page not written.`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return nil, cobra.ShellCompDirectiveFilterDirs
		},
		RunE: func(_ *cobra.Command, args []string) error {
			o.Evidence = "evidence"
			if len(args) > 0 {
				o.Evidence = args[0]
			}
			return runReport(o)
		},
	}
	cmd.Flags().StringVarP(&o.Output, "output", "o", "report.html", `file to write the page to ("-" for stdout)`)
	_ = cmd.MarkFlagFilename("output", "html")
	return cmd
}

func runReport(o *reportOptions) error {
	if o.Output == "" {
		return usageErrorf("", `--output is empty: name a file, or "-" for stdout`)
	}
	var out *outfile.File
	if o.Output != "-" {
		// Before the evidence is read: a page that cannot be written is
		// said at once, naming the path as given.
		var err error
		if out, err = outfile.Create(o.Output); err != nil {
			return usageErrorf("", "-o %v", err)
		}
		defer out.Abort()
	}
	page, err := timeline.Load(o.Evidence, timeline.DefaultOptions())
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("evidence directory %s does not exist; run 'rpcbench all' first, or name one: rpcbench report DIR", o.Evidence)
	case errors.Is(err, timeline.ErrNoOutput):
		return fmt.Errorf("%w; an evidence directory holds the %s that 'rpcbench all' writes", err, report.OutputFile)
	case err != nil:
		return err
	}
	for _, w := range page.Warnings {
		fmt.Fprintf(o.Err, "rpcbench: report: %s\n", w)
	}
	if out == nil {
		return timeline.Render(o.Out, page)
	}
	if err := writePage(out, page); err != nil {
		return err
	}
	fmt.Fprintf(o.Err, "rpcbench: wrote %s: %s (%d did not run as pinned; %s), %s\n",
		o.Output, plural(len(page.Scenarios), "scenario"), page.Failing, page.Summary, plural(page.Timelines(), "timeline"))
	return nil
}

// writePage writes the page to a file beside path and renames it into
// place, so that path never holds half a page.
func writePage(f *outfile.File, page *timeline.Page) error {
	defer f.Abort()
	if err := timeline.Render(f, page); err != nil {
		return err
	}
	if err := f.Commit(); err != nil {
		return fmt.Errorf("-o %w", err)
	}
	return nil
}
