package main

import (
	"errors"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeOutputsIgnored: every file the example commands of README.md
// and docs/*.md write in the working tree (--json, --junit, -o, --out and
// chaos's default directory) is one git ignores, so that following them
// leaves `git status` clean and the next ./build.sh not dirty.
func TestReadmeOutputsIgnored(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not found")
	}
	if err := exec.Command(git, "-C", "../..", "rev-parse", "--git-dir").Run(); err != nil {
		t.Skip("not a git checkout")
	}
	var blocks [][]string
	for _, p := range docPages(t) {
		blocks = append(blocks, regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(readFile(t, p), -1)...)
	}
	out := regexp.MustCompile(`(?:--json|--junit|--json-events|-o|--out) ([^\s"'-][^\s"']*)`)
	paths := map[string]bool{chaosDefaultOut: true}
	for _, b := range blocks {
		for _, line := range strings.Split(b[1], "\n") {
			if !strings.HasPrefix(line, "bin/rpcbench ") {
				continue
			}
			line, _, _ = strings.Cut(line, " #")
			for _, m := range out.FindAllStringSubmatch(line, -1) {
				if !strings.HasPrefix(m[1], "/") {
					paths[m[1]] = true
				}
			}
		}
	}
	if len(paths) < 4 {
		t.Fatalf("found only %v in the examples of README.md and docs/: has the pattern drifted?", paths)
	}
	for p := range paths {
		err := exec.Command(git, "-C", "../..", "check-ignore", "-q", "--no-index", p).Run()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee) && ee.ExitCode() == 1:
			t.Errorf("%s, written by an example in README.md or docs/, is not in .gitignore", p)
		case err != nil:
			t.Errorf("git check-ignore %s: %v", p, err)
		}
	}
}
