package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/scenario"
)

type diffOptions struct {
	*app
	// Old is the output file to compare against; "" means
	// Evidence/output.txt.
	Old string
	// New is the output file to compare; "" means a fresh run of the
	// cases named in Old, written to a temporary directory.
	New string
	// Evidence is the directory holding the default Old.
	Evidence string
	// JSON prints the differences as one JSON object.
	JSON bool
}

func newDiffCmd(a *app) *cobra.Command {
	o := &diffOptions{app: a}
	cmd := &cobra.Command{
		Use: "diff [OLD [NEW]]",
		Example: `  rpcbench diff                            # committed evidence vs a fresh run
  rpcbench diff old/output.txt new/output.txt
  rpcbench diff evidence /tmp/ev           # a directory stands for its output.txt`,
		Short: "Compare two runs' output files, or the evidence with a fresh run",
		Long: `Compare two output.txt files case by case. A case differs when it is
missing from either run, when its verdict changed (PASS, FAIL, ERROR, INTERRUPTED,
SKIP; a change to or from SKIP names the skip's why and compares no
fields, since a skipped case ran nothing), when a stable field (key=value recorded, key==value asserted,
key<=value and key>=value bounds, invariant:=outcome) changed, appeared or disappeared, or when a field
changed its kind (recorded to asserted, stable to volatile, ...). Volatile
fields (key~=value) are neither compared nor shown, and the order of the
cases does not matter. Each difference is one plain line, "case: what
changed", the same bytes for the same inputs.

OLD and NEW are output files, or evidence directories (DIR means
DIR/output.txt). Colour codes from --color always are ignored. A file that
holds no CASE lines, or whose summary line contradicts its CASE lines, is an
error. OLD defaults to evidence/output.txt. Without NEW, the cases named in
OLD are run afresh into a temporary directory (evidence/ is not touched),
which is kept and named when the runs differ.

Exit status: 0 no differences, 1 differences, 2 usage or input error.`,
		Args: usageArgs(cobra.MaximumNArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Old, o.New = "", ""
			if len(args) > 0 {
				o.Old = args[0]
			}
			if len(args) > 1 {
				o.New = args[1]
			}
			return runDiff(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Evidence, "evidence", "evidence", "evidence directory whose output.txt is the default OLD")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the differences as one JSON object")
	_ = cmd.MarkFlagDirname("evidence")
	return cmd
}

func runDiff(ctx context.Context, o *diffOptions) error {
	oldPath := o.Old
	if oldPath == "" {
		oldPath = filepath.Join(o.Evidence, report.OutputFile)
	}
	oldPath, old, err := readOutputFile(oldPath, o.Err)
	if errors.Is(err, fs.ErrNotExist) && o.Old == "" {
		return fmt.Errorf("%w; run 'rpcbench all' first, or name OLD", err)
	}
	if err != nil {
		return err
	}

	var newName, tmp string
	var new []report.Line
	if o.New != "" {
		if newName, new, err = readOutputFile(o.New, o.Err); err != nil {
			return err
		}
	} else {
		if new, tmp, err = rerun(ctx, o, old); err != nil {
			return err
		}
		newName = "a fresh run"
	}

	if !shareACase(old, new) {
		return usageErrorf("", "%s and %s have no case in common: runs of different groups, or of different selections, cannot be compared case by case", oldPath, newName)
	}
	diffs := report.Diff(old, new)
	if o.JSON {
		if err := writeDiffJSON(o.Out, oldPath, newName, len(old), diffs); err != nil {
			return err
		}
		if len(diffs) == 0 {
			if tmp != "" {
				os.RemoveAll(tmp)
			}
			return nil
		}
		return errFailed
	}
	fmt.Fprintf(o.Out, "--- old: %s\n+++ new: %s\n", oldPath, newName)
	added := 0
	for _, d := range diffs {
		fmt.Fprintln(o.Out, d.String())
		if d.Added() {
			added++
		}
	}
	if len(diffs) == 0 {
		if tmp != "" {
			os.RemoveAll(tmp)
		}
		_, err := fmt.Fprintf(o.Out, "no differences (%s compared)\n", plural(len(old), "case"))
		return err
	}
	verb := "differ"
	if len(diffs) == 1 {
		verb = "differs"
	}
	fmt.Fprintf(o.Out, "%d of %s %s\n", len(diffs), plural(len(old)+added, "case"), verb)
	if tmp != "" {
		fmt.Fprintf(o.Err, "rpcbench: the fresh run's output.txt, env.txt and logs are kept in %s\n", tmp)
	}
	return errFailed
}

// rerun runs the cases named in old, in old's order, into a new temporary
// evidence directory, printing progress to o.Err. Names no longer
// registered are left out, so Diff reports them missing.
func rerun(ctx context.Context, o *diffOptions, old []report.Line) ([]report.Line, string, error) {
	var list scenario.Registry
	for _, l := range old {
		c, ok := o.Scenarios.Lookup(l.Name)
		if !ok {
			fmt.Fprintf(o.Err, "rpcbench: %s is not a scenario any more; it cannot be run again\n", l.Name)
			continue
		}
		list = append(list, c)
	}
	bin, err := resolveServer(o.Server, o.Executable)
	if err != nil {
		return nil, "", err
	}
	dir, err := os.MkdirTemp("", "rpcbench-diff-")
	if err != nil {
		return nil, "", err
	}
	fmt.Fprintf(o.Err, "rpcbench: running %s into %s to compare with\n", plural(len(list), "scenario"), dir)
	lines, err := runBatch(ctx, batch{
		Scenarios: list,
		ServerBin: bin,
		Out:       o.Err,
		Color:     o.Color,
		Evidence:  dir,
	})
	if err != nil && !errors.Is(err, errFailed) {
		// A failed scenario is a difference for Diff to report; anything
		// else means there is nothing sound to compare.
		os.RemoveAll(dir)
		return nil, "", err
	}
	return lines, dir, nil
}

// readOutputFile reads the CASE lines of path, or of path/output.txt when
// path is a directory, and returns the file it read. A file with no CASE
// lines is an error: it is not a run's output (env.txt, a log, a JSON
// file), or a run that completed no scenario, and either way there is
// nothing to compare.
func readOutputFile(path string, warn io.Writer) (string, []report.Line, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, report.OutputFile)
	}
	f, err := os.Open(path)
	if err != nil {
		return path, nil, err
	}
	defer f.Close()
	lines, summed, err := report.ReadOutputSummed(f)
	if err != nil {
		return path, nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(lines) == 0 {
		return path, nil, fmt.Errorf("%s holds no CASE lines: nothing to compare", path)
	}
	if !summed {
		// Compared all the same: a partial run's lines are worth a diff,
		// but nobody must take them for a whole run's.
		fmt.Fprintf(warn, "rpcbench: %s has no summary line after its last CASE line: the output of a run that did not finish, or a file cut short; comparing the %s it holds\n", path, plural(len(lines), "case"))
	}
	return path, lines, nil
}

// writeDiffJSON writes the differences as one JSON object:
// {"old": ..., "new": ..., "compared": N, "differences": [{"case", "occurrence",
// "change": "missing|added|changed", "text": the lines diff prints,
// "fields": [{"key", "old", "new"}]}]}; an absent side is null. compared
// is the number of CASE lines in old. fields holds the compared fields
// that differ, as report.Difference.Fields does: it is empty for a case
// missing or added, and for a verdict change to or from SKIP.
func writeDiffJSON(w io.Writer, oldPath, newName string, compared int, diffs []report.Difference) error {
	type field struct {
		Key string  `json:"key"`
		Old *string `json:"old"`
		New *string `json:"new"`
	}
	type diff struct {
		Case       string  `json:"case"`
		Occurrence int     `json:"occurrence"`
		Change     string  `json:"change"`
		Text       string  `json:"text"`
		Fields     []field `json:"fields"`
	}
	out := struct {
		Old         string `json:"old"`
		New         string `json:"new"`
		Compared    int    `json:"compared"`
		Differences []diff `json:"differences"`
	}{Old: oldPath, New: newName, Compared: compared, Differences: []diff{}}
	show := func(f *report.Field) *string {
		if f == nil {
			return nil
		}
		s := report.FormatField(*f)
		return &s
	}
	for _, d := range diffs {
		e := diff{Case: d.Name, Occurrence: d.Occurrence, Change: "changed", Text: d.String(), Fields: []field{}}
		switch {
		case d.Missing():
			e.Change = "missing"
		case d.Added():
			e.Change = "added"
		}
		for _, fc := range d.Fields {
			e.Fields = append(e.Fields, field{Key: fc.Key, Old: show(fc.Old), New: show(fc.New)})
		}
		out.Differences = append(out.Differences, e)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// shareACase reports whether some case is in both runs.
func shareACase(old, new []report.Line) bool {
	names := map[string]bool{}
	for _, l := range old {
		names[l.Name] = true
	}
	for _, l := range new {
		if names[l.Name] {
			return true
		}
	}
	return false
}
