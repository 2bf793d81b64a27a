package cases

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/cut"
	"github.com/rpcbench/rpcbench/internal/nethost"
	"github.com/rpcbench/rpcbench/internal/pgcluster"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

var serverBin = flag.String("server", "", "rpcserver binary to use (default: build one)")

// env is shared by every test: the rpcserver binary is built once.
var env Env

func TestMain(m *testing.M) {
	if mode := os.Getenv(envFakeAdapter); mode != "" {
		os.Exit(fakeAdapterMain(mode))
	}
	if mode := os.Getenv(envFakeServer); mode != "" {
		os.Exit(fakeServerMain(mode))
	}
	flag.Parse()
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	env.ServerBin = *serverBin
	if env.ServerBin == "" {
		dir, err := os.MkdirTemp("", "rpcbench-cases-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		env.ServerBin = filepath.Join(dir, "rpcserver")
		build := exec.Command("go", "build", "-o", env.ServerBin, "github.com/rpcbench/rpcbench/cmd/rpcserver")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "build rpcserver: %v\n", err)
			return 1
		}
	}
	// One throwaway PostgreSQL cluster serves every scenario that needs
	// one; without PostgreSQL those scenarios skip, unless it is
	// required.
	pg, err := pgcluster.Start(context.Background())
	switch {
	case err == nil:
		defer pg.Stop()
		env.Postgres = pg
	case errors.Is(err, pgcluster.ErrNotFound) && !pgcluster.Required():
		pgSkip = err.Error()
	default:
		fmt.Fprintf(os.Stderr, "PostgreSQL: %v\n", err)
		return 1
	}
	netnsErr = nethost.Available()
	// The adapters are built by ./build.sh beside rpcserver, the Go ones
	// in modules of their own; the scenarios that drive one skip without
	// it, unless they are required.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adapterSkip = map[string]string{}
	for _, st := range cut.Stacks() {
		bin, _, err := st.Find(ctx, filepath.Join("..", "..", "bin"))
		if err != nil {
			adapterSkip[st.Name] = err.Error()
			continue
		}
		if env.Adapters == nil {
			env.Adapters = map[string]string{}
		}
		env.Adapters[st.Name] = bin
	}
	return m.Run()
}

// adapterSkip says, by stack, why the scenarios that drive its adapter
// skip, when they do.
var adapterSkip map[string]string

// adapterMissing returns why c cannot run here for want of an adapter,
// or "".
func adapterMissing(c Case) string {
	stack, ok := c.Adapter()
	if !ok {
		return ""
	}
	return adapterSkip[stack]
}

// inGoTest reports whether TestCases runs c. It runs every column of
// rpcbench's own client and grpc-go's but the keepalive scenarios' (each
// waits out 11s of keepalive), and of the other stacks only the
// scenarios of goTestStackScenarios, so that go test sees each adapter
// work while keeping within its time: the grpc group runs them all
// (rpcbench all --group grpc, which .ci/run diffs against the
// evidence).
func inGoTest(c Case) bool {
	is := func(scs []string) bool {
		return slices.ContainsFunc(scs, func(sc string) bool { return strings.HasPrefix(c.Name, sc+"_") })
	}
	if c.Group == GroupGRPC && is(goTestLeftOut) || slices.Contains(goTestGroupOnly, c.Name) {
		return false
	}
	stack, ok := c.Adapter()
	if !ok || stack == StackGRPCGo {
		return true
	}
	return is(goTestStackScenarios)
}

// goTestLeftOut are the grpc scenarios TestCases runs in no column.
var goTestLeftOut = []string{"grpc_silent_peer", "grpc_half_open_link"}

// goTestGroupOnly are scenarios of other groups that TestCases leaves to
// their group's run (rpcbench all, which CI diffs against the evidence),
// to keep go test -race ./... within its 3 minutes on 2 cores: the chaos
// seeds after the first, 18 s between them, whose checker
// internal/chaos's tests cover.
var goTestGroupOnly = []string{"chaos_seed2_sqlite", "chaos_seed3_postgres_two_servers"}

