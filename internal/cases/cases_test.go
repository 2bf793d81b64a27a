package cases

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rpcbench/rpcbench/internal/cases/chaos"
	"github.com/rpcbench/rpcbench/internal/cases/deploy"
	"github.com/rpcbench/rpcbench/internal/cases/durability"
	"github.com/rpcbench/rpcbench/internal/cases/evidence"
	"github.com/rpcbench/rpcbench/internal/cases/governance"
	"github.com/rpcbench/rpcbench/internal/cases/grpc"
	"github.com/rpcbench/rpcbench/internal/cases/hostile"
	"github.com/rpcbench/rpcbench/internal/cases/network"
	"github.com/rpcbench/rpcbench/internal/cases/robustness"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/scenario"
)

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
		if c.Doc == "" || c.Body == nil {
			t.Errorf("%s: missing doc or run function", c.Name)
		}
		if got, ok := r.Lookup(c.Name); !ok || got.Name != c.Name {
			t.Errorf("Lookup(%q) = %q, %v", c.Name, got.Name, ok)
		}
	}
	if _, ok := r.Lookup("no_such_case"); ok {
		t.Errorf("Lookup of an unknown name succeeded")
	}
	if got := len(r.Select(scenario.GroupAll)); got != len(r) {
		t.Errorf("Select(%q) has %d scenarios, registry %d", scenario.GroupAll, got, len(r))
	}
	if names := r.Names(); len(names) != len(seen) {
		t.Errorf("Names() has %d entries, registry %d", len(names), len(seen))
	}
}

// TestGroupFiles: each group package lists scenarios of its own group only,
// the groups run in the order their files are concatenated, and Default
// holds every listed scenario once: a line pasted into the wrong file, a
// group left out of Default or added without a place in the order fails
// here.
func TestGroupFiles(t *testing.T) {
	files := []struct {
		group string
		list  []scenario.Case
	}{
		{GroupEvidence, evidence.Cases()}, {GroupRobustness, robustness.Cases()}, {GroupHostile, hostile.Cases()}, {GroupDurability, durability.Cases()},
		{GroupChaos, chaos.Cases()}, {GroupGovernance, governance.Cases()}, {GroupNetwork, network.Cases()}, {GroupGRPC, grpc.Cases()}, {GroupProxy, grpc.ProxyCases()},
		{GroupDeploy, deploy.Cases()},
	}
	var want []string
	var all []scenario.Case
	for _, f := range files {
		if len(f.list) == 0 {
			t.Errorf("group %s lists no scenario", f.group)
		}
		for _, c := range f.list {
			if c.Group != f.group {
				t.Errorf("%s, listed in %s/group.go, says group %q", c.Name, f.group, c.Group)
			}
		}
		want = append(want, f.group)
		all = append(all, f.list...)
	}
	r := Default()
	if got := r.Groups(); !slices.Equal(got, want) {
		t.Errorf("Default's groups %v, want %v", got, want)
	}
	if got, want := r.Names(), scenario.Registry(all).Names(); !slices.Equal(got, want) {
		t.Errorf("Default holds %d scenarios, the groups list %d, or in another order", len(got), len(want))
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
				group = scenario.GroupAll
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

// TestNoServerScenarios: the committed evidence has a no-server note for
// exactly the scenarios registered NoServer (which TestCases runs with no
// rpcserver binary at all, so that each passes without one), and for the grpc cases
// whose stack lacked a capability their column needs, by the adapter's
// own init_ok (their CASE line says "STACK lacks", in the grpc or the
// proxy group), which cannot be
// known before the adapter starts.
func TestNoServerScenarios(t *testing.T) {
	lacked := map[string]bool{}
	for _, group := range []string{GroupGRPC, GroupProxy} {
		f, err := os.Open(filepath.Join("..", "..", "evidence", group, "output.txt"))
		if err != nil {
			t.Fatal(err)
		}
		lines, err := report.ReadOutput(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lines {
			for _, f := range l.Fields {
				if f.Key == "unsupported" && strings.Contains(f.Value, " lacks ") {
					lacked[l.Name] = true
				}
			}
		}
	}
	var noServer []string
	for _, c := range Default() {
		if !c.NoServer {
			continue
		}
		noServer = append(noServer, c.Name)
	}
	var noted []string
	logsOf := map[string]map[string][]byte{}
	for _, c := range Default() {
		for _, dir := range []string{"logs", filepath.Join(c.Group, "logs")} {
			if logsOf[dir] == nil {
				logs, err := report.ReadLogs(filepath.Join("..", "..", "evidence", dir))
				if err != nil {
					t.Fatal(err)
				}
				logsOf[dir] = logs
			}
			if _, ok := logsOf[dir][report.NoServerNote(c.Name)]; ok && (c.NoServer || !lacked[c.Name]) {
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
