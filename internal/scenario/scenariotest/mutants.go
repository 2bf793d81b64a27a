package scenariotest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/cut"
	"github.com/rpcbench/rpcbench/internal/nethost"
	"github.com/rpcbench/rpcbench/internal/scenario"
)

// A Mutant is one realistic bug, put into one source file by replacing
// one snippet, that the named scenarios exist to catch.
type Mutant struct {
	Name string
	// Bug says what the mutant models.
	Bug string
	// File is relative to the module root; Old must occur in it exactly
	// once, so that a refactor that moves the code fails this test
	// instead of silently testing nothing.
	File     string
	Old, New string
	// Catch maps each scenario that must FAIL to a text its CASE line
	// must contain: the check that catches the bug, not some other.
	Catch map[string]string
}

// Mutants builds rpcserver and rpcbench once as they are and once per
// mutant, with the mutant's file replaced through go build -overlay, and
// runs the mutant's scenarios, each one of r, with each build: every one
// must PASS unmutated and FAIL mutated, on the check named. It takes a
// few minutes, so it runs only when asked (RPCBENCH_MUTANTS=1). What
// needs no build runs always: each mutant's snippet occurs once in its
// file, and each scenario it names exists, so that a refactor that moves
// the code fails every go test, not only the run that asks for mutants.
func Mutants(t *testing.T, r scenario.Registry, mutants []Mutant) {
	t.Run("snippets", func(t *testing.T) { checkMutants(t, r, mutants) })
	if os.Getenv("RPCBENCH_MUTANTS") != "1" {
		t.Skip("builds the binaries once per mutant; run with RPCBENCH_MUTANTS=1 go test ./internal/cases/... -run Mutants -v")
	}
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	// Scenarios on test hosts need root: without it their mutants are
	// left out, unless RPCBENCH_REQUIRE_NETNS=1.
	netErr := NetnsErr // asked once, in Main
	if netErr != nil && nethost.Required() {
		t.Fatalf("%v (%s=1)", netErr, nethost.EnvRequire)
	}
	// Scenarios that drive a client adapter need its binary: without it
	// their mutants are left out, unless RPCBENCH_REQUIRE_ADAPTERS=1.
	for _, m := range mutants {
		for name := range m.Catch {
			c, _ := r.Lookup(name)
			if why := AdapterMissing(c); why != "" && cut.Required() {
				t.Fatalf("%s; %s=1 demands it", why, cut.EnvRequire)
			}
		}
	}
	runnable := func(m Mutant) bool {
		for name := range m.Catch {
			c, _ := r.Lookup(name)
			if c.Requires(scenario.NeedsNetwork) && netErr != nil || AdapterMissing(c) != "" {
				return false
			}
		}
		return true
	}
	var all []string
	for _, m := range mutants {
		if !runnable(m) {
			t.Logf("leaving out mutant %s: no test hosts (%v) or no adapter (%s)", m.Name, netErr, AdapterSkip)
			continue
		}
		for name := range m.Catch {
			if _, ok := r.Lookup(name); !ok {
				t.Fatalf("mutant %s: no scenario %q", m.Name, name)
			}
			if !slices.Contains(all, name) {
				all = append(all, name)
			}
		}
	}
	slices.Sort(all)

	t.Run("unmutated", func(t *testing.T) {
		bin := buildWith(t, root, nil)
		got := runScenarios(t, bin, all)
		for _, name := range all {
			// A stack's pinned violation is a FINDING: the scenario agrees
			// with its pins, as a PASS does.
			if v := got[name]; !strings.HasPrefix(v, "CASE "+name+" PASS") && !strings.HasPrefix(v, "CASE "+name+" FINDING") {
				t.Errorf("%s must PASS (or be the FINDING its pins say) unmutated; got %q", name, v)
			}
		}
	})
	if t.Failed() {
		t.Fatal("the scenarios fail unmutated: a mutant's FAIL would prove nothing")
	}
	for _, m := range mutants {
		t.Run(m.Name, func(t *testing.T) {
			if !runnable(m) {
				t.Skip("no test hosts or no adapter")
			}
			src, err := os.ReadFile(filepath.Join(root, m.File))
			if err != nil {
				t.Fatal(err)
			}
			if n := bytes.Count(src, []byte(m.Old)); n != 1 {
				t.Fatalf("%s holds the snippet %d times, want once: update the mutant to the code\nsnippet:\n%s", m.File, n, m.Old)
			}
			mutated := filepath.Join(t.TempDir(), filepath.Base(m.File))
			if err := os.WriteFile(mutated, bytes.Replace(src, []byte(m.Old), []byte(m.New), 1), 0o644); err != nil {
				t.Fatal(err)
			}
			bin := buildWith(t, root, map[string]string{filepath.Join(root, m.File): mutated})
			names := slices.Sorted(maps.Keys(m.Catch))
			got := runScenarios(t, bin, names)
			for _, name := range names {
				v, want := got[name], m.Catch[name]
				if !strings.HasPrefix(v, "CASE "+name+" FAIL") || !strings.Contains(v, want) {
					t.Errorf("bug not caught: %s\n%s must FAIL with %q; got %q", m.Bug, name, want, v)
					continue
				}
				t.Logf("caught by %s (%q):\n%s", name, want, v)
			}
		})
	}
}