// goTestStackScenarios are the grpc scenarios TestCases runs in every
// stack's columns, client and server.
var goTestStackScenarios = []string{"grpc_concurrent_own_answers", "grpc_unavailable_after_exec", "grpcserver_timeout_1n",
	"grpcserver_cancel_stops_handler"}

// pgSkip is why the PostgreSQL scenarios skip, when they do.
var pgSkip string

// netnsErr is nethost.Available's answer, asked once: why the
// NeedsNetwork scenarios skip, or fail when RPCBENCH_REQUIRE_NETNS=1.
var netnsErr error

// TestCases runs every scenario as a subtest of the same name, so
// go test -run 'TestCases/^NAME$' selects what rpcbench run NAME does.
// Those of PoolCounts run in parallel, after the others.
func TestCases(t *testing.T) {
	for _, c := range Default() {
		t.Run(c.Name, func(t *testing.T) {
			switch {
			case c.Requires(NeedsPostgres) && env.Postgres == nil:
				t.Skip(pgSkip)
			case adapterMissing(c) != "":
				if cut.Required() {
					t.Fatalf("%s; %s=1 demands it", adapterMissing(c), cut.EnvRequire)
				}
				t.Skip(adapterMissing(c))
			case !inGoTest(c):
				t.Skipf("the %s group runs it: rpcbench all --group %s", c.Group, c.Group)
			case c.Requires(NeedsNetwork) && netnsErr != nil:
				if nethost.Required() {
					t.Fatalf("%v; %s=1 demands test hosts", netnsErr, nethost.EnvRequire)
				}
				t.Skip(netnsErr.Error())
			}
			if c.Pool == PoolCounts {
				// As rpcbench -p runs them: beside each other, once the
				// scenarios that run alone are done.
				t.Parallel()
			}
			e := env
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
			case !line.Verdict.Agrees():
				t.Errorf("%s", report.Format(line))
			}
		})
	}
}

var snakeCase = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

func TestRegistry(t *testing.T) {
	r := Default()
	seen := map[string]bool{}
	for _, c := range r {
		if !snakeCase.MatchString(c.Name) {
			t.Errorf("name %q is not snake_case", c.Name)
		}
		if seen[c.Name] {
			t.Errorf("name %q is used twice", c.Name)
		}
		seen[c.Name] = true
		if c.Doc == "" || c.run == nil {
			t.Errorf("%s: missing doc or run function", c.Name)
		}
		if got, ok := r.Lookup(c.Name); !ok || got.Name != c.Name {
			t.Errorf("Lookup(%q) = %q, %v", c.Name, got.Name, ok)
		}
	}
	if _, ok := r.Lookup("no_such_case"); ok {
		t.Errorf("Lookup of an unknown name succeeded")
	}
	if got := len(r.Select(GroupAll)); got != len(r) {
		t.Errorf("Select(%q) has %d scenarios, registry %d", GroupAll, got, len(r))
	}
	if names := r.Names(); len(names) != len(seen) {
		t.Errorf("Names() has %d entries, registry %d", len(names), len(seen))
	}
}

// TestGroupFiles: each group file lists scenarios of its own group only,
// the groups run in the order their files are concatenated, and Default
// holds every listed scenario once: a line pasted into the wrong file, a
// group left out of Default or added without a place in the order fails
// here.
func TestGroupFiles(t *testing.T) {
	files := []struct {
		group string
		list  []Case
	}{
		{GroupEvidence, evidenceGroup()}, {GroupRobustness, robustnessGroup()}, {GroupDurability, durabilityGroup()},
		{GroupChaos, chaosGroup()}, {GroupGovernance, governanceGroup()}, {GroupNetwork, networkGroup()}, {GroupGRPC, grpcGroup()},
		{GroupDeploy, deployGroup()},
	}
	var want []string
	var all []Case
	for _, f := range files {
		if len(f.list) == 0 {
			t.Errorf("group %s lists no scenario", f.group)
		}
		for _, c := range f.list {
			if c.Group != f.group {
				t.Errorf("%s, listed in group_%s.go, says group %q", c.Name, f.group, c.Group)
			}
		}
		want = append(want, f.group)
		all = append(all, f.list...)
	}
	r := Default()
	if got := r.Groups(); !slices.Equal(got, want) {
		t.Errorf("Default's groups %v, want %v", got, want)
	}
	if got, want := r.Names(), Registry(all).Names(); !slices.Equal(got, want) {
		t.Errorf("Default holds %d scenarios, the group files list %d, or in another order", len(got), len(want))
	}
}

