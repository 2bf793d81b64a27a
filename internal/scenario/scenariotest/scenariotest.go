// Package scenariotest is what the group packages' tests share: the
// prerequisites found once per test binary (Main), the run of a group's
// scenarios as subtests (Cases), and the mutants that prove they catch
// their bugs (Mutants).
package scenariotest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/cut"
	"github.com/rpcbench/rpcbench/internal/leftover"
	"github.com/rpcbench/rpcbench/internal/nethost"
	"github.com/rpcbench/rpcbench/internal/pgcluster"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/scenario"
)

var serverBin = flag.String("server", "", "rpcserver binary to use (default: build one)")

// Env is shared by every test of the binary once Main has set it up: the
// rpcserver binary built once, the PostgreSQL cluster and the adapters
// found.
var Env scenario.Env

// AdapterSkip says, by stack, why the scenarios that drive its adapter
// skip, when they do.
var AdapterSkip map[string]string

// pgSkip is why the PostgreSQL scenarios skip, when they do.
var pgSkip string

// NetnsErr is nethost.Available's answer, asked once: why the
// NeedsNetwork scenarios skip, or fail when RPCBENCH_REQUIRE_NETNS=1.
var NetnsErr error

// Root returns the module's root directory, where go.mod is, from the
// test's working directory (its package's directory).
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("scenariotest: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Main sets up Env for a group's cases and runs m, returning its exit
// code: a TestMain calls os.Exit(scenariotest.Main(m, Cases())).
func Main(m *testing.M, cases []scenario.Case) int {
	flag.Parse()
	root, err := Root()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// What killed test runs left goes before this one makes its own.
	removed, err := leftover.Sweep("")
	leftover.Report(os.Stderr, "scenariotest", removed, err)
	Env.ServerBin = *serverBin
	if Env.ServerBin == "" {
		dir, err := leftover.MkdirTemp("", "cases")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		Env.ServerBin = filepath.Join(dir, "rpcserver")
		build := exec.Command("go", "build", "-o", Env.ServerBin, "github.com/rpcbench/rpcbench/cmd/rpcserver")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "build rpcserver: %v\n", err)
			return 1
		}
	}
	// One throwaway PostgreSQL cluster serves every scenario of the
	// group that needs one, started only when one does; without
	// PostgreSQL those scenarios skip, unless it is required.
	var pg *pgcluster.Cluster
	if slices.ContainsFunc(cases, func(c scenario.Case) bool { return c.Requires(scenario.NeedsPostgres) }) {
		pg, err = pgcluster.Start(context.Background())
	}
	switch {
	case pg == nil && err == nil:
	case err == nil:
		defer pg.Stop()
		Env.Postgres = pg
		dropped, err := pg.Swept()
		leftover.Report(os.Stderr, "scenariotest", dropped, err)
	case errors.Is(err, pgcluster.ErrNotFound) && !pgcluster.Required():
		pgSkip = err.Error()
	default:
		fmt.Fprintf(os.Stderr, "PostgreSQL: %v\n", err)
		return 1
	}
	NetnsErr = nethost.Available()
	// The adapters are built by ./build.sh beside rpcserver, the Go ones
	// in modules of their own; the scenarios that drive one skip without
	// it, unless they are required.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	AdapterSkip = map[string]string{}
	for _, st := range cut.Stacks() {
		bin, _, err := st.Find(ctx, filepath.Join(root, "bin"))
		if err != nil {
			AdapterSkip[st.Name] = err.Error()
			continue
		}
		if Env.Adapters == nil {
			Env.Adapters = map[string]scenario.Adapter{}
		}
		Env.Adapters[st.Name] = scenario.BinAdapter(bin)
	}
	return m.Run()
}

// AdapterMissing returns why c cannot run here for want of an adapter,
// or "".
func AdapterMissing(c scenario.Case) string {
	stack, ok := c.Adapter()
	if !ok {
		return ""
	}
	return AdapterSkip[stack]
}

// Cases runs every scenario of cases as a subtest of the same name, so
// go test -run 'TestCases/^NAME$' selects what rpcbench run NAME does.
// Those of PoolCounts run in parallel, after the others. leaveOut, when
// not nil, reports the scenarios the group leaves to its rpcbench run
// (rpcbench all, which CI diffs against the evidence), to keep go test
// -race ./... within its 3 minutes on 2 cores.
func Cases(t *testing.T, cases []scenario.Case, leaveOut func(c scenario.Case) bool) {
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			switch {
			case c.Requires(scenario.NeedsPostgres) && Env.Postgres == nil:
				t.Skip(pgSkip)
			case AdapterMissing(c) != "":
				if cut.Required() {
					t.Fatalf("%s; %s=1 demands it", AdapterMissing(c), cut.EnvRequire)
				}
				t.Skip(AdapterMissing(c))
			case leaveOut != nil && leaveOut(c):
				t.Skipf("the %s group runs it: rpcbench all --group %s", c.Group, c.Group)
			case c.Requires(scenario.NeedsNetwork) && NetnsErr != nil:
				if nethost.Required() {
					t.Fatalf("%v; %s=1 demands test hosts", NetnsErr, nethost.EnvRequire)
				}
				t.Skip(NetnsErr.Error())
			}
			if c.Pool == scenario.PoolCounts {
				// As rpcbench -p runs them: beside each other, once the
				// scenarios that run alone are done.
				t.Parallel()
			}
			e := Env
			if c.NoServer {
				// Registered to start none, it must pass without the
				// binary at all (TestNoServerScenarios counts on it).
				e.ServerBin = "/nonexistent/rpcserver"
			}
			line := c.Run(context.Background(), e)
			t.Log(report.Format(line))
			switch {
			case line.Verdict == report.NotApplicable:
				t.Skip("n/a: " + line.Why())
			case line.Verdict == report.Skipped:
				t.Skip(line.Why())
			case !line.Verdict.Agrees():
				t.Errorf("%s", report.Format(line))
			}
		})
	}
}
