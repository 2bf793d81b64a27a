package main

import (
	"errors"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rpcbench/rpcbench/internal/cases"
)

// TestReadmeOutputsIgnored: every file the README's example commands
// write in the working tree (--json, --junit, -o, --out and chaos's
// default directory) is one git ignores, so that following the README
// leaves `git status` clean and the next ./build.sh not dirty.
func TestReadmeOutputsIgnored(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not found")
	}
	if err := exec.Command(git, "-C", "../..", "rev-parse", "--git-dir").Run(); err != nil {
		t.Skip("not a git checkout")
	}
	text := readFile(t, readme)
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(text, -1)
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
		t.Fatalf("found only %v in the README's examples: has the pattern drifted?", paths)
	}
	for p := range paths {
		err := exec.Command(git, "-C", "../..", "check-ignore", "-q", "--no-index", p).Run()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee) && ee.ExitCode() == 1:
			t.Errorf("%s, written by a README example, is not in .gitignore", p)
		case err != nil:
			t.Errorf("git check-ignore %s: %v", p, err)
		}
	}
}

// TestReadmeCounts: the numbers of scenarios the README states are the
// registry's.
func TestReadmeCounts(t *testing.T) {
	text := strings.Join(strings.Fields(readFile(t, readme)), " ")
	r := cases.Default()
	want := map[string]int{
		"There are %d scenarios":                      len(r),
		"in %s groups":                                len(r.Groups()),
		"the evidence group's %d":                     len(r.Select(cases.GroupEvidence)),
		"runs the %d scenarios of the evidence group": len(r.Select(cases.GroupEvidence)),
		"the %d durability scenarios":                 len(r.Select(cases.GroupDurability)),
		"the %d governance scenarios":                 len(r.Select(cases.GroupGovernance)),
		"the %d network scenarios":                    len(r.Select(cases.GroupNetwork)),
	}
	words := []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"}
	for phrase, n := range want {
		pattern := regexp.QuoteMeta(phrase)
		pattern = strings.Replace(pattern, "%d", `(\d+)`, 1)
		pattern = strings.Replace(pattern, "%s", `(\w+)`, 1)
		m := regexp.MustCompile(pattern).FindStringSubmatch(text)
		if m == nil {
			t.Errorf("README.md does not say %q", phrase)
			continue
		}
		if got := m[1]; got != strconv.Itoa(n) && (n >= len(words) || got != words[n]) {
			t.Errorf("README.md says %q with %s, the registry has %d", phrase, got, n)
		}
	}
}