// TestReadmeCounts checks every "N scenarios" in the README, docs/*.md
// and run.sh, which speak of the evidence group, every "N GROUP
// scenarios", and "N scenarios in all", against the registry, so that
// adding a scenario is one function and one registry line and a stale
// count fails here.
func TestReadmeCounts(t *testing.T) {
	r := Default()
	count := regexp.MustCompile(`\b(\d+) (?:(` + strings.Join(r.Groups(), "|") + `) )?scenarios\b(\s+in all)?`)
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs/*.md found (%v): has docs/ moved?", err)
	}
	for _, path := range append([]string{"../../README.md", "../../run.sh"}, docs...) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range count.FindAllSubmatch(b, -1) {
			group := string(m[2])
			switch {
			case len(m[3]) > 0:
				group = GroupAll
			case group == "":
				group = GroupEvidence
			}
			if got, want := atoi(string(m[1])), len(r.Select(group)); got != want {
				t.Errorf("%s says %q; the %s group has %d", path, m[0], group, want)
			}
		}
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// TestInterruptedIsNeitherPassNorFail: a scenario whose context ends is
// INTERRUPTED, whatever it checked before.
func TestInterruptedIsNeitherPassNorFail(t *testing.T) {
	c, ok := Default().Lookup("decoder_split_model") // in-process: no server to start
	if !ok {
		t.Fatal("decoder_split_model is not registered")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	line := c.Run(ctx, env)
	if line.Verdict != report.Interrupted {
		t.Errorf("verdict %v, want %v: %s", line.Verdict, report.Interrupted, report.Format(line))
	}
}

// TestErroredIsError: a scenario that calls Errored ends ERROR, its why
// naming the error before any failed check, and nothing after the call
// runs; one that only fails a check ends FAIL.
func TestErroredIsError(t *testing.T) {
	after := false
	errored := Case{Name: "errored", NoServer: true, run: func(t *T) {
		t.Check(false, "x=1, want 2")
		t.Errored("adapter fake exited with 2 calls unanswered")
		after = true
	}}
	line := errored.Run(context.Background(), Env{})
	if line.Verdict != report.Error || line.Why() != "adapter fake exited with 2 calls unanswered; x=1, want 2" || after {
		t.Errorf("got %s (ran past Errored: %v), want ERROR, why naming the error then the failure", report.Format(line), after)
	}
	failed := Case{Name: "failed", NoServer: true, run: func(t *T) { t.Check(false, "x=1, want 2") }}
	if line := failed.Run(context.Background(), Env{}); line.Verdict != report.Fail {
		t.Errorf("got %s, want FAIL", report.Format(line))
	}
}

// TestExecEventsCountExecutions: the server log alone says how often a
// debit executed: its EXEC events with status OK, on connections that did
// not declare themselves control connections, match the count the
// scenario took from the server's counters.
func TestExecEventsCountExecutions(t *testing.T) {
	for _, name := range []string{"negative_control_naive_retry", "retry_with_idempotency_key"} {
		t.Run(name, func(t *testing.T) {
			c, ok := Default().Lookup(name)
			if !ok {
				t.Fatalf("%s is not registered", name)
			}
			dir := t.TempDir()
			line := c.Run(context.Background(), Env{ServerBin: env.ServerBin, LogDir: dir})
			if !line.Passed() {
				t.Fatalf("%s", report.Format(line))
			}
			var want string
			for _, f := range line.Fields {
				if f.Key == "serverDebitExec" {
					want = f.Value
				}
			}
			b, err := os.Open(filepath.Join(dir, "server-"+name+".log"))
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			evs, err := serverapi.ReadEvents(b)
			if err != nil {
				t.Fatal(err)
			}
			control := map[int64]bool{}
			execs := 0
			for _, e := range evs {
				conn, _ := e.Int(serverapi.KeyConn)
				switch {
				case e.Name == serverapi.EventConnRole && e.Text(serverapi.KeyRole) == serverapi.RoleControl:
					control[conn] = true
				case e.Name == serverapi.EventExec && !control[conn] &&
					e.Text(serverapi.KeyMethod) == bank.MethodDebit && e.Text(serverapi.KeyStatus) == "OK":
					execs++
				}
			}
			if got := strconv.Itoa(execs); got != want || want == "" {
				t.Errorf("EXEC events of OK debits on the scenario's own connections: %s, serverDebitExec=%s", got, want)
			}
		})
	}
}

// TestNoServerNote: a scenario that starts no server says so in the log
// directory, and one that does leaves no such note.
func TestNoServerNote(t *testing.T) {
	for name, wantNote := range map[string]bool{"decoder_split_model": true, "late_response_dropped_by_id": false} {
		c, _ := Default().Lookup(name)
		dir := t.TempDir()
		if line := c.Run(context.Background(), Env{ServerBin: env.ServerBin, LogDir: dir}); !line.Passed() {
			t.Fatalf("%s", report.Format(line))
		}
		_, err := os.Stat(filepath.Join(dir, report.NoServerNote(name)))
		if gotNote := err == nil; gotNote != wantNote {
			t.Errorf("%s: note present %v, want %v", name, gotNote, wantNote)
		}
	}
}

// TestNoServerScenarios: the committed evidence has a no-server note for
// exactly the scenarios registered NoServer (which TestCases runs with no
// rpcserver binary at all, so that each passes without one), and for the grpc cases
// whose stack lacked a capability their column needs, by the adapter's
// own init_ok (their CASE line says "STACK lacks"), which cannot be
// known before the adapter starts.
func TestNoServerScenarios(t *testing.T) {
	lacked := map[string]bool{}
	f, err := os.Open(filepath.Join("..", "..", "evidence", GroupGRPC, "output.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines, err := report.ReadOutput(f)
	f.Close()
	if err == nil {
		for _, l := range lines {
			for _, f := range l.Fields {
				if f.Key == "unsupported" && strings.Contains(f.Value, " lacks ") {
					lacked[l.Name] = true
				}
			}
		}
	} else {
		t.Fatal(err)
	}
	var noServer []string
	for _, c := range Default() {
		if !c.NoServer {
			continue
		}
		noServer = append(noServer, c.Name)
	}
	var noted []string
	for _, c := range Default() {
		for _, dir := range []string{"logs", filepath.Join(c.Group, "logs")} {
			if _, err := os.Stat(filepath.Join("..", "..", "evidence", dir, report.NoServerNote(c.Name))); err == nil && (c.NoServer || !lacked[c.Name]) {
				noted = append(noted, c.Name)
			}
		}
	}
	slices.Sort(noted)
	slices.Sort(noServer)
	if !slices.Equal(noted, noServer) {
		t.Errorf("evidence notes no server for %v; registered NoServer: %v", noted, noServer)
	}
}

// TestTimeoutFails: a scenario whose context its runner's bound ended
// (a *TimeoutError cause) FAILs naming the bound; any other cause leaves
// it INTERRUPTED.
func TestTimeoutFails(t *testing.T) {
	c, _ := Default().Lookup("decoder_split_model")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&TimeoutError{After: 50 * time.Millisecond, Bound: "--timeout"})
	line := c.Run(ctx, env)
	if line.Verdict != report.Fail || !strings.HasPrefix(line.Why(), "timed out after 50ms (--timeout)") {
		t.Errorf("got %s, want FAIL why=[timed out after 50ms (--timeout)...]", report.Format(line))
	}
}