// buildWith builds rpcbench and rpcserver into a temporary directory,
// each file in replace (absolute path) read from the file it maps to, and
// returns the rpcbench path.
func buildWith(t *testing.T, root string, replace map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	overlay := filepath.Join(dir, "overlay.json")
	b, err := json.Marshal(struct{ Replace map[string]string }{replace})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(overlay, b, 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cmd := exec.Command("go", "build", "-overlay", overlay, "-o", dir+string(filepath.Separator), "./cmd/rpcbench", "./cmd/rpcserver")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Logf("built in %v", time.Since(start).Round(time.Millisecond))
	return filepath.Join(dir, "rpcbench")
}

// runScenarios runs the named scenarios with rpcbench, writing no
// evidence, and returns each one's CASE line by name. A CASE line is
// "CASE <name> <verdict> <fields>..." (see internal/report).
func runScenarios(t *testing.T, bin string, names []string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, bin, append(append([]string{"run"}, names...), "--evidence", "", "--color", "never")...)
	cmd.WaitDelay = 5 * time.Second
	// The adapters are not rebuilt: they are not the code mutated.
	for _, st := range cut.Stacks() {
		if a := Env.Adapters[st.Name].Client; len(a) > 0 {
			if cmd.Env == nil {
				cmd.Env = os.Environ()
			}
			cmd.Env = append(cmd.Env, st.Env+"="+a[0])
		}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	// Exit 1 means a scenario failed, which a mutant is expected to do;
	// anything else is a failure to run.
	var ee *exec.ExitError
	if err != nil && (!errors.As(err, &ee) || ee.ExitCode() != 1) {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", cmd, err, &stdout, &stderr)
	}
	t.Logf("ran %s in %v", strings.Join(names, " "), time.Since(start).Round(time.Millisecond))
	got := map[string]string{}
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 3 && f[0] == "CASE" {
			got[f[1]] = sc.Text()
		}
	}
	for _, name := range names {
		if _, ok := got[name]; !ok {
			t.Errorf("rpcbench printed no CASE line for %s\nstdout:\n%s\nstderr:\n%s", name, &stdout, &stderr)
		}
	}
	return got
}

// checkMutants fails unless each mutant's Old occurs exactly once in its
// File and each scenario in its Catch is one of r.
func checkMutants(t *testing.T, r scenario.Registry, mutants []Mutant) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mutants {
		src, err := os.ReadFile(filepath.Join(root, m.File))
		if err != nil {
			t.Errorf("mutant %s: %v", m.Name, err)
			continue
		}
		if n := bytes.Count(src, []byte(m.Old)); n != 1 {
			t.Errorf("mutant %s: %s holds its snippet %d times, want once: update the mutant to the code\nsnippet:\n%s", m.Name, m.File, n, m.Old)
		}
		for name := range m.Catch {
			if _, ok := r.Lookup(name); !ok {
				t.Errorf("mutant %s: no scenario %q", m.Name, name)
			}
		}
	}
}
