package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rpcbench/rpcbench/internal/cases"
	"github.com/rpcbench/rpcbench/internal/report"
)

// groupAll selects every scenario wherever a group is asked for.
const groupAll = "all"

// scenario is what the commands run: a cases.Case in production, a fake in
// tests. Run must behave like cases.Case.Run: never panic, clean up what
// it started, and return early when ctx is cancelled.
type scenario struct {
	Name, Group, Doc string
	Run              func(ctx context.Context, env cases.Env) report.Line
}

// registered returns the scenarios of package cases in run order.
func registered() []scenario {
	all := cases.All()
	out := make([]scenario, len(all))
	for i, c := range all {
		out[i] = scenario{Name: c.Name, Group: c.Group, Doc: c.Doc, Run: c.Run}
	}
	return out
}

// groupsOf returns the group names in the order they first appear.
func groupsOf(list []scenario) []string {
	var out []string
	for _, s := range list {
		if !slices.Contains(out, s.Group) {
			out = append(out, s.Group)
		}
	}
	return out
}

func namesOf(list []scenario) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = s.Name
	}
	return out
}

// selectGroup returns the scenarios of group g, or all of them for
// groupAll. An unknown or empty group is a usage error listing the groups.
func selectGroup(list []scenario, g string) ([]scenario, error) {
	if g == groupAll {
		return list, nil
	}
	var out []scenario
	for _, s := range list {
		if s.Group == g {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		valid := append(groupsOf(list), groupAll)
		return nil, usageErrorf("valid groups: "+strings.Join(valid, ", "), "no scenarios in group %q", g)
	}
	return out, nil
}

// selectNames returns the named scenarios in the order given, each once.
// Unknown names are a usage error listing every valid name.
func selectNames(list []scenario, names []string) ([]scenario, error) {
	var out []scenario
	var unknown []string
	for _, n := range names {
		i := slices.IndexFunc(list, func(s scenario) bool { return s.Name == n })
		switch {
		case i < 0:
			unknown = append(unknown, n)
		case !slices.ContainsFunc(out, func(s scenario) bool { return s.Name == n }):
			out = append(out, list[i])
		}
	}
	if len(unknown) > 0 {
		return nil, usageErrorf("valid scenarios:\n  "+strings.Join(namesOf(list), "\n  "),
			"unknown scenario %s", strings.Join(unknown, ", "))
	}
	return out, nil
}

// serverName is the rpcserver binary looked for next to rpcbench.
const serverName = "rpcserver"

// buildHint says how to get both binaries side by side.
const buildHint = "build both binaries with 'go build -o bin/ ./cmd/...' and run bin/rpcbench, or pass --server PATH"

// resolveServer returns the absolute path of the rpcserver binary: flag
// when set, otherwise rpcserver next to the executable that executable
// reports (os.Executable).
func resolveServer(flag string, executable func() (string, error)) (string, error) {
	path := flag
	if path == "" {
		exe, err := executable()
		if err != nil {
			return "", fmt.Errorf("cannot locate rpcserver: %w; %s", err, buildHint)
		}
		path = filepath.Join(filepath.Dir(exe), serverName)
	}
	// Absolute, so that exec does not search $PATH for a bare name.
	path, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("rpcserver path: %w", err)
	}
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return "", fmt.Errorf("rpcserver not found at %s; %s", path, buildHint)
	case fi.IsDir() || fi.Mode().Perm()&0o111 == 0:
		return "", fmt.Errorf("rpcserver at %s is not an executable file; %s", path, buildHint)
	}
	return path, nil
}
