package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/rpcbench/rpcbench/internal/cut"
	"github.com/rpcbench/rpcbench/internal/nethost"
	"github.com/rpcbench/rpcbench/internal/pgcluster"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/scenario"
)

// The checks a batch makes of this machine, variables so that tests can
// stand in for it.
var (
	// netnsAvailable is nethost.Available: nil when test hosts can be
	// made here.
	netnsAvailable = nethost.Available
	// startPG is startPostgres.
	startPG = startPostgres
)

// prereqs is what a batch found, once before its first scenario, about
// what its scenarios need beyond an rpcserver binary (scenario.Case.Needs).
type prereqs struct {
	// Postgres serves the scenarios that need PostgreSQL; nil when none
	// does, or PostgreSQL is missing.
	Postgres scenario.Databases
	// Adapters are the client adapters' binaries, by stack, for the
	// scenarios that need one.
	Adapters map[string]scenario.Adapter
	// Stacks says, for env.txt, each adapter found: its stack, version
	// and runtime, in cut.Stacks order.
	Stacks []string
	// Stop stops what the check started (PostgreSQL); never nil.
	Stop func()
	// missing holds, for each Needs value this machine does not meet, the
	// verdict and why that every scenario needing it gets instead of
	// running.
	missing map[string]unmet
}

// givenAdapter is an adapter a batch is given rather than looks for.
type givenAdapter struct {
	Stack   string
	Adapter scenario.Adapter
	// Env is its line in env.txt: stack, version and runtime.
	Env string
}

// unmet is what a scenario whose prerequisite is missing reports.
type unmet struct {
	verdict report.Verdict
	why     string
}

// instead returns the line c reports instead of running when a
// prerequisite of it is missing, and false when c is to run. A required
// prerequisite's FAIL outweighs another's SKIP; among equals the first of
// c.Needs is reported.
func (p prereqs) instead(c scenario.Case) (report.Line, bool) {
	var m unmet
	ok := false
	for _, n := range c.Needs {
		if u, miss := p.missing[n]; miss && (!ok || m.verdict == report.Skipped && u.verdict != report.Skipped) {
			m, ok = u, true
		}
	}
	if !ok {
		return report.Line{}, false
	}
	if m.verdict == report.Skipped {
		return report.Skip(c.Name, m.why), true
	}
	return report.Line{Name: c.Name, Verdict: m.verdict, Fields: []report.Field{{Key: report.WhyKey, Value: m.why}}}, true
}

// checkPrereqs checks, once, each prerequisite a scenario of r needs, and
// says on status what is missing and what the scenarios needing it will
// report:
//
//   - scenario.NeedsPostgres: it starts the throwaway PostgreSQL cluster
//     those scenarios share (or connects through RPCBENCH_PG_DSN).
//     Without PostgreSQL binaries they SKIP, saying how to install them;
//     with RPCBENCH_REQUIRE_PG=1, or on any other failure, the batch
//     cannot be set up and the error says why.
//   - scenario.NeedsNetwork: nethost.Available. When test hosts cannot be
//     made here the scenarios SKIP with its error, which says how to get
//     them; with RPCBENCH_REQUIRE_NETNS=1 they FAIL instead, saying that
//     the variable demands them.
//   - scenario.NeedsAdapter(stack), for each stack of cut.Stacks: the
//     stack's adapter, beside rpcserver or where its variable says,
//     started once to read its init_ok (cut.Stack.Find). When it is
//     missing or does not start, the scenarios SKIP with what to get;
//     with RPCBENCH_REQUIRE_ADAPTERS=1 they FAIL. Each adapter found is
//     a Stacks line for env.txt.
//
// A Needs value this runner does not know is not checked: the scenario
// runs and fails if its need is not met. The returned Stop is never nil,
// even with an error.
func checkPrereqs(ctx context.Context, r scenario.Registry, serverBin string, status io.Writer, given []givenAdapter) (prereqs, error) {
	p := prereqs{Stop: func() {}, missing: map[string]unmet{}, Adapters: map[string]scenario.Adapter{}}
	for _, g := range given {
		p.Adapters[g.Stack] = g.Adapter
		p.Stacks = append(p.Stacks, g.Env)
	}
	need := map[string]int{} // Needs → scenarios that have it
	for _, c := range r {
		for _, n := range c.Needs {
			need[n]++
		}
	}
	if n := need[scenario.NeedsPostgres]; n > 0 {
		pg, stop, err := startPG(ctx, status)
		switch {
		case err == nil:
			p.Postgres, p.Stop = pg, stop
		case errors.Is(err, pgcluster.ErrNotFound) && !pgcluster.Required():
			p.missing[scenario.NeedsPostgres] = unmet{report.Skipped, err.Error()}
			fmt.Fprintf(status, "rpcbench: %s will SKIP without PostgreSQL: %v\n", plural(n, "scenario"), err)
		default:
			return p, fmt.Errorf("PostgreSQL for %s: %w", plural(n, "scenario"), err)
		}
	}
	for _, st := range cut.Stacks() {
		n := need[scenario.NeedsAdapter(st.Name)]
		if _, ok := p.Adapters[st.Name]; n == 0 || ok {
			continue
		}
		bin, info, err := st.Find(ctx, filepath.Dir(serverBin))
		switch {
		case err == nil:
			p.Adapters[st.Name] = scenario.BinAdapter(bin)
			p.Stacks = append(p.Stacks, fmt.Sprintf("%s %s (%s)", st.Name, info.Version, info.Runtime))
			continue
		case cut.Required():
			p.missing[scenario.NeedsAdapter(st.Name)] = unmet{report.Fail, fmt.Sprintf("%v; %s=1 demands it", err, cut.EnvRequire)}
		default:
			p.missing[scenario.NeedsAdapter(st.Name)] = unmet{report.Skipped, err.Error()}
		}
		m := p.missing[scenario.NeedsAdapter(st.Name)]
		fmt.Fprintf(status, "rpcbench: %s will %s without the %s adapter: %v\n", plural(n, "scenario"), m.verdict, st.Name, err)
	}
	if n := need[scenario.NeedsNetwork]; n > 0 {
		if err := netnsAvailable(); err != nil {
			m := unmet{report.Skipped, err.Error()}
			if nethost.Required() {
				m = unmet{report.Fail, fmt.Sprintf("%v; %s=1 demands test hosts", err, nethost.EnvRequire)}
			}
			p.missing[scenario.NeedsNetwork] = m
			fmt.Fprintf(status, "rpcbench: %s will %s without test hosts: %v\n", plural(n, "scenario"), m.verdict, err)
		}
	}
	return p, nil
}
