package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rpcbench/rpcbench/configs"
	"github.com/rpcbench/rpcbench/expectations"
	"github.com/rpcbench/rpcbench/internal/cases/grpc"
	"github.com/rpcbench/rpcbench/internal/cases/judge"
	"github.com/rpcbench/rpcbench/internal/cut"
	"github.com/rpcbench/rpcbench/internal/outfile"
	"github.com/rpcbench/rpcbench/internal/pins"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/stackbuild"
	"github.com/rpcbench/rpcbench/internal/sut"
)

// judgeGroup is the group of the cases judge runs.
const judgeGroup = "judge"

// judgeOptions are judge's flags.
type judgeOptions struct {
	*app
	// Client and Server are the adapters' command lines; nil when not
	// judged.
	Client, Server []string
	// Configs are --config's values: built-in names or files.
	Configs []string
	// Expect is the user's pins file; "" for none.
	Expect string
	// WriteExpect is where to write what this run observed as pins.
	WriteExpect string
	// Summary is the Markdown summary's file, "-" for stdout.
	Summary string
	// Evidence is the evidence directory; "" writes none.
	Evidence string
	JSON     string
	// RPCServer is the rpcserver binary, "" for the one beside rpcbench.
	RPCServer string
	// NoReference leaves out rpcbench's own client's columns.
	NoReference bool
	// Stack is --stack: a shipped adapter, at a release, to build and
	// judge; "" for none.
	Stack string
	// Side is what of --stack's adapter is judged: client, server or
	// both.
	Side string
	// Cache is where --stack builds; "" for stackbuild's default.
	Cache string
	// suite is what runJudge judges, once set up.
	suite judge.Suite
	control
}

