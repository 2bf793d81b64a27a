package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rpcbench/rpcbench/configs"
	"github.com/rpcbench/rpcbench/internal/cases/grpc"
	"github.com/rpcbench/rpcbench/internal/cases/judge"
	"github.com/rpcbench/rpcbench/internal/cut"
	"github.com/rpcbench/rpcbench/internal/outfile"
	"github.com/rpcbench/rpcbench/internal/pins"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/stackbuild"
)

// matrixGroup is the group of the matrix's cases.
const matrixGroup = "matrix"

type matrixOptions struct {
	*app
	// Stacks keeps the releases of these stacks; empty keeps all.
	Stacks []string
	// Evidence is the evidence directory; "" writes none.
	Evidence string
	JSON     string
	// WriteExpect is a directory to write, for each release whose
	// verdicts disagree with its pins, what it observed as a pins file.
	WriteExpect string
	Cache       string
	RPCServer   string
	control
}

func newMatrixCmd(a *app) *cobra.Command {
	o := &matrixOptions{app: a}
	cmd := &cobra.Command{
		Use:   "matrix",
		Short: "Judge each shipped client stack at every release of its compatibility matrix, in one run",
		Example: `  rpcbench matrix                                  # every release, evidence to evidence/matrix
  rpcbench matrix --stack grpc-js --evidence ""    # grpc-js's releases alone, no evidence
  rpcbench scorecard --releases evidence/matrix    # what changed from one release to another
  rpcbench matrix --write-expect /tmp/pins         # pins of what each release that disagrees observed`,
		Long: `Build each shipped client adapter against every release of its matrix
(grpc-go, grpc-js, grpcio and connect-go; the releases and why each is
there are internal/stackbuild's Matrix), then judge every release in one
run: the grpc group's client scenarios in the default, retry, hedged and
per-attempt configurations (keepalive too for grpcio), each release a
column named STACK@VERSION. The builds are cached (--cache). Each release
is judged against expectations/releases/STACK@VERSION.txt when there is
one, else against the shipped release's pins: a release that behaves as
the shipped one needs no file of its own, and one that does not fails
until its differences are pinned with their reasons (--write-expect DIR
writes them, keeping the reasons of pins that still hold).

'rpcbench scorecard --releases DIR' then lists each outcome that changed
from one release to another.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return runMatrix(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.Stacks, "stack", nil, "judge only the releases of this stack (repeatable; "+strings.Join(stackbuild.Stacks(), ", ")+")")
	f.StringVar(&o.Evidence, "evidence", filepath.Join("evidence", matrixGroup), `evidence directory to write ("" for none)`)
	f.StringVar(&o.JSON, "json", "", `also write the results as JSON to this file ("-": stdout, the CASE lines then go to stderr)`)
	f.StringVar(&o.WriteExpect, "write-expect", "", "write, into this directory, STACK@VERSION.txt for each release whose verdicts disagree with its pins: what it observed, as pins")
	f.StringVar(&o.Cache, "cache", "", "where the adapters are built (default $XDG_CACHE_HOME/rpcbench/stacks)")
	f.StringVar(&o.RPCServer, "rpcserver", "", `rpcserver binary (default "rpcserver" next to the rpcbench executable)`)
	o.control.runFlags(cmd)
	return cmd
}

// matrixSuite is the matrix's suite over stacks, each pinned by the
// embedded file pinNames names. Every scenario is in it, so that the
// pins may name any; runMatrix leaves out those the matrix does not
// run.
func matrixSuite(stacks []cut.Stack, pinNames map[string]string) judge.Suite {
	base := grpc.Suite()
	var cfgs []cut.GRPCConfig
	for _, g := range configs.Builtin() {
		if slices.Contains(judge.MatrixConfigs, g.Name) {
			cfgs = append(cfgs, g)
		}
	}
	return judge.Suite{Group: matrixGroup, Client: base.Client, Server: base.Server, Stacks: stacks, Configs: cfgs, ServerStacks: []string{},
		NoReference: true, PinNames: pinNames,
		Only: func(stack, config string) bool {
			base, _, _ := strings.Cut(stack, "@")
			return judge.MatrixCovers(base, config, "")
		}}
}

func runMatrix(ctx context.Context, o *matrixOptions) error {
	if o.Stacks != nil && len(o.Stacks) == 0 || slices.Contains(o.Stacks, "") {
		return usageErrorf("valid stacks: "+strings.Join(stackbuild.Stacks(), ", "), "--stack \"\": name a stack")
	}
	for _, s := range o.Stacks {
		if !slices.Contains(stackbuild.Stacks(), s) {
			return usageErrorf("valid stacks: "+strings.Join(stackbuild.Stacks(), ", "), "--stack %q: no such stack in the matrix", s)
		}
	}
	if o.WriteExpect != "" {
		if fi, err := os.Stat(o.WriteExpect); err != nil || !fi.IsDir() {
			return usageErrorf("", "--write-expect %s: not a directory", o.WriteExpect)
		}
	}
	bin, err := resolveServer(cmp.Or(o.RPCServer, o.app.Server), o.Executable)
	if err != nil {
		return err
	}
	cache := o.Cache
	if cache == "" {
		if cache, err = stackbuild.DefaultCacheDir(); err != nil {
			return err
		}
	}
	var stacks []cut.Stack
	var given []givenAdapter
	pinNames := map[string]string{}
	for _, rel := range stackbuild.Matrix() {
		if !rel.Judged || len(o.Stacks) > 0 && !slices.Contains(o.Stacks, rel.Ref.Stack) {
			continue
		}
		adapter, err := stackbuild.Build(ctx, rel.Ref, cache, o.Err)
		if err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return fmt.Errorf("matrix: %w", err)
		}
		j, err := probeClient(ctx, []string{adapter})
		if err != nil {
			return adapterError(ctx, err)
		}
		name := rel.Ref.Stack + "@" + rel.Ref.LinkedVersion()
		st := cut.Stack{Name: name}
		for _, shipped := range cut.Stacks() {
			if shipped.Name == rel.Ref.Stack {
				st.PingsAlways = shipped.PingsAlways
			}
		}
		stacks = append(stacks, st)
		pinNames[name] = releasePins(rel.Ref)
		given = append(given, givenAdapter{Stack: name, Adapter: scenario.Adapter{Client: []string{adapter}},
			Env: fmt.Sprintf("%s %s (%s), pinned by expectations/%s", j.stack, j.version, j.runtime, pinNames[name])})
	}
	suite := matrixSuite(stacks, pinNames)
	for _, st := range stacks {
		if _, err := suite.LoadPins(st.Name); err != nil {
			return err
		}
	}
	all := scenario.Registry(slices.DeleteFunc(suite.Cases(), func(c scenario.Case) bool { return slices.Contains(judge.MatrixLeftOut, c.Column.Scenario) }))
	list, err := o.filter(all, all)
	if err != nil {
		return err
	}
	b := o.control.batch(o.app, list, bin)
	b.Evidence = o.Evidence
	b.JSON = o.JSON
	b.Given = given
	b.Announce = fmt.Sprintf(" of the release matrix: %s", plural(len(stacks), "release"))
	lines, runErr := runBatch(ctx, b)
	if o.WriteExpect != "" && (runErr == nil || errors.Is(runErr, errFailed)) {
		if err := writeReleasePins(o, suite, stacks, lines); err != nil {
			return err
		}
	}
	return runErr
}

// writeReleasePins writes, for each release with a line that failed,
// what it observed as pins, each keeping the reason of the pin it was
// judged against, if any.
func writeReleasePins(o *matrixOptions, suite judge.Suite, stacks []cut.Stack, lines []report.Line) error {
	for _, st := range stacks {
		failed := slices.ContainsFunc(lines, func(l report.Line) bool {
			return l.Failed() && slices.ContainsFunc(l.Fields, func(f report.Field) bool { return f.Key == "stack" && f.Value == st.Name })
		})
		if !failed {
			continue
		}
		old, err := suite.LoadPins(st.Name)
		if err != nil {
			return err
		}
		ps := judge.Observed(lines, st.Name, judge.PlaceholderReason(st.Name))
		for i, p := range ps {
			if had, ok := old.Lookup(p.Key); ok {
				ps[i].Reason = had.Reason
			}
		}
		path := filepath.Join(o.WriteExpect, st.Name+".txt")
		f, err := outfile.Create(path)
		if err != nil {
			return err
		}
		header := []string{
			st.Name + " in the release matrix (rpcbench matrix), judged where it differs from " + old.Path + ".",
			"Each line: <config> <scenario> <invariant> [sometimes]  # why this release does this.",
		}
		if err := pins.Write(f, header, ps); err != nil {
			f.Abort()
			return err
		}
		if err := f.Commit(); err != nil {
			return err
		}
		fmt.Fprintf(o.Err, "rpcbench: wrote %s\n", path)
	}
	return nil
}
