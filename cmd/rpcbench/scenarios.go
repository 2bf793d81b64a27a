package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rpcbench/rpcbench/internal/scenario"
)

// selectGroup returns the scenarios of group g, or all of them for
// scenario.GroupAll. An unknown or empty group is a usage error listing the
// groups.
func selectGroup(r scenario.Registry, g string) (scenario.Registry, error) {
	out := r.Select(g)
	if len(out) == 0 {
		valid := append(r.Groups(), scenario.GroupAll)
		return nil, usageErrorf("valid groups: "+strings.Join(valid, ", "), "no scenarios in group %q", g)
	}
	return out, nil
}

// selectNames returns the named scenarios in the order given, each once.
// Unknown names are a usage error that suggests the near names, or lists
// every valid one when none is near.
func selectNames(r scenario.Registry, names []string) (scenario.Registry, error) {
	var out scenario.Registry
	var unknown []string
	add := func(c scenario.Case) {
		if !slices.ContainsFunc(out, func(o scenario.Case) bool { return o.Name == c.Name }) {
			out = append(out, c)
		}
	}
	for _, n := range names {
		c, ok := r.Lookup(n)
		cols := r.Scenario(n)
		switch {
		case ok:
			add(c)
		case len(cols) > 0:
			// A judging scenario's own name runs it in every column.
			for _, c := range cols {
				add(c)
			}
		default:
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		msg := fmt.Sprintf("unknown scenario %s", strings.Join(unknown, ", "))
		if s := suggest(r, unknown[0]); len(s) > 0 {
			msg += fmt.Sprintf("; did you mean %s?", strings.Join(s[:min(len(s), 3)], " or "))
		}
		if strings.ContainsAny(strings.Join(unknown, ""), `.*+?^$[]()|\`) {
			msg += " (to select by pattern, use --run REGEX)"
		}
		return nil, usageErrorf(listHint, "%s", msg)
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

// plural is n and noun, with an s unless n is 1: "1 scenario", "2 scenarios".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// serverFor is resolveServer for the scenarios of r: "" and no error
// when none of them starts a server or drives an adapter, so that those
// run without one. The adapters are looked for beside the server.
func serverFor(r scenario.Registry, flag string, executable func() (string, error)) (string, error) {
	if flag == "" && !slices.ContainsFunc(r, func(c scenario.Case) bool {
		_, adapter := c.Adapter()
		return !c.NoServer || adapter
	}) {
		return "", nil
	}
	return resolveServer(flag, executable)
}
