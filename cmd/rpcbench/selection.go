package main

import (
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rpcbench/rpcbench/internal/scenario"
	suggestpkg "github.com/rpcbench/rpcbench/internal/suggest"
)

// control are the flags all and run share: which scenarios, and how
// they run.
type control struct {
	Run, Skip string
	// Stacks and Configs keep only the judging scenarios' columns of
	// these stacks and configurations; empty keeps every one.
	Stacks, Configs []string
	Timeout         time.Duration
	// Fresh writes every case of the evidence from this run, keeping
	// none that reproduced the evidence it replaces.
	Fresh bool
	// Parallel is -p: how many scenarios may run at once.
	Parallel int
	FailFast bool
	Verbose  bool
	JUnit    string
	Events   string
}

// DefaultTimeout is --timeout's default, as go test's.
const DefaultTimeout = 10 * time.Minute

func (c *control) flags(cmd *cobra.Command) {
	c.runFlags(cmd)
	f := cmd.Flags()
	f.StringSliceVar(&c.Stacks, "stack", nil, "run only the columns of this stack under test (repeat or comma-separate; e.g. grpc-go,rpcbench): scenarios that judge no stack are left out")
	f.StringSliceVar(&c.Configs, "config", nil, "run only the columns of this configuration (repeat or comma-separate; e.g. retry): scenarios that judge no stack are left out")
}

// runFlags are the flags of control but --stack and --config, which
// judge gives other meanings.
func (c *control) runFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&c.Run, "run", "", "run only the scenarios whose names match this regular expression (as go test -run, unanchored)")
	f.StringVar(&c.Skip, "skip", "", "leave out the scenarios whose names match this regular expression")
	f.DurationVar(&c.Timeout, "timeout", DefaultTimeout, "bound on each scenario: past it the scenario FAILs naming the timeout, its servers are stopped and the run goes on (0: none)")
	f.BoolVar(&c.Fresh, "fresh", false, "with an evidence directory, write every case from this run; by default a case whose verdict and stable fields this run reproduced keeps its earlier line and logs, so that a re-run changes only what changed")
	c.Parallel = runtime.NumCPU()
	f.VarP(countFlag{&c.Parallel}, "parallel", "p", "how many scenarios may run at once; by default the CPUs here; only those whose meaning is neither a timing bound nor a kernel state run beside others (and the keepalive ones, which wait on timers, up to 8 beside each other), the rest alone, and the output keeps the run order")
	f.BoolVar(&c.FailFast, "failfast", false, "stop after the first scenario that does not pass")
	f.BoolVarP(&c.Verbose, "verbose", "v", false, "print under each CASE line its attempt logs and the events its servers logged")
	f.StringVar(&c.JUnit, "junit", "", `also write JUnit XML to this file: one testsuite per group, one testcase per scenario and pass ("-": stdout, the CASE lines then go to stderr)`)
	f.StringVar(&c.Events, "json-events", "", `also write a go test -json event stream to this file ("-": stdout, the CASE lines then go to stderr), for gotestsum, tparse, go-junit-report`)
}

// batch is a batch of list, run by rpcserver at serverBin, writing where
// a says as c's flags say; the caller sets what is its own (Count,
// Evidence, JSON, Given, Announce).
func (c *control) batch(a *app, list scenario.Registry, serverBin string) batch {
	return batch{Scenarios: list, ServerBin: serverBin, Out: a.Out, Status: a.Err, Color: a.Color,
		Timeout: c.Timeout, FailFast: c.FailFast, Fresh: c.Fresh, Parallel: c.Parallel, Verbose: c.Verbose,
		JUnit: c.JUnit, Events: c.Events}
}

// filter applies --run and --skip to r; an invalid expression is a usage
// error, and so is a selection left empty.
func (c *control) filter(r scenario.Registry, all scenario.Registry) (scenario.Registry, error) {
	match := func(flag, expr string) (*regexp.Regexp, error) {
		if expr == "" {
			return nil, nil
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, usageErrorf("", "--%s: %v", flag, err)
		}
		return re, nil
	}
	run, err := match("run", c.Run)
	if err != nil {
		return nil, err
	}
	skip, err := match("skip", c.Skip)
	if err != nil {
		return nil, err
	}
	r, err = c.columns(r, all)
	if err != nil {
		return nil, err
	}
	matched := slices.DeleteFunc(slices.Clone(r), func(s scenario.Case) bool { return run != nil && !run.MatchString(s.Name) })
	out := slices.DeleteFunc(slices.Clone(matched), func(s scenario.Case) bool { return skip != nil && skip.MatchString(s.Name) })
	switch {
	case len(matched) == 0:
		msg := fmt.Sprintf("no scenario matches --run %q", c.Run)
		if s := suggest(all, c.Run); len(s) > 0 {
			return nil, usageErrorf(listHint, "%s; did you mean %s?", msg, strings.Join(s[:min(len(s), 3)], " or "))
		}
		return nil, usageErrorf(listHint, "%s", msg)
	case len(out) == 0 && c.Run != "":
		return nil, usageErrorf(listHint, "--run %q selects %s and --skip %q leaves none of them", c.Run, plural(len(matched), "scenario"), c.Skip)
	case len(out) == 0:
		return nil, usageErrorf(listHint, "--skip %q leaves none of the %s", c.Skip, plural(len(matched), "scenario"))
	}
	return out, nil
}

// columns applies --stack and --config to r: a name that no scenario of
// all runs is a usage error listing those that are, and so is a
// selection they leave empty.
func (c *control) columns(r, all scenario.Registry) (scenario.Registry, error) {
	check := func(flag string, got, valid []string) error {
		for _, v := range got {
			if !slices.Contains(valid, v) {
				return usageErrorf("valid "+flag+"s: "+strings.Join(valid, ", "), "--%s %q: no scenario runs it", flag, v)
			}
		}
		return nil
	}
	if err := check("stack", c.Stacks, all.Stacks()); err != nil {
		return nil, err
	}
	if err := check("config", c.Configs, all.Configs()); err != nil {
		return nil, err
	}
	if len(c.Stacks) == 0 && len(c.Configs) == 0 {
		return r, nil
	}
	out := slices.DeleteFunc(slices.Clone(r), func(s scenario.Case) bool {
		return (len(c.Stacks) > 0 && !slices.Contains(c.Stacks, s.Column.Stack)) ||
			(len(c.Configs) > 0 && !slices.Contains(c.Configs, s.Column.Config))
	})
	if len(out) == 0 {
		return nil, usageErrorf(listHint, "--stack %s --config %s: none of the %s selected runs in such a column",
			strings.Join(c.Stacks, ","), strings.Join(c.Configs, ","), plural(len(r), "scenario"))
	}
	return out, nil
}

// listHint points to the full list where a message has already named
// what was probably meant.
const listHint = "'rpcbench list' shows every scenario"

// suggest returns the scenario names close to name: those it is a part
// of, and those within an edit distance of 2, nearest first. A judging
// scenario's own name (which runs every column) is a candidate as well
// as each column's case.
func suggest(r scenario.Registry, name string) []string {
	names := r.Names()
	for _, c := range r {
		if sc := c.Column.Scenario; sc != "" && !slices.Contains(names, sc) {
			names = append(names, sc)
		}
	}
	return suggestpkg.Near(name, names, nil)
}