func newJudgeCmd(a *app) *cobra.Command {
	o := &judgeOptions{app: a}
	var client, server string
	cmd := &cobra.Command{
		Use:   "judge (--client | --server) [flags] [-- COMMAND ARGS...]",
		Short: "Judge your own client or server adapter, in your configurations, against your pins",
		Example: `  rpcbench judge --client -- ./my-adapter                       # every built-in configuration
  rpcbench judge --client --config retry --config ./mine.json -- python3 adapter.py
  rpcbench judge --client --write-expect pins.txt -- ./my-adapter  # first run: write what it does
  rpcbench judge --client --expect pins.txt -- ./my-adapter        # then: a regression test
  rpcbench judge --server -- ./my-adapter serve                   # the server section
  rpcbench judge --client=./my-adapter --server='./my-adapter serve' --summary "$GITHUB_STEP_SUMMARY"
  rpcbench judge --stack grpc-go@v1.70.0                         # a shipped adapter, built at that release`,
		Long: `Judge a stack of your own: a client adapter speaking adapters/PROTOCOL.md
(--client), a server adapter speaking adapters/SERVER-PROTOCOL.md
(--server), or both. The command after -- (or the flag's value, split on
spaces) is started once to read what it says of itself; its stack name
and version name its column. Then every grpc scenario runs in each
configuration its capabilities allow (--config: a built-in name, or a
file in the format of configs/*.json; default: every built-in one),
beside rpcbench's own client as the reference, and every grpcserver
scenario runs against it beside rpcserver. The server's log decides what
executed, never the adapter.

A violation is a FAIL unless --expect FILE pins it (the format of
expectations/*.txt: "<config> <scenario> <invariant>  # reason"), and a
pin that no longer happens fails too. --write-expect FILE writes what
this run observed as such a file, each reason a placeholder to replace:
the first run is one command, and the second is a regression test.

--stack NAME@VERSION judges one of the shipped adapters instead, built
against that release of its library in a cache directory (Go: the
adapter module with that require; npm: that @grpc/grpc-js with its own
lock; PyPI: that grpcio in a virtual environment); a release the
registry does not have exits 2 before anything runs, naming the nearest
it has. Its column is NAME@VERSION, judged against the shipped
release's pins, and against expectations/releases/NAME@VERSION.txt for
what the release matrix runs when rpcbench has that file: what changed
since the shipped release fails.

Outputs are those of 'rpcbench all': CASE lines, the evidence directory
(default rpcbench-judge/), --json, --junit, --json-events; then
'rpcbench scorecard DIR' and 'rpcbench report DIR' read the evidence, and
--summary FILE writes a short Markdown summary for a CI job summary.`,
		Args: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			withCmd := 0
			for _, side := range []struct {
				flag string
				val  string
				dst  *[]string
			}{{"client", client, &o.Client}, {"server", server, &o.Server}} {
				if !f.Changed(side.flag) {
					continue
				}
				if side.val == "-" {
					withCmd++
					*side.dst = args
					continue
				}
				*side.dst = strings.Fields(side.val)
			}
			switch {
			case f.Changed("stack") && (f.Changed("client") || f.Changed("server")):
				return usageErrorf(cmd.UsageString(), "--stack judges a shipped adapter: give it alone, or --client/--server for yours")
			case f.Changed("stack") && len(args) > 0:
				return usageErrorf(cmd.UsageString(), "--stack takes no command (got %q): rpcbench builds the adapter", strings.Join(args, " "))
			case f.Changed("stack") && o.Stack == "":
				return usageErrorf("valid stacks: "+strings.Join(stackbuild.Stacks(), ", "), "--stack \"\": name a stack, NAME or NAME@VERSION")
			case f.Changed("stack"):
				if !slices.Contains([]string{"client", "server", "both"}, o.Side) {
					return usageErrorf("valid sides: client, server, both", "--side %q", o.Side)
				}
				return nil
			case o.Client == nil && o.Server == nil && !f.Changed("client") && !f.Changed("server"):
				return usageErrorf(cmd.UsageString(), "judge needs --client, --server or --stack: what to judge")
			case withCmd > 1:
				return usageErrorf(cmd.UsageString(), "--client and --server both take the command after --: give one of them as --client=COMMAND")
			case withCmd == 0 && len(args) > 0:
				return usageErrorf(cmd.UsageString(), "judge takes no arguments (got %q) unless --client or --server is given without a value", strings.Join(args, " "))
			case f.Changed("client") && len(o.Client) == 0:
				return usageErrorf(cmd.UsageString(), "--client: no command: give it after -- (--client -- ./my-adapter) or as --client=./my-adapter")
			case f.Changed("server") && len(o.Server) == 0:
				return usageErrorf(cmd.UsageString(), "--server: no command: give it after -- (--server -- ./my-adapter serve) or as --server='./my-adapter serve'")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return runJudge(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&client, "client", "", "judge this client adapter: the command after --, or COMMAND as --client=COMMAND")
	f.Lookup("client").NoOptDefVal = "-"
	f.StringVar(&server, "server", "", "judge this server adapter: the command after --, or COMMAND as --server=COMMAND (rpcserver's own binary is --rpcserver here)")
	f.Lookup("server").NoOptDefVal = "-"
	f.StringArrayVar(&o.Configs, "config", nil, "a configuration to judge the client in: a built-in name ("+strings.Join(configs.BuiltinNames(), ", ")+") or a file (configs/*.json shows the format); repeatable; default every built-in one")
	f.StringVar(&o.Expect, "expect", "", "your pins: the violations your stack is known to have, one a line with its reason (expectations/*.txt shows the format)")
	f.StringVar(&o.WriteExpect, "write-expect", "", "write what this run observed as a pins file, each reason a placeholder, for --expect")
	f.StringVar(&o.Summary, "summary", "", `write a Markdown summary to this file ("-": stdout), e.g. "$GITHUB_STEP_SUMMARY"`)
	f.StringVar(&o.Evidence, "evidence", "rpcbench-judge", `evidence directory to write ("" for none)`)
	f.StringVar(&o.JSON, "json", "", `also write the results as JSON to this file ("-": stdout, the CASE lines then go to stderr)`)
	f.StringVar(&o.Stack, "stack", "", "judge a shipped stack's adapter ("+strings.Join(stackbuild.Stacks(), ", ")+"), at a release as NAME@VERSION (grpc-go@v1.70.0): built against that release in the cache first")
	f.StringVar(&o.Side, "side", "client", "with --stack: judge its client, its server, or both")
	f.StringVar(&o.Cache, "cache", "", "where --stack builds adapters (default $XDG_CACHE_HOME/rpcbench/stacks)")
	f.BoolVar(&o.NoReference, "no-reference", false, "leave out rpcbench's own client's columns, the reference beside yours")
	f.StringVar(&o.RPCServer, "rpcserver", "", `rpcserver binary (default "rpcserver" next to the rpcbench executable)`)
	o.control.runFlags(cmd)
	return cmd
}

// stackNameRE is what a judged stack may call itself: its name becomes
// part of its cases' names.
var stackNameRE = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*(@[0-9a-z.+-]+)?$`)

// judged is one adapter judge was given, once it has said what it is.
type judged struct {
	side    string // "client" or "server"
	argv    []string
	stack   string
	version string
	runtime string
	caps    cut.Capabilities
}

func (j judged) command() string { return strings.Join(j.argv, " ") }

// probeTimeout bounds each adapter's first start, which reads what it
// says of itself.
const probeTimeout = 30 * time.Second

// probeClient starts the client adapter once and reads its init_ok.
func probeClient(ctx context.Context, argv []string) (judged, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	a, err := cut.Start(ctx, cut.Spec{Bin: argv[0], Args: argv[1:], Scenario: "probe"})
	if err != nil {
		return judged{}, fmt.Errorf("the client adapter %q: %w", strings.Join(argv, " "), err)
	}
	info := a.Info()
	if err := a.Close(); err != nil {
		return judged{}, fmt.Errorf("the client adapter %q: %w", strings.Join(argv, " "), err)
	}
	return judged{side: "client", argv: argv, stack: info.Stack, version: info.Version, runtime: info.Runtime, caps: info.Caps}, nil
}

// probeServer starts the server adapter once and reads its serving line.
func probeServer(ctx context.Context, argv []string) (judged, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	s, err := sut.Start(ctx, sut.Spec{Bin: argv[0], Args: argv[1:], Scenario: "probe"})
	if err != nil {
		return judged{}, fmt.Errorf("the server adapter %q: %w", strings.Join(argv, " "), err)
	}
	info := s.Info()
	if err := s.Close(); err != nil {
		return judged{}, fmt.Errorf("the server adapter %q: %w", strings.Join(argv, " "), err)
	}
	return judged{side: "server", argv: argv, stack: info.Stack, version: info.Version, runtime: info.Runtime}, nil
}

// errAdapter is a judged adapter that could not be started or said
// something rpcbench cannot use: the run's ERROR, exit 1, before any
// scenario.
type errAdapter struct{ err error }

func (e *errAdapter) Error() string { return "ERROR " + e.err.Error() }
func (e *errAdapter) Unwrap() error { return errFailed }

// adapterError is the error of an adapter that failed to start: its
// ERROR, unless a signal stopped the run, which is that signal's.
func adapterError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return &errAdapter{err}
}

// loadConfigs reads --config's values: a built-in name or a file each,
// every name once.
func loadConfigs(values []string) ([]cut.GRPCConfig, error) {
	builtin := configs.Builtin()
	if len(values) == 0 {
		return builtin, nil
	}
	var out []cut.GRPCConfig
	for _, v := range values {
		var g cut.GRPCConfig
		if i := slices.IndexFunc(builtin, func(b cut.GRPCConfig) bool { return b.Name == v }); i >= 0 {
			g = builtin[i]
		} else if _, err := os.Stat(v); err == nil || strings.ContainsAny(v, "/.") {
			if g, err = configs.Load(v); err != nil {
				return nil, usageErrorf("", "--config: %v", err)
			}
		} else {
			return nil, usageErrorf("built-in configurations: "+strings.Join(configs.BuiltinNames(), ", "),
				"--config %q: no built-in configuration and no file of that name", v)
		}
		if i := slices.IndexFunc(out, func(o cut.GRPCConfig) bool { return o.Name == g.Name || judge.Slug(o.Name) == judge.Slug(g.Name) }); i >= 0 {
			return nil, usageErrorf("", "--config: %s and %s are both named %q (or the same in a case name): names must differ", cmp.Or(out[i].Source, out[i].Name), cmp.Or(g.Source, g.Name), g.Name)
		}
		out = append(out, g)
	}
	return out, nil
}

// checkStack refuses a judged adapter's name that cannot name a column.
func checkStack(j judged) error {
	switch {
	case !stackNameRE.MatchString(j.stack):
		return &errAdapter{fmt.Errorf("the %s adapter %q says it is stack %q: a stack's name is lowercase words joined by - (it names its column and its cases)", j.side, j.command(), j.stack)}
	case j.stack == judge.StackRPCBench || j.stack == judge.StackRPCServer:
		return &errAdapter{fmt.Errorf("the %s adapter %q says it is %q, the reference's name: give it its own", j.side, j.command(), j.stack)}
	}
	return nil
}

func runJudge(ctx context.Context, o *judgeOptions) error {
	switch {
	case o.WriteExpect == stdoutPath:
		return usageErrorf("", "--write-expect - : name a file, which --expect reads back")
	case o.JSON == stdoutPath && o.Summary == stdoutPath:
		return usageErrorf("", "--json - and --summary - would both write to stdout; name a file for one of them")
	case o.Stack == "" && (o.Side != "client" || o.Cache != ""):
		return usageErrorf("", "--side and --cache are --stack's: judge a shipped adapter with --stack NAME@VERSION")
	}
	cfgs, err := loadConfigs(o.Configs)
	if err != nil {
		return err
	}
	if o.Expect != "" {
		if _, err := os.Stat(o.Expect); err != nil {
			return usageErrorf("", "--expect: %v", err)
		}
	}
	for _, out := range []struct{ flag, path string }{{"--write-expect", o.WriteExpect}, {"--summary", o.Summary}} {
		if out.path != "" && out.path != "-" {
			if err := outfile.Check(out.path); err != nil {
				return usageErrorf("", "%s: %v", out.flag, err)
			}
		}
	}
	bin, err := resolveServer(cmp.Or(o.RPCServer, o.app.Server), o.Executable)
	if err != nil {
		return err
	}
	// Every scenario is in the suite, so that a pins file may name any;
	// only the columns of what is judged run.
	base := grpc.Suite()
	suite := judge.Suite{Group: judgeGroup, Client: base.Client, Server: base.Server, PinFiles: map[string]string{},
		Configs: cfgs, Stacks: []cut.Stack{}, ServerStacks: []string{}, NoReference: o.Client == nil || o.NoReference}
	var given []givenAdapter
	var who []judged
	// name is --stack's column, when it names one.
	var name string
	if o.Stack != "" {
		var bin, pinName string
		if bin, name, pinName, err = buildStack(ctx, o.Stack, o.Cache, o.Err); err != nil {
			return err
		}
		if o.Side != "server" {
			o.Client = []string{bin}
		}
		if o.Side != "client" {
			o.Server = []string{bin, "serve"}
		}
		if o.Expect == "" {
			suite.PinNames = map[string]string{name: pinName}
		}
		suite.NoReference = o.Client == nil || o.NoReference
	}
	if o.Client != nil {
		j, err := probeClient(ctx, o.Client)
		if err != nil {
			return adapterError(ctx, err)
		}
		j.stack = cmp.Or(name, j.stack)
		if err := checkStack(j); err != nil {
			return err
		}
		st := cut.Stack{Name: j.stack}
		for _, shipped := range cut.Stacks() {
			if shipped.Name == j.stack {
				st.PingsAlways = shipped.PingsAlways
			}
		}
		suite.Stacks = []cut.Stack{st}
		who = append(who, j)
	}
	if o.Server != nil {
		j, err := probeServer(ctx, o.Server)
		if err != nil {
			return adapterError(ctx, err)
		}
		j.stack = cmp.Or(name, j.stack)
		if err := checkStack(j); err != nil {
			return err
		}
		suite.ServerStacks = []string{j.stack}
		who = append(who, j)
	}
	for _, j := range who {
		if suite.PinNames == nil {
			suite.PinFiles[j.stack] = o.Expect
		}
		i := slices.IndexFunc(given, func(g givenAdapter) bool { return g.Stack == j.stack })
		if i < 0 {
			given = append(given, givenAdapter{Stack: j.stack})
			i = len(given) - 1
		}
		if j.side == "client" {
			given[i].Adapter.Client = j.argv
		} else {
			given[i].Adapter.Server = j.argv
		}
		line := fmt.Sprintf("%s %s (%s; %s: %s)", j.stack, j.version, j.runtime, j.side, j.command())
		given[i].Env = strings.TrimPrefix(given[i].Env+"; "+line, "; ")
	}
	for _, j := range who {
		p, err := suite.LoadPins(j.stack)
		if err != nil {
			return usageErrorf("", "--expect: %v", err)
		}
		if u := suite.Unjudged(p, j.stack); len(u) > 0 {
			fmt.Fprintf(o.Err, "rpcbench: %s pins configurations this run does not judge (%s): kept, not judged\n", p.Path, strings.Join(u, ", "))
		}
	}
	o.suite = suite
	all := scenario.Registry(suite.Cases())
	list, err := o.filter(all, all)
	if err != nil {
		return err
	}
	var names []string
	for _, j := range who {
		if strings.Contains(j.stack, "@") {
			names = append(names, fmt.Sprintf("%s as a %s", j.stack, j.side))
			continue
		}
		names = append(names, fmt.Sprintf("%s %s as a %s", j.stack, j.version, j.side))
	}
	b := o.control.batch(o.app, list, bin)
	b.Evidence = o.Evidence
	b.JSON = o.JSON
	b.Given = given
	b.Announce = " judging " + strings.Join(names, " and ")
	lines, runErr := runBatch(ctx, b)
	if runErr != nil && !errors.Is(runErr, errFailed) {
		return runErr
	}
	if o.WriteExpect != "" {
		if err := writeExpect(o, who, lines); err != nil {
			return err
		}
	}
	if o.Summary != "" {
		if err := writeSummary(o, who, cfgs, lines); err != nil {
			return err
		}
	}
	return runErr
}

// writeExpect writes the violations the run observed of the judged
// stacks as a pins file, each with a placeholder reason.
func writeExpect(o *judgeOptions, who []judged, lines []report.Line) error {
	var ps []pins.Pin
	var stacks []string
	for _, j := range who {
		if slices.Contains(stacks, j.stack) {
			continue
		}
		stacks = append(stacks, j.stack)
		ps = append(ps, judge.Observed(lines, j.stack, judge.PlaceholderReason(j.stack))...)
	}
	// A pin --expect already had keeps its reason: rewriting the pins
	// after an upgrade asks only for the reasons of what changed.
	// A pin of a (configuration, scenario) this run did not judge is kept
	// as it was: a run narrowed by --run or --config rewrites only what
	// it saw.
	if o.Expect != "" && len(who) > 0 {
		old, err := o.suite.LoadPins(who[0].stack)
		if err != nil {
			return err
		}
		for i, p := range ps {
			if had, ok := old.Lookup(p.Key); ok {
				ps[i].Reason = had.Reason
			}
		}
		for _, p := range old.All() {
			if !ranCase(lines, stacks, p.Config, p.Scenario) {
				ps = append(ps, p)
			}
		}
	}
	header := []string{
		fmt.Sprintf("Pins of %s, written by rpcbench judge --write-expect from what it observed.", strings.Join(stacks, " and ")),
		"Each line: <config> <scenario> <invariant> [sometimes]  # why the stack does this.",
		"Replace each TODO with the reason (a pin the --expect file had keeps its own), then judge with --expect " + o.WriteExpect + ":",
		"an unpinned violation fails the run, and so does a pin that no longer happens.",
	}
	f, err := outfile.Create(o.WriteExpect)
	if err != nil {
		return err
	}
	if err := pins.Write(f, header, ps); err != nil {
		f.Abort()
		return err
	}
	if err := f.Commit(); err != nil {
		return err
	}
	fmt.Fprintf(o.Err, "rpcbench: wrote %s to %s: replace each reason, then judge with --expect %s\n", plural(len(ps), "pin"), o.WriteExpect, o.WriteExpect)
	return nil
}

// ranCase reports whether lines hold a case of one of stacks in config
// and scenario.
func ranCase(lines []report.Line, stacks []string, config, scenario string) bool {
	return slices.ContainsFunc(lines, func(l report.Line) bool {
		f := map[string]string{}
		for _, fl := range l.Fields {
			f[fl.Key] = fl.Value
		}
		return slices.Contains(stacks, f["stack"]) && f["config"] == config && f["scenario"] == scenario
	})
}

// writeSummary writes the run's Markdown summary.
func writeSummary(o *judgeOptions, who []judged, cfgs []cut.GRPCConfig, lines []report.Line) error {
	var w io.Writer = o.Out
	var f *outfile.File
	if o.Summary != "-" {
		var err error
		if f, err = outfile.Create(o.Summary); err != nil {
			return err
		}
		w = f
	}
	var names []string
	for _, c := range cfgs {
		names = append(names, c.Name)
	}
	err := report.WriteJudgeSummary(w, report.JudgeSummary{
		Stacks:   judgedLines(who),
		Configs:  names,
		Expect:   o.Expect,
		Evidence: o.Evidence,
	}, lines)
	if f == nil {
		return err
	}
	if err != nil {
		f.Abort()
		return err
	}
	return f.Commit()
}

func judgedLines(who []judged) []string {
	var out []string
	for _, j := range who {
		out = append(out, fmt.Sprintf("%s %s (%s), %s: `%s`", j.stack, j.version, j.runtime, j.side, j.command()))
	}
	return out
}

// buildStack builds the shipped adapter ref names (stackbuild) at its
// release and returns it, its column's name (NAME@VERSION when a release
// was asked for, else NAME) and the embedded pins it is judged against by
// default: the release's own when rpcbench has them, else the shipped
// release's. A reference that does not parse, a release the registry does
// not have and a missing toolchain are usage errors, before anything
// runs.
func buildStack(ctx context.Context, ref, cache string, progress io.Writer) (bin, name, pinName string, err error) {
	r, err := stackbuild.Parse(ref)
	if err != nil {
		return "", "", "", usageErrorf("valid stacks: "+strings.Join(stackbuild.Stacks(), ", "), "--stack: %v", err)
	}
	if err := r.Check(ctx); err != nil {
		if errors.Is(err, stackbuild.ErrNoSuchRelease) || errors.Is(err, stackbuild.ErrNoToolchain) {
			return "", "", "", usageErrorf("", "--stack %s: %v", ref, err)
		}
		return "", "", "", fmt.Errorf("--stack %s: %w", ref, err)
	}
	if cache == "" {
		if cache, err = stackbuild.DefaultCacheDir(); err != nil {
			return "", "", "", err
		}
	}
	if bin, err = stackbuild.Build(ctx, r, cache, progress); err != nil {
		if ctx.Err() != nil {
			return "", "", "", context.Cause(ctx)
		}
		return "", "", "", fmt.Errorf("--stack %s: %w", ref, err)
	}
	name = r.Stack
	if strings.Contains(ref, "@") {
		name = r.Stack + "@" + r.LinkedVersion()
	}
	return bin, name, releasePins(r), nil
}

// releasePins is the embedded pins file a stack at release r is judged
// against: its own (expectations/releases/) when there is one, else the
// shipped release's.
func releasePins(r stackbuild.Ref) string {
	own := "releases/" + r.Stack + "@" + r.LinkedVersion() + ".txt"
	if _, err := fs.Stat(expectations.Files, own); err == nil && !r.Shipped() {
		return own
	}
	return r.Stack + ".txt"
}
